"""Convolutions (NHWC, stride 1, valid padding): conv2d, depthwise conv, and the conv block.

Both gather their windows with strided DMA instead of materializing im2col:

- **conv2d** is a sum over kernel rows of matrix products. For output row `oh` and kernel row
  `kh`, the window rows of the output pixels `ow` are `x[oh + kh, ow : ow + KW, :]`, i.e.
  KW * CI contiguous elements every CI elements: a strided (overlapping) matrix (OW, KW * CI) times the weight slice w[kh] (KW * CI, CO). So it is a `Gemm` with KH k
  segments, batched over the output rows.
- **depthwise conv** has no reduction across channels: each tap is a vector multiply-add of a
  shifted input row with the tap's weight vector. The DMA lands input row pixels CPV words
  apart, so the pixel `ow + kw` of a loaded row is an aligned vector.
"""

from __future__ import annotations

from collections.abc import Callable

from .asm import Asm
from .matmul import Gemm, baseline_gemm, expert_gemm, expert_layout

OUT_SHAPE = (".equ OH, H - KH + 1", ".equ OW, W - KW + 1")


def conv_gemm(
    x: str = "x", y: str = "y", ci: str = "CI", co: str = "CO", name: str = "G", **extra: str
) -> Gemm:
    """One output row of the convolution as a k-segmented product (bases in a4, a5, a6)."""
    return Gemm(
        m="OW",
        n=co,
        k=f"KW * {ci}",
        lda=ci,
        ldb=co,
        ldc=co,
        batch="OH",
        a_step=f"W * {ci}",
        c_step=f"OW * {co}",
        kgroups="KH",
        a_kstep=f"W * {ci}",
        b_kstep=f"KW * {ci} * {co}",
        name=name,
        **extra,  # type: ignore[arg-type]
    )


def _program(title: str, what: str, body: Callable[[Asm], None]) -> str:
    a = Asm(title, what)
    for line in OUT_SHAPE:
        name, value = line.removeprefix(".equ ").split(",", 1)
        a.equ(name, value.strip())
    body(a)
    return a.text()


def conv2d() -> tuple[str, str]:
    """Y (OH, OW, CO) = conv(x (H, W, CI), w (KH, KW, CI, CO)), stride 1, no padding."""
    title = "y = conv2d(x, w) for x (H, W, CI), w (KH, KW, CI, CO), y (OH, OW, CO)"
    g = conv_gemm()

    def base(a: Asm) -> None:
        a("la a4, x", "la a5, w", "la a6, y", "li r31, OH")
        a.comment("a branch loop over the output rows: the product nests four hardware loops")
        top = a.label("row")
        a.place(top)
        baseline_gemm(a, g)
        a("addai a4, a4, W * CI * itemsize", "addai a6, a6, OW * CO * itemsize")
        a("addi r31, r31, -1", f"bne r31, r0, {top}")

    def fast(a: Asm) -> None:
        a("la a4, x", "la a5, w", "la a6, y")
        expert_layout(a, g)
        expert_gemm(a, g)

    return (
        _program(title, "baseline: per output row, window tiles by strided DMA, tile by tile", base),
        _program(title, "expert: per output row, double-buffered window panels, mmb", fast),
    )


def _dw_common(a: Asm) -> None:
    a.equ("CPV", "cdiv(C, VLEN) * VLEN")
    a.equ("WV", "0")
    a.equ("BUFS", "KH * KW * CPV")
    a("setvli VLEN", "li r1, 1", "li r2, C", "li r3, C * itemsize", "li r4, CPV")
    a.comment("the KH * KW tap weight vectors, one per SRAM row, loaded once")
    a("li r5, KH * KW", "la a4, w", "dldv [r0 + WV], [a4], r5, r2, r3, r4, 7", "dwait 7")
    a("la a8, x", "la a12, y", "li r6, OW")


def _zero(a: Asm, start: str, words: str) -> None:
    a(f"li r11, {start}")
    with a.loop(f"({words}) // VLEN"):
        a("vbcast [r11], f0", "addi r11, r11, VLEN")


def _branch_rows(a: Asm, body: Callable[[Asm, int], None], count: str = "OH") -> None:
    """Run body(step) once per output row, alternating step 0 and 1 (a branch loop)."""
    top, done = a.label("rows"), a.label("rows_done")
    a(f"li r31, {count}")
    a.place(top)
    body(a, 0)
    a("addi r31, r31, -1", f"beq r31, r0, {done}")
    body(a, 1)
    a("addi r31, r31, -1", f"bne r31, r0, {top}")
    a.place(done)


