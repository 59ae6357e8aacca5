"""Tiled matrix products on the systolic array: GEMM, linear layers, batched products, GEMV.

`Gemm` describes C (m, n) = A (m, k) @ op(B) (+ bias) with op(B) = B (k, n) or, for weights
stored (n, k), B^T. The caller puts the base addresses of A, B, C (and bias) in a4, a5, a6
(and a7), so one description serves plain, batched and per-head products.

- **baseline**: for every output tile, for every k tile: load the A tile, load the B tile,
  wait, multiply; then store the tile and wait. Every transfer is exposed.
- **expert**: column panels of B (all k tiles of one n tile) and row panels of A stay in SRAM;
  both are double-buffered (the next panel loads while the current one multiplies, `mmb` chains
  the k tiles in one instruction), the bias enters as a replicated tile through `mld`, and
  output tiles are double-buffered so stores overlap the next product.

Partial tiles: loads pad columns with zeros; rows past the edge keep earlier (finite) data,
which only reaches output rows and columns that are never stored. Every tile buffer is zeroed
once (`mzero`/`mst`, `dcpy`) so nothing is read before it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from .asm import Asm


@dataclass(frozen=True)
class Tile:
    """Where an epilogue finds the output tile: registers set when it runs."""

    vsram: str
    """VSRAM address of the tile (MLEN x MLEN words, row-major)."""
    hbm: str
    """HBM address (an address register) the tile is stored to."""
    rows: str
    cols: str
    """Valid rows and columns of the tile."""
    scratch: str
    """A free VSRAM tile (symbol) the epilogue may use."""
    temp: str
    """An integer register the epilogue may use (besides r29, r30)."""


Epilogue = Callable[[Asm, Tile], None]
"""Vector code run on an output tile in VSRAM before it is stored (r29..r30, a3 are free)."""


@dataclass(frozen=True)
class Gemm:
    """One matrix product; sizes and row strides (in elements) are expressions."""

    m: str
    n: str
    k: str
    lda: str
    ldb: str
    ldc: str
    trans_b: bool = False
    bias: bool = False
    epilogue: Epilogue | None = None
    name: str = "G"
    """Prefix of this product's SRAM symbols (several products share one program)."""
    batch: str = "1"
    """Independent products, one after the other (the expert streams across them)."""
    a_step: str = "0"
    b_step: str = "0"
    c_step: str = "0"
    """Elements from one product's A, B, C to the next one's."""
    asz: str = "itemsize"
    bsz: str = "itemsize"
    csz: str = "itemsize"
    """Bytes per element of A, B (and bias), C: a float32 scratch operand in a bf16 task."""
    kgroups: str = "1"
    """The k dimension is `kgroups` segments of `k` each (conv taps: one per kernel row)."""
    a_kstep: str = "0"
    b_kstep: str = "0"
    """Elements from one k segment's A, B to the next one's (kgroups > 1 uses a1, a2)."""


def _groups(a: Asm, g: Gemm) -> AbstractContextManager[None]:
    """The loop over k segments (none for a plain product)."""
    return a.loop(g.kgroups) if g.kgroups != "1" else nullcontext()


def _equs(a: Asm, g: Gemm) -> None:
    p = g.name
    a.equ(f"{p}_KT", f"cdiv({g.k}, MLEN)")
    a.equ(f"{p}_MT", f"cdiv({g.m}, MLEN)")
    a.equ(f"{p}_NT", f"cdiv({g.n}, MLEN)")
    a.equ(f"{p}_KP", f"({g.kgroups}) * {p}_KT")


def _constants(a: Asm, g: Gemm) -> None:
    a(
        "li r1, MLEN",
        f"li r2, ({g.lda}) * {g.asz}",
        f"li r3, ({g.ldb}) * {g.bsz}",
        f"li r4, ({g.ldc}) * {g.csz}",
        "li r5, MLEN",
    )


def zero_tiles(a: Asm, vsram: str, tiles: str, msram: str | None = None) -> None:
    """Zero `tiles` VSRAM tiles from `vsram` (matrix unit), then copy them to MSRAM `msram`."""
    a("mzero acc3", f"li r9, {vsram}")
    with a.loop(tiles):
        a("mst [r9], acc3", "addi r9, r9, MLEN * MLEN")
    if msram is not None:
        a(f"li r9, {vsram}", f"li r10, {msram}", f"li r11, ({tiles}) * MLEN * MLEN")
        a("dcpy [r10], [r9], r11, 7", "dwait 7")


