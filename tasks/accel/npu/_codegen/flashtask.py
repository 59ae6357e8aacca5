"""FlashAttention-style tiled attention: the keys and values stream through MSRAM in blocks.

The task is single-head attention on sequences whose keys and values do not fit on chip. The
baseline is the attention baseline (`attntasks.baseline`: scores through the scratch s). The
expert keeps, per tile of MLEN queries, an output accumulator in VSRAM and per-row running
maxima and sums (vectors of VL equal lanes: the SRAM is addressed in aligned vectors), and
streams blocks of BT key tiles, double-buffered:

    m' = max(m, rowmax(S_b));  alpha = exp(m - m');  P = exp(S_b - m')
    l' = l * alpha + rowsum(P);  O' = O * alpha + P @ V_b

and divides by l once at the end. The next block (or the first block of the next query tile)
loads while the current one computes. The padded key columns of the very last tile start at
-inf through the accumulator (`mld` of a mask tile built once).
"""

from __future__ import annotations

from collections.abc import Callable

from .asm import Asm
from .attntasks import Attention, baseline

T = "MLEN * MLEN"
VL = "min(MLEN, VLEN)"
FLASH = Attention(
    "o = softmax(q @ k^T / sqrt(D)) @ v for q (M, D), k, v (N, D), long N",
    equs=(("H", "1"), ("G", "1")),
)


def _layout(a: Asm) -> None:
    a.equ("KD", "cdiv(D, MLEN)")
    a.equ("NT", "cdiv(N, MLEN)")
    a.equ("MT", "cdiv(M, MLEN)")
    a.equ("NS", f"MLEN // {VL}")
    a.comment("key tiles per block: two blocks of k and v fit MSRAM, one block of scores VSRAM;")
    a.comment("at most BT_CAP, a knob of the autotune agent (task.toml's [autotune])")
    a.equ("BT_CAP", "NT")
    a.equ(
        "BT",
        f"max(1, min(NT, BT_CAP, MSRAM_WORDS // (4 * KD * {T}), VSRAM_WORDS // (2 * {T})))",
    )
    a.equ("VOFF", f"BT * KD * {T}")
    a.equ("QP", "0")
    a.equ("SP", f"QP + KD * {T}")
    a.equ("OA", f"SP + BT * {T}")
    a.equ("MASK", f"OA + KD * {T}")
    a.equ("ZT", f"MASK + {T}")
    a.equ("MV", f"ZT + {T}")
    a.equ("LV", "MV + MLEN * VLEN")
    a.equ("AV", "LV + MLEN * VLEN")
    a.equ("TV", "AV + MLEN * VLEN")
    a.equ("NV", "TV + VLEN")
    a.equ("ZV", "NV + VLEN")


def _prefetch(a: Asm) -> None:
    """Load the next block of the key/value stream into the buffer r23 (tag 4)."""
    more = a.label("keys_left")
    a(f"bne r21, r0, {more}", "li r21, N", "la a1, k", "la a2, v")
    a.place(more)
    a("addi r16, r21, MLEN - 1", "divi r16, r16, MLEN", "li r17, BT", "min r16, r16, r17")
    a("mov r11, r23", "addi r12, r23, VOFF")
    with a.loop("r16"):
        a("min r18, r21, r1", "li r10, D", "mova a8, a1", "mova a9, a2", "mov r13, r12")
        with a.loop("KD"):
            a("min r9, r10, r1", "dldm [r11], [a8], r18, r9, r2, r5, 4")
            a("dldm [r13], [a9], r18, r9, r2, r5, 4")
            a(f"addi r11, r11, {T}", f"addi r13, r13, BT * {T}", "sub r10, r10, r9")
            a("addai a8, a8, MLEN * itemsize", "addai a9, a9, MLEN * itemsize")
        a(f"addi r12, r12, {T}", "sub r21, r21, r18")
        a("addai a1, a1, MLEN * D * itemsize", "addai a2, a2, MLEN * D * itemsize")