def depthwise() -> tuple[str, str]:
    """Y (OH, OW, C) = depthwise conv of x (H, W, C) with w (KH, KW, C), stride 1."""
    title = "y = depthwise_conv(x, w) for x (H, W, C), w (KH, KW, C), y (OH, OW, C)"

    def base(a: Asm) -> None:
        _dw_common(a)
        a.equ("IN", "BUFS")
        a.equ("OUT", "IN + OW * CPV")
        a.equ("TMP", "OUT + OW * CPV")

        def row(a: Asm, step: int) -> None:
            _zero(a, "OUT", "OW * CPV")
            a("mova a10, a8", "li r7, WV")
            with a.loop("KH"):
                a("mova a11, a10")
                with a.loop("KW"):
                    a.comment("gather the tap's window: OW pixels, one per SRAM row")
                    a("dldv [r0 + IN], [a11], r6, r2, r3, r4, 0", "dwait 0")
                    a("li r11, IN", "li r12, OUT")
                    with a.loop("OW"):
                        a("mov r13, r7")
                        with a.loop("CPV // VLEN"):
                            a("vmul [r0 + TMP], [r11], [r13]", "vadd [r12], [r12], [r0 + TMP]")
                            a("addi r11, r11, VLEN", "addi r12, r12, VLEN", "addi r13, r13, VLEN")
                    a("addai a11, a11, C * itemsize", "addi r7, r7, CPV")
                a("addai a10, a10, W * C * itemsize")
            a("dstv [a12], [r0 + OUT], r6, r2, r3, r4, 1", "dwait 1")
            a("addai a8, a8, W * C * itemsize", "addai a12, a12, OW * C * itemsize")

        _branch_rows(a, row)

    def fast(a: Asm) -> None:
        _dw_common(a)
        for side in (0, 1):
            a.equ(f"IN_{side}", f"BUFS + {side} * (KH * W + OW) * CPV")
            a.equ(f"OUT_{side}", f"IN_{side} + KH * W * CPV")
        a("li r8, KH * W")
        a.comment("the KH input rows of the first output row, one pixel per SRAM row")
        a("dldv [r0 + IN_0], [a8], r8, r2, r3, r4, 0", "addai a8, a8, W * C * itemsize")

        def row(a: Asm, step: int) -> None:
            cur, nxt = step, 1 - step
            skip = a.label("no_prefetch")
            a(f"beq r31, r1, {skip}")
            a(f"dldv [r0 + IN_{nxt}], [a8], r8, r2, r3, r4, {nxt}")
            a("addai a8, a8, W * C * itemsize")
            a.place(skip)
            a(f"dwait {cur}", f"dwait {2 + cur}")
            _zero(a, f"OUT_{cur}", "OW * CPV")
            a.comment("tap (kh, kw), strip s: out[ow] += in[kh * W + ow + kw] * w[kh, kw] (vfma)")
            a(f"li r7, WV", f"li r9, IN_{cur}")
            with a.loop("KH"):
                a("mov r10, r9")
                with a.loop("KW"):
                    a(f"li r14, OUT_{cur}", "mov r15, r10", "mov r13, r7")
                    with a.loop("CPV // VLEN"):
                        a("mov r11, r15", "mov r12, r14")
                        with a.loop("OW // 2"):
                            a("vfma [r12], [r11], [r13]", "vfma [r12 + CPV], [r11 + CPV], [r13]")
                            a("addi r11, r11, 2 * CPV", "addi r12, r12, 2 * CPV")
                        with a.when("OW % 2"):
                            a("vfma [r12], [r11], [r13]")
                        a("addi r13, r13, VLEN", "addi r14, r14, VLEN", "addi r15, r15, VLEN")
                    a("addi r7, r7, CPV", "addi r10, r10, CPV")
                a("addi r9, r9, W * CPV")
            a(f"dstv [a12], [r0 + OUT_{cur}], r6, r2, r3, r4, {2 + cur}")
            a("addai a12, a12, OW * C * itemsize")

        _branch_rows(a, row)
        a("dfence")

    def program(what: str, body: Callable[[Asm], None]) -> str:
        return _program(title, what, body)

    return (
        program("baseline: per output row and tap, gather, wait, multiply, add", base),
        program("expert: input rows double-buffered, vfma over shifted pixels", fast),
    )


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {
    "conv2d": conv2d,
    "depthwise_conv": depthwise,
}