def baseline_gemm(a: Asm, g: Gemm) -> None:
    """Emit the baseline product (SRAM: VSRAM tiles at {p}_AT, {p}_CT, {p}_BI; MSRAM {p}_BT)."""
    p = g.name
    _equs(a, g)
    a.equ(f"{p}_AT", "0")
    a.equ(f"{p}_CT", "MLEN * MLEN")
    a.equ(f"{p}_BI", "2 * MLEN * MLEN")
    a.equ(f"{p}_BT", "0")
    a.comment("zero the tile buffers once: partial tiles never read unwritten words")
    zero_tiles(a, f"{p}_AT", "1", f"{p}_BT")
    _constants(a, g)
    a(f"li r6, {g.m}", "mova a8, a4", "mova a10, a6")
    with a.loop(f"{p}_MT"):
        a("min r7, r6, r1", f"li r8, {g.n}", "mova a9, a5", "mova a11, a10")
        if g.bias:
            a("mova a15, a7")
        with a.loop(f"{p}_NT"):
            a("min r9, r8, r1")
            if g.bias:
                a.comment("bias row repeated MLEN times (HBM row stride 0) starts the sum")
                a(f"dldv [r0 + {p}_BI], [a15], r1, r9, r0, r5, 0", "dwait 0")
                a(f"mld acc0, [r0 + {p}_BI]")
            else:
                a("mzero acc0")
            grouped = g.kgroups != "1"
            if grouped:
                a("mova a1, a8", "mova a2, a9")
            with _groups(a, g):
                a(f"li r10, {g.k}")
                a("mova a12, a1", "mova a13, a2") if grouped else a("mova a12, a8", "mova a13, a9")
                with a.loop(f"{p}_KT"):
                    a("min r11, r10, r1", f"dldv [r0 + {p}_AT], [a12], r7, r11, r2, r5, 0")
                    if g.trans_b:
                        a(f"dldm [r0 + {p}_BT], [a13], r9, r11, r3, r5, 0", "dwait 0")
                        a(f"mmt acc0, [r0 + {p}_AT], [r0 + {p}_BT]")
                        a(f"addai a13, a13, MLEN * {g.bsz}")
                    else:
                        a(f"dldm [r0 + {p}_BT], [a13], r11, r9, r3, r5, 0", "dwait 0")
                        a(f"mm acc0, [r0 + {p}_AT], [r0 + {p}_BT]")
                        a(f"addai a13, a13, MLEN * ({g.ldb}) * {g.bsz}")
                    a(f"addai a12, a12, MLEN * {g.asz}", "sub r10, r10, r11")
                if grouped:
                    a(f"addai a1, a1, ({g.a_kstep}) * {g.asz}")
                    a(f"addai a2, a2, ({g.b_kstep}) * {g.bsz}")
            a(f"mst [r0 + {p}_CT], acc0")
            if g.epilogue is not None:
                a(f"li r29, {p}_CT")
                g.epilogue(a, Tile("r29", "a11", "r7", "r9", f"{p}_BI + MLEN * MLEN", "r12"))
            a(f"dstv [a11], [r0 + {p}_CT], r7, r9, r4, r5, 1", "dwait 1")
            a(f"addai a11, a11, MLEN * {g.csz}")
            if g.trans_b:
                a(f"addai a9, a9, MLEN * ({g.ldb}) * {g.bsz}")
            else:
                a(f"addai a9, a9, MLEN * {g.bsz}")
            if g.bias:
                a("addai a15, a15, MLEN * itemsize")
            a("sub r8, r8, r9")
        a(
            f"addai a8, a8, MLEN * ({g.lda}) * {g.asz}",
            f"addai a10, a10, MLEN * ({g.ldc}) * {g.csz}",
        )
        a("sub r6, r6, r7")