def _block(a: Asm, nb: str) -> None:
    """One block of `nb` key tiles (an immediate expression) for the current query tile."""
    a.comment(f"a block of {nb} key tiles: its k, v landed; the next block starts loading")
    a("dwait 4", "mov r9, r22", "mov r22, r23", "mov r23, r9", f"addi r24, r24, -({nb})")
    go, skip = a.label("prefetch"), a.label("no_prefetch")
    a(f"bne r24, r0, {go}", "li r9, 1", f"beq r30, r9, {skip}")
    a.place(go)
    _prefetch(a)
    a.place(skip)
    unmasked = a.label("unmasked")
    a("li r25, ZT", f"bne r24, r0, {unmasked}", "li r25, MASK if N % MLEN else ZT")
    a.place(unmasked)
    a.comment("score tiles q @ k^T (the last one of the block starts from r25's tile)")
    a("li r11, SP", "mov r12, r22")

    def score(init: str) -> None:
        a(init, "li r13, QP")
        with a.loop("KD"):
            a("mmt acc0, [r13], [r12]", f"addi r13, r13, {T}", f"addi r12, r12, {T}")
        a("mst [r11], acc0", f"addi r11, r11, {T}")

    with a.loop(f"({nb}) - 1"):
        score("mzero acc0")
    score("mld acc0, [r25]")
    a.comment("per row: m' = max(m, rowmax), alpha = exp(m - m'), p = exp(s - m'), and the")
    a.comment("lane-wise sums l = l * alpha + p (alpha is one value per row: reduce l at the end)")
    a("li r14, SP", "li r15, 0")
    with a.loop("MLEN"):
        a("vmov [r0 + TV], [r14]", "mov r10, r14")
        with a.loop(nb):
            a("mov r9, r10")
            with a.loop("NS"):
                a("vmax [r0 + TV], [r0 + TV], [r9]", f"addi r9, r9, {VL}")
            a(f"addi r10, r10, {T}")
        a("vredmax f10, [r0 + TV]", "vbcast [r0 + TV], f10")
        a("vmax [r0 + TV], [r0 + TV], [r15 + MV]", "vsub [r15 + AV], [r15 + MV], [r0 + TV]")
        a("vexp [r15 + AV], [r15 + AV]", "vmov [r15 + MV], [r0 + TV]")
        a("vmul [r15 + LV], [r15 + LV], [r15 + AV]", "mov r10, r14")
        with a.loop(nb):
            a("mov r9, r10")
            with a.loop("NS"):
                a("vsub [r9], [r9], [r15 + MV]", "vexp [r9], [r9]")
                a("vadd [r15 + LV], [r15 + LV], [r9]", f"addi r9, r9, {VL}")
            a(f"addi r10, r10, {T}")
        a("addi r14, r14, MLEN", "addi r15, r15, VLEN")
    a.comment("o = o * alpha + p @ v")
    _scale_rows(a, "AV")
    a("li r11, OA", "addi r12, r22, VOFF")
    with a.loop("KD"):
        a("mld acc1, [r11]", f"mmb acc1, [r0 + SP], [r12], {nb}", "mst [r11], acc1")
        a(f"addi r11, r11, {T}", f"addi r12, r12, BT * {T}")


def _scale_rows(a: Asm, vectors: str) -> None:
    """Multiply each row of the output accumulator by its row's vector (VL equal lanes)."""
    a("li r13, OA", "li r15, 0")
    with a.loop("MLEN"):
        a("mov r9, r13")
        with a.loop("KD"):
            with a.loop("NS"):
                a(f"vmul [r9], [r9], [r15 + {vectors}]", f"addi r9, r9, {VL}")
            a(f"addi r9, r9, {T} - MLEN")
        a("addi r13, r13, MLEN", "addi r15, r15, VLEN")


