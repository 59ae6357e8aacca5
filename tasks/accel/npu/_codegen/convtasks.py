"""Convolutions (NHWC, stride 1, valid padding): conv2d, depthwise conv, and the conv block.

Both gather their windows with strided DMA instead of materializing im2col:

- **conv2d** is a sum over kernel rows of matrix products. For output row `oh` and kernel row
  `kh`, the window rows of the output pixels `ow` are `x[oh + kh, ow : ow + KW, :]`, i.e.
  KW * CI contiguous elements every CI elements: a strided (overlapping) matrix
  (OW, KW * CI) times the weight slice w[kh] (KW * CI, CO). So it is a `Gemm` with KH k
  segments, batched over the output rows.
- **depthwise conv** has no reduction across channels: each tap is a vector multiply-add of a
  shifted input row with the tap's weight vector. The DMA lands input row pixels CPV words
  apart, so the pixel `ow + kw` of a loaded row is an aligned vector.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .asm import Asm
from .matmul import Gemm, Tile, baseline_gemm, expert_gemm, expert_layout, flat_tile

OUT_SHAPE = (".equ OH, H - KH + 1", ".equ OW, W - KW + 1")


def conv_gemm(
    ci: str = "CI",
    co: str = "CO",
    w: str = "W",
    oh: str = "OH",
    ow: str = "OW",
    name: str = "G",
    **extra: Any,
) -> Gemm:
    """The convolution as k-segmented products, one per output row (bases in a4, a5, a6)."""
    return Gemm(
        m=ow,
        n=co,
        k=f"KW * {ci}",
        lda=ci,
        ldb=co,
        ldc=co,
        batch=oh,
        a_step=f"{w} * {ci}",
        c_step=f"{ow} * {co}",
        kgroups="KH",
        a_kstep=f"{w} * {ci}",
        b_kstep=f"KW * {ci} * {co}",
        name=name,
        **extra,
    )


def baseline_conv(a: Asm, g: Gemm, in_row: str, out_row: str) -> None:
    """The baseline product per output row (a branch loop: the product nests four loops)."""
    a(f"li r31, {g.batch}")
    top = a.label("row")
    a.place(top)
    baseline_gemm(a, g)
    a(f"addai a4, a4, {in_row}", f"addai a6, a6, {out_row}")
    a("addi r31, r31, -1", f"bne r31, r0, {top}")


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
        a("la a4, x", "la a5, w", "la a6, y")
        baseline_conv(a, g, "W * CI * itemsize", "OW * CO * itemsize")

    def fast(a: Asm) -> None:
        a("la a4, x", "la a5, w", "la a6, y")
        expert_layout(a, g)
        expert_gemm(a, g)

    return (
        _program(title, "baseline: per output row, windows by strided DMA, tile by tile", base),
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
            a("li r7, WV", f"li r9, IN_{cur}")
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


def relu_tile(a: Asm, tile: Tile) -> None:
    """ReLU on the whole tile, in place."""
    flat_tile(a, tile.vsram, lambda v: a(f"vmaxs {v}, {v}, f0"))


def conv_block() -> tuple[str, str]:
    """Y = relu(conv(relu(conv(x, w1) + b1), w2) + b2), through the scratch h."""
    title = "y = relu(conv(relu(conv(x, w1) + b1), w2) + b2); scratch h (HM, WM, CM)"
    first = conv_gemm(
        ci="CI",
        co="CM",
        w="W",
        oh="HM",
        ow="WM",
        name="A",
        bias=True,
        csz="4",
        epilogue=relu_tile,
    )
    second = conv_gemm(
        ci="CM",
        co="CO",
        w="WM",
        oh="OH",
        ow="OW",
        name="B",
        bias=True,
        asz="4",
        epilogue=relu_tile,
    )
    shapes = (
        ("HM", "H - KH + 1"),
        ("WM", "W - KW + 1"),
        ("OH", "HM - KH + 1"),
        ("OW", "WM - KW + 1"),
    )

    def program(what: str, emit: Callable[[Asm, Gemm, str, str], None]) -> str:
        a = Asm(title, what)
        for name, value in shapes:
            a.equ(name, value)
        a.comment("h = relu(conv(x, w1) + b1)")
        a("la a4, x", "la a5, w1", "la a6, h", "la a7, b1")
        emit(a, first, "W * CI * itemsize", "WM * CM * 4")
        a.comment("y = relu(conv(h, w2) + b2)")
        a("la a4, h", "la a5, w2", "la a6, y", "la a7, b2")
        emit(a, second, "WM * CM * 4", "OW * CO * itemsize")
        return a.text()

    def fast(a: Asm, g: Gemm, in_row: str, out_row: str) -> None:
        expert_layout(a, g)
        expert_gemm(a, g)

    return (
        program("baseline: two convolutions, each per output row and tile by tile", baseline_conv),
        program("expert: two convolutions, double-buffered window panels, mmb", fast),
    )


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {
    "conv_block": conv_block,
    "conv2d": conv2d,
    "depthwise_conv": depthwise,
}