def expert_layout(a: Asm, g: Gemm, vsram_base: str = "0", msram_base: str = "0") -> None:
    """SRAM symbols of the expert product: A panels, C tiles and bias tiles, B panels (two each)."""
    p = g.name
    _equs(a, g)
    a.equ(f"{p}_AP0", vsram_base)
    a.equ(f"{p}_AP1", f"{p}_AP0 + {p}_KP * MLEN * MLEN")
    a.equ(f"{p}_CT0", f"{p}_AP1 + {p}_KP * MLEN * MLEN")
    a.equ(f"{p}_CT1", f"{p}_CT0 + MLEN * MLEN")
    a.equ(f"{p}_BI0", f"{p}_CT1 + MLEN * MLEN")
    a.equ(f"{p}_BI1", f"{p}_BI0 + MLEN * MLEN")
    a.equ(f"{p}_VEND", f"{p}_BI1 + MLEN * MLEN")
    a.equ(f"{p}_BP0", msram_base)
    a.equ(f"{p}_BP1", f"{p}_BP0 + {p}_KP * MLEN * MLEN")
    a.equ(f"{p}_MEND", f"{p}_BP1 + {p}_KP * MLEN * MLEN")


TA, TB, TC = 4, 5, 6


def _load_a(a: Asm, g: Gemm, into: str) -> None:
    """Issue the loads of the next A row panel into buffer register `into`; advance the stream."""
    wrap, same = a.label("a_stream"), a.label("a_batch")
    a("min r13, r12, r1", f"mov r11, {into}")
    grouped = g.kgroups != "1"
    if grouped:
        a("mova a1, a8")
    with _groups(a, g):
        a(f"li r10, {g.k}", "mova a12, a1" if grouped else "mova a12, a8")
        with a.loop(f"{g.name}_KT"):
            a("min r9, r10, r1", f"dldv [r11], [a12], r13, r9, r2, r5, {TA}")
            a("addi r11, r11, MLEN * MLEN", f"addai a12, a12, MLEN * {g.asz}")
            a("sub r10, r10, r9")
        if grouped:
            a(f"addai a1, a1, ({g.a_kstep}) * {g.asz}")
    a("sub r12, r12, r13", f"addai a8, a8, MLEN * ({g.lda}) * {g.asz}")
    a.comment("after the last row panel the stream starts again at the first (of the next")
    a.comment("product once every column panel had its sweep)")
    a(f"bne r12, r0, {wrap}", f"li r12, {g.m}", "addi r19, r19, -1", f"bne r19, r0, {same}")
    a(f"li r19, {g.name}_NT", f"addai a4, a4, ({g.a_step}) * {g.asz}")
    a.place(same)
    a("mova a8, a4")
    a.place(wrap)


def _load_b(a: Asm, g: Gemm, into: str, bias_into: str) -> None:
    """Issue the loads of the next B column panel (and bias tile); advance the stream."""
    wrap = a.label("b_stream")
    a("min r15, r14, r1", f"mov r11, {into}")
    grouped = g.kgroups != "1"
    if grouped:
        a("mova a2, a9")
    with _groups(a, g):
        a(f"li r10, {g.k}", "mova a13, a2" if grouped else "mova a13, a9")
        with a.loop(f"{g.name}_KT"):
            a("min r9, r10, r1")
            if g.trans_b:
                a(f"dldm [r11], [a13], r15, r9, r3, r5, {TB}", f"addai a13, a13, MLEN * {g.bsz}")
            else:
                a(
                    f"dldm [r11], [a13], r9, r15, r3, r5, {TB}",
                    f"addai a13, a13, MLEN * ({g.ldb}) * {g.bsz}",
                )
            a("addi r11, r11, MLEN * MLEN", "sub r10, r10, r9")
        if grouped:
            a(f"addai a2, a2, ({g.b_kstep}) * {g.bsz}")
    if g.bias:
        a(f"dldv [{bias_into}], [a11], r1, r15, r0, r5, {TB}", "addai a11, a11, MLEN * itemsize")
    a("sub r14, r14, r15")
    if g.trans_b:
        a(f"addai a9, a9, MLEN * ({g.ldb}) * {g.bsz}")
    else:
        a(f"addai a9, a9, MLEN * {g.bsz}")
    a(f"bne r14, r0, {wrap}", f"li r14, {g.n}", f"addai a5, a5, ({g.b_step}) * {g.bsz}")
    a("mova a9, a5", "mova a11, a7")
    a.place(wrap)