def expert() -> str:
    """Online softmax over double-buffered key/value blocks."""
    a = Asm(FLASH.title, "expert: online softmax over double-buffered key/value blocks")
    _layout(a)
    a("fli f1, 1.0", "li r9, D", "itof f5, r9", "fsqrt f5, f5", "fdiv f5, f1, f5")
    a("li r1, MLEN", "li r2, D * itemsize", "li r5, MLEN", f"li r8, {T}")
    a.comment("zero the query panel, a zero tile and every MSRAM buffer once")
    a("mzero acc3", "li r9, QP")
    with a.loop("KD"):
        a("mst [r9], acc3", f"addi r9, r9, {T}")
    a("mst [r0 + ZT], acc3", "li r10, 0")
    with a.loop("4 * BT * KD"):
        a("dcpy [r10], [r0 + ZT], r8, 7", f"addi r10, r10, {T}")
    a(f"setvli {VL}", "fli f8, -inf", "vbcast [r0 + NV], f8", "vbcast [r0 + ZV], f0")
    with a.when("N % MLEN"):
        a.comment("the mask of the last key tile, built once: 0, or -inf past column N")
        a("li r9, N % MLEN", "itof f7, r9", "li r10, 0", "li r11, MASK")
        with a.loop("NS"):
            a("viota [r0 + TV]", "itof f9, r10", "vadds [r0 + TV], [r0 + TV], f9")
            a("vcmps m1, [r0 + TV], f7, lt", "vsel [r11], m1, [r0 + ZV], [r0 + NV]")
            a(f"addi r11, r11, {VL}", f"addi r10, r10, {VL}")
        a("li r11, MASK + MLEN")
        with a.loop("MLEN - 1"):
            a("li r12, MASK")
            with a.loop("NS"):
                a("vmov [r11], [r12]", f"addi r11, r11, {VL}", f"addi r12, r12, {VL}")
    a("dwait 7")
    a.comment("the key/value stream: r21 keys left, r22 / r23 current / next MSRAM buffer")
    a("li r21, 0", "li r22, 2 * VOFF", "li r23, 0")
    _prefetch(a)
    a("li r30, MT", "li r6, M")
    top = a.label("query_tile")
    a.place(top)
    a("min r7, r6, r1")
    a.comment("the query panel, scaled by 1/sqrt(D); fresh row statistics and accumulator")
    a("li r10, D", "mova a8, a0", "li r11, QP")
    with a.loop("KD"):
        a("min r9, r10, r1", "dldv [r11], [a8], r7, r9, r2, r5, 0")
        a(f"addi r11, r11, {T}", "addai a8, a8, MLEN * itemsize", "sub r10, r10, r9")
    a("dwait 1", "mzero acc2", "li r11, OA")
    with a.loop("KD"):
        a("mst [r11], acc2", f"addi r11, r11, {T}")
    a("li r15, 0")
    with a.loop("MLEN"):
        a("vbcast [r15 + MV], f8", "vbcast [r15 + LV], f0", "addi r15, r15, VLEN")
    a("dwait 0", "li r11, QP")
    with a.loop(f"KD * {T} // {VL}"):
        a("vmuls [r11], [r11], f5", f"addi r11, r11, {VL}")
    a("li r24, NT")
    with a.loop("NT // BT"):
        _block(a, "BT")
    with a.when("NT % BT"):
        _block(a, "max(1, NT % BT)")
    a.comment("o / l, stored")
    a("li r15, 0")
    with a.loop("MLEN"):
        a("vredsum f11, [r15 + LV]", "fdiv f12, f1, f11", "vbcast [r15 + LV], f12")
        a("addi r15, r15, VLEN")
    _scale_rows(a, "LV")
    a("li r10, D", "mova a9, a3", "li r11, OA")
    with a.loop("KD"):
        a("min r9, r10, r1", "dstv [a9], [r11], r7, r9, r2, r5, 1")
        a(f"addi r11, r11, {T}", "addai a9, a9, MLEN * itemsize", "sub r10, r10, r9")
    a("mul r9, r7, r2", "adda a0, a0, r9", "adda a3, a3, r9", "sub r6, r6, r7")
    a("addi r30, r30, -1", f"bne r30, r0, {top}")
    a("dfence")
    return a.text()


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {
    "flash_attention": lambda: (baseline(FLASH), expert()),
}