def expert_gemm(a: Asm, g: Gemm) -> None:
    """Emit the expert product (call `expert_layout` first)."""
    p = g.name
    refill = f"{g.k} % MLEN" if not g.trans_b else f"{g.n} % MLEN"
    with a.when(f"{g.m} % MLEN or {refill}"):
        a.comment("partial tiles: zero the panels once so no word is read before written")
        zero_tiles(a, f"{p}_AP0", f"2 * {p}_KP")
    with a.when(refill):
        a(f"li r9, {p}_AP0", f"li r10, {p}_BP0", f"li r11, 2 * {p}_KP * MLEN * MLEN")
        a("dcpy [r10], [r9], r11, 7", "dwait 7")
    _constants(a, g)
    a(f"li r20, {p}_AP0", f"li r21, {p}_AP1", f"li r22, {p}_BP0", f"li r23, {p}_BP1")
    a(f"li r24, {p}_CT0", f"li r25, {p}_CT1", f"li r26, {p}_BI0", f"li r27, {p}_BI1")
    a("mova a8, a4", f"li r12, {g.m}", "mova a9, a5", f"li r14, {g.n}", "mova a11, a7")
    a(f"li r19, {p}_NT", f"li r31, {p}_NT", "mova a14, a6")
    a(f"li r18, ({g.batch}) * {p}_MT * {p}_NT - 1", f"li r28, ({g.batch}) * {p}_NT - 1")
    a.comment("prefetch the operands of the first product")
    _load_a(a, g, "r21")
    _load_b(a, g, "r23", "r27")
    with a.loop(f"({g.batch}) * {p}_NT"):
        a.comment("column panel j: its B panel landed; prefetch the next one")
        a(f"dwait {TB}", "mov r9, r22", "mov r22, r23", "mov r23, r9", "mov r16, r15")
        a("mov r9, r26", "mov r26, r27", "mov r27, r9")
        skip_b = a.label("no_b")
        a(f"beq r28, r0, {skip_b}")
        _load_b(a, g, "r23", "r27")
        a("addi r28, r28, -1")
        a.place(skip_b)
        next_c = a.label("c_panel")
        a("mova a10, a14", f"addai a14, a14, MLEN * {g.csz}")
        a("addi r31, r31, -1", f"bne r31, r0, {next_c}")
        a(f"li r31, {p}_NT", f"addai a6, a6, ({g.c_step}) * {g.csz}", "mova a14, a6")
        a.place(next_c)
        with a.loop(f"{p}_MT"):
            a(f"dwait {TA}", "mov r9, r20", "mov r20, r21", "mov r21, r9", "mov r17, r13")
            skip_a = a.label("no_a")
            a(f"beq r18, r0, {skip_a}")
            _load_a(a, g, "r21")
            a("addi r18, r18, -1")
            a.place(skip_a)
            a("mld acc0, [r26]" if g.bias else "mzero acc0")
            if g.trans_b:
                a("mov r10, r20", "mov r11, r22")
                with a.loop(f"{p}_KP"):
                    a("mmt acc0, [r10], [r11]")
                    a("addi r10, r10, MLEN * MLEN", "addi r11, r11, MLEN * MLEN")
            else:
                a(f"mmb acc0, [r20], [r22], {p}_KP")
            a.comment("the tile stored two products ago has left: reuse its buffer")
            a(f"dwait {TC}", "mov r9, r24", "mov r24, r25", "mov r25, r9", "mst [r24], acc0")
            if g.epilogue is not None:
                a("mov r29, r24")
                g.epilogue(a, Tile("r29", "a10", "r17", "r16", f"{p}_VEND", "r6"))
            a(f"dstv [a10], [r24], r17, r16, r4, r5, {TC}")
            a(f"addai a10, a10, MLEN * ({g.ldc}) * {g.csz}")
    a("dfence")


def flat_tile(a: Asm, tile: str, body: Callable[[str], None]) -> None:
    """Run `body(operand)` over a whole VSRAM tile, VL = min(MLEN, VLEN) words at a time."""
    a("setvli min(MLEN, VLEN)", f"mov r30, {tile}")
    with a.loop("MLEN * MLEN // min(MLEN, VLEN)"):
        body("[r30]")
        a("addi r30, r30, min(MLEN, VLEN)")


@dataclass(frozen=True)
class Gemv:
    """y (m,) = W (m, k) @ x (k,); bases of W, x, y in a4, a5, a6."""

    m: str
    k: str


def _gemv_layout(a: Asm) -> None:
    a.equ("KT", "cdiv(K, MLEN)")
    a.equ("MT", "cdiv(M, MLEN)")
    a.equ("XV", "0")
    a.equ("YV_0", "KT * MLEN")
    a.equ("YV_1", "YV_0 + MLEN")
    a.equ("ZTILE", "YV_1 + MLEN")
    a.equ("WP_0", "0")
    a.equ("WP_1", "KT * MLEN * MLEN")


def _gemv_start(a: Asm) -> None:
    a("li r1, 1", "li r2, K", "li r3, KT * MLEN", "li r5, MLEN", "li r4, K * itemsize")
    a.comment("x is read by every row tile: load it once, zero-padded to whole tiles")
    a("dldv [r0 + XV], [a5], r1, r2, r0, r3, 0", "dwait 0")


def _zero_vector(a: Asm, reg: str) -> None:
    a("setvli min(MLEN, VLEN)", f"mov r30, {reg}")
    with a.loop("cdiv(MLEN, VLEN)"):
        a("vbcast [r30], f0", "addi r30, r30, min(MLEN, VLEN)")


def baseline_gemv(a: Asm) -> None:
    """Per row tile, per k tile: load the W tile, wait, multiply; store y's tile, wait."""
    _gemv_layout(a)
    _gemv_start(a)
    a("mzero acc3", "mst [r0 + ZTILE], acc3", "li r9, MLEN * MLEN")
    a("dcpy [r0 + WP_0], [r0 + ZTILE], r9, 7", "dwait 7")
    a("li r6, M", "mova a8, a4", "mova a10, a6")
    with a.loop("MT"):
        a("min r7, r6, r5", "li r24, YV_0")
        _zero_vector(a, "r24")
        a("li r10, K", "mova a12, a8", "li r11, XV")
        with a.loop("KT"):
            a("min r9, r10, r5", "dldm [r0 + WP_0], [a12], r7, r9, r4, r5, 0", "dwait 0")
            a("mvt [r0 + YV_0], [r11], [r0 + WP_0]")
            a("addai a12, a12, MLEN * itemsize", "addi r11, r11, MLEN", "sub r10, r10, r9")
        a("dstv [a10], [r0 + YV_0], r1, r7, r0, r5, 1", "dwait 1")
        a("addai a8, a8, MLEN * K * itemsize", "addai a10, a10, MLEN * itemsize", "sub r6, r6, r7")


def _gemv_load(a: Asm, into: str) -> None:
    a("min r13, r12, r5", "li r10, K", f"mov r11, {into}", "mova a12, a8")
    with a.loop("KT"):
        a("min r9, r10, r5", f"dldm [r11], [a12], r13, r9, r4, r5, {TA}")
        a("addi r11, r11, MLEN * MLEN", "addai a12, a12, MLEN * itemsize", "sub r10, r10, r9")
    a("sub r12, r12, r13", "addai a8, a8, MLEN * K * itemsize")


def expert_gemv(a: Asm) -> None:
    """Row panels of W double-buffered in MSRAM; y tiles double-buffered; mvt per tile."""
    _gemv_layout(a)
    _gemv_start(a)
    a.comment("zero both W panels once (partial tiles keep finite data)")
    a("mzero acc3", "mst [r0 + ZTILE], acc3", "li r9, MLEN * MLEN", "li r10, WP_0")
    with a.loop("2 * KT"):
        a("dcpy [r10], [r0 + ZTILE], r9, 7", "addi r10, r10, MLEN * MLEN")
    a("dwait 7")
    a("li r20, WP_0", "li r21, WP_1", "li r24, YV_0", "li r25, YV_1")
    a("li r12, M", "mova a8, a4", "mova a10, a6")
    _gemv_load(a, "r21")
    with a.loop("MT"):
        a(f"dwait {TA}", "mov r9, r20", "mov r20, r21", "mov r21, r9", "mov r17, r13")
        skip = a.label("no_prefetch")
        a(f"beq r12, r0, {skip}")
        _gemv_load(a, "r21")
        a.place(skip)
        a(f"dwait {TC}", "mov r9, r24", "mov r24, r25", "mov r25, r9")
        _zero_vector(a, "r24")
        a("mov r10, r20", "li r11, XV")
        with a.loop("KT"):
            a("mvt [r24], [r11], [r10]", "addi r10, r10, MLEN * MLEN", "addi r11, r11, MLEN")
        a(f"dstv [a10], [r24], r1, r17, r0, r5, {TC}", "addai a10, a10, MLEN * itemsize")
    a("dfence")
