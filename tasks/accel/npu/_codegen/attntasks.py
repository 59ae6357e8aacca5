"""Attention on the npu: single-head, multi-head, grouped-query and multi-query.

Every variant is o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g] for query heads h < H and
key/value heads g = h // (H // G). By default q, o (H, M, D) and k, v (G, N, D) are contiguous
(the single-head task is H = G = 1); blocks pass row and head strides (heads side by side in
(S, H * D) matrices), region names, a causal mask (query i sees keys j <= i) and unscaled
scores.

- **baseline**: per head, the GEMM baseline writes the scaled scores to the float32 scratch s
  (M, N), a row-at-a-time softmax rewrites s in place (scalar reductions strip by strip), and
  the GEMM baseline multiplies s by v[g].
- **expert**: k[g] and v[g] stay in MSRAM (loaded once per key/value head, so the query heads
  of a group share them). Per tile of MLEN queries: the query panel is pre-scaled by
  1/sqrt(D), `mmt` chains give the score tiles; the padded key columns of the last tile get
  -inf through the accumulator (`mld` of a mask tile built once; causal: the key tiles past
  the diagonal are skipped, the diagonal one starts from a triangular mask tile built once);
  the softmax runs on the
  panel in VSRAM (tile-wise max, per-row exp and sums into vectors); `mmb` chains multiply the
  probabilities by v[g]; the rows are scaled by their reciprocal sums and stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .asm import Asm
from .matmul import Gemm, Tile, baseline_gemm, flat_tile
from .rows import each_strip, row_reduce_scalar


@dataclass(frozen=True)
class Attention:
    """Which symbols the task defines (the rest are `.equ`s)."""

    title: str
    equs: tuple[tuple[str, str], ...] = ()
    """Symbol definitions (H, G, ...) the config does not give."""
    ld: str = "D"
    """Elements from one row of q, k, v, o to the next."""
    q_step: str = "M * D"
    kv_step: str = "N * D"
    """Elements from one query (key/value) head to the next."""
    regions: tuple[str, str, str, str, str] = ()  # type: ignore[assignment]
    """Region names of q, k, v, o and the scores scratch; () takes them from a0..a4."""
    causal: bool = False
    """Query i attends to keys j <= i (M == N)."""
    scaled: bool = True
    """Scores scaled by 1/sqrt(D) (T5 leaves them unscaled)."""


T = "MLEN * MLEN"
VL = "min(MLEN, VLEN)"


def _common(a: Asm, att: Attention) -> None:
    for name, value in att.equs:
        a.equ(name, value)
    a.equ("HPG", "H // G")
    a.equ("KD", "cdiv(D, MLEN)")
    a.equ("NT", "cdiv(N, MLEN)")
    a.equ("MT", "cdiv(M, MLEN)")
    a.equ("NS", f"MLEN // {VL}")
    if att.scaled:
        a("fli f1, 1.0", "li r9, D", "itof f5, r9", "fsqrt f5, f5", "fdiv f5, f1, f5")
    else:
        a("fli f1, 1.0", "fli f5, 1.0")
    if att.regions:
        q, k, v, o, _ = att.regions
        a(f"la a0, {q}", f"la a1, {k}", f"la a2, {v}", f"la a3, {o}")
    a.comment("a0..a3: q, k, v, o of the current head")


def _next_kv(a: Asm, att: Attention) -> None:
    """After a query head: the next group's k and v once HPG heads used them."""
    same = a.label("same_group")
    a("addi r31, r31, -1", f"bne r31, r0, {same}", "li r31, HPG")
    a(f"addai a1, a1, ({att.kv_step}) * itemsize", f"addai a2, a2, ({att.kv_step}) * itemsize")
    a.place(same)
    a("nop")


def baseline(att: Attention) -> str:
    """Scores to scratch, softmax row by row, probabilities times values: per head."""
    a = Asm(att.title, "baseline: per head, scores, softmax and values through the scratch s")
    _common(a, att)
    a.equ("SROW", f"4 * {T}")

    def scale(a: Asm, tile: Tile) -> None:
        flat_tile(a, tile.vsram, lambda v: a(f"vmuls {v}, {v}, f5"))

    scores = Gemm(
        m="M",
        n="N",
        k="D",
        lda=att.ld,
        ldb=att.ld,
        ldc="N",
        trans_b=True,
        csz="4",
        epilogue=scale,
        name="S",
    )
    values = Gemm(m="M", n="D", k="N", lda="N", ldb=att.ld, ldc=att.ld, asz="4", name="P")
    scratch = att.regions[4] if att.regions else "s"
    a("li r31, HPG")
    with a.loop("H"):
        a.comment("s = q[h] @ k[g]^T / sqrt(D)")
        a("mova a4, a0", "mova a5, a1", f"la a6, {scratch}")
        baseline_gemm(a, scores)
        a.comment(f"softmax of each row of {scratch}, in place")
        a(f"la a8, {scratch}", "li r1, 1", "li r23, N", "li r25, cdiv(N, VLEN) * VLEN")
        cols = "r23"
        if att.causal:
            a.comment("row i keeps its first i + 1 scores (the load pads the rest with zeros)")
            a("li r26, 1")
            cols = "r26"
        with a.loop("M"):
            a(f"dldv [r0 + SROW], [a8], r1, {cols}, r0, r25, 0", "dwait 0")
            row_reduce_scalar(a, "SROW", "vredmax", "f10", "-inf", cols)
            each_strip(
                a, ["SROW"], lambda s: a(f"vsubs {s[0]}, {s[0]}, f10", f"vexp {s[0]}, {s[0]}"), cols
            )
            row_reduce_scalar(a, "SROW", "vredsum", "f11", "0.0", cols)
            a("fdiv f12, f1, f11")
            each_strip(a, ["SROW"], lambda s: a(f"vmuls {s[0]}, {s[0]}, f12"), cols)
            a("dstv [a8], [r0 + SROW], r1, r23, r0, r25, 1", "dwait 1", "addai a8, a8, N * 4")
            if att.causal:
                a("addi r26, r26, 1")
        a.comment("o[h] = s @ v[g]")
        a(f"la a4, {scratch}", "mova a5, a2", "mova a6, a3")
        baseline_gemm(a, values)
        a(f"addai a0, a0, ({att.q_step}) * itemsize", f"addai a3, a3, ({att.q_step}) * itemsize")
        _next_kv(a, att)
    return a.text()


def expert(att: Attention) -> str:
    """K, V resident per group; per query tile: scores, softmax and values in SRAM."""
    a = Asm(att.title, "expert: k, v resident per group, each query tile's scores in VSRAM")
    _common(a, att)
    a.equ("QP", "0")
    a.equ("SP", f"QP + KD * {T}")
    a.equ("RT", f"SP + NT * {T}")
    a.equ("OT", f"RT + {T}")
    a.equ("MASK", f"OT + KD * {T}")
    a.equ("RSV", f"MASK + {T}")
    a.equ("TV", "RSV + MLEN * VLEN")
    a.equ("NV", "TV + VLEN")
    a.equ("ZV", "NV + VLEN")
    a.equ("KS", "0")
    a.equ("VS", f"NT * KD * {T}")
    a("li r1, MLEN", f"li r2, ({att.ld}) * itemsize", "li r5, MLEN", f"li r8, {T}")
    a.comment("zero the query panel and both MSRAM panels once: partial tiles stay finite")
    a("mzero acc3", "li r9, QP")
    with a.loop("KD"):
        a("mst [r9], acc3", f"addi r9, r9, {T}")
    a("li r10, KS")
    with a.loop("2 * NT * KD"):
        a("dcpy [r10], [r0 + QP], r8, 7", f"addi r10, r10, {T}")
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
    if att.causal:
        _causal_mask(a)
    a("dwait 7", "li r31, 0", "li r30, H", "mova a14, a0", "mova a15, a3")
    top = a.label("head")
    a.place(top)
    loaded = a.label("kv_loaded")
    a(f"bne r31, r0, {loaded}", "li r31, HPG")
    a.comment("a new key/value head: its k and v tiles into MSRAM (v tiles of one column")
    a.comment("panel consecutive, for mmb)")
    a("li r6, N", "mova a8, a1", "mova a9, a2", "li r11, KS", "li r12, VS")
    with a.loop("NT"):
        a("min r7, r6, r1", "li r10, D", "mova a10, a8", "mova a11, a9", "mov r13, r12")
        with a.loop("KD"):
            a("min r9, r10, r1", "dldm [r11], [a10], r7, r9, r2, r5, 4")
            a("dldm [r13], [a11], r7, r9, r2, r5, 4")
            a(f"addi r11, r11, {T}", f"addi r13, r13, NT * {T}", "sub r10, r10, r9")
            a("addai a10, a10, MLEN * itemsize", "addai a11, a11, MLEN * itemsize")
        a(f"addi r12, r12, {T}", "sub r6, r6, r7")
        a(f"addai a8, a8, MLEN * ({att.ld}) * itemsize")
        a(f"addai a9, a9, MLEN * ({att.ld}) * itemsize")
    a(f"addai a1, a1, ({att.kv_step}) * itemsize", f"addai a2, a2, ({att.kv_step}) * itemsize")
    a("dwait 4")
    a.place(loaded)
    a("addi r31, r31, -1", "li r6, M", "mova a0, a14", "mova a3, a15", "li r26, 0")
    with a.loop("MT"):
        _query_tile(a, att)
    a(f"addai a14, a14, ({att.q_step}) * itemsize", f"addai a15, a15, ({att.q_step}) * itemsize")
    a("addi r30, r30, -1", f"bne r30, r0, {top}")
    a("dfence")
    return a.text()


def _causal_mask(a: Asm) -> None:
    """The diagonal key tile's mask, built once: 0 where column <= row, else -inf."""
    a.equ("CMASK", "ZV + VLEN")
    a("li r11, CMASK", "li r12, 0")
    with a.loop("MLEN"):
        a("itof f7, r12", "li r10, 0")
        with a.loop("NS"):
            a("viota [r0 + TV]", "itof f9, r10", "vadds [r0 + TV], [r0 + TV], f9")
            a("vcmps m1, [r0 + TV], f7, le", "vsel [r11], m1, [r0 + ZV], [r0 + NV]")
            a(f"addi r11, r11, {VL}", f"addi r10, r10, {VL}")
        a("addi r12, r12, 1")


def _query_tile(a: Asm, att: Attention) -> None:
    a("min r7, r6, r1")
    a.comment("the query panel, scaled by 1/sqrt(D)")
    a("li r10, D", "mova a8, a0", "li r11, QP")
    with a.loop("KD"):
        a("min r9, r10, r1", "dldv [r11], [a8], r7, r9, r2, r5, 0")
        a(f"addi r11, r11, {T}", "addai a8, a8, MLEN * itemsize", "sub r10, r10, r9")
    a("dwait 0", "li r11, QP")
    with a.loop(f"KD * {T} // {VL}"):
        a("vmuls [r11], [r11], f5", f"addi r11, r11, {VL}")
    a.comment("score tiles: q @ k^T chained over D; the last one starts from the mask")
    a("li r11, SP", "li r12, KS")

    def score(init: str) -> None:
        a(init, "li r13, QP")
        with a.loop("KD"):
            a("mmt acc0, [r13], [r12]", f"addi r13, r13, {T}", f"addi r12, r12, {T}")
        a("mst [r11], acc0", f"addi r11, r11, {T}")

    if att.causal:
        a.comment("causal: the key tiles before the diagonal one (r26 of them), then the diagonal")
        with a.loop("r26"):
            score("mzero acc0")
        score("mld acc0, [r0 + CMASK]")
        a("addi r27, r26, 1")
    else:
        with a.loop("NT - 1"):
            score("mzero acc0")
        with a.when("N % MLEN"):
            score("mld acc0, [r0 + MASK]")
        with a.loop("0 if N % MLEN else 1"):
            score("mzero acc0")
    tiles = "r27" if att.causal else "NT"
    before = "r26" if att.causal else "NT - 1"
    a.comment("RT = elementwise max of the score tiles")
    a("li r11, SP", "li r12, RT")
    with a.loop(f"{T} // {VL}"):
        a("vmov [r12], [r11]", f"addi r11, r11, {VL}", f"addi r12, r12, {VL}")
    with a.loop(before):
        a("li r12, RT")
        with a.loop(f"{T} // {VL}"):
            a("vmax [r12], [r12], [r11]", f"addi r11, r11, {VL}", f"addi r12, r12, {VL}")
    a.comment("per row: its max, exp of the scores minus it, the sum into RT's row, 1/sum")
    a("li r13, RT", "li r14, SP", "li r15, RSV")
    with a.loop("MLEN"):
        a("fli f10, -inf", "mov r9, r13")
        with a.loop("NS"):
            a("vredmax f3, [r9]", "fmax f10, f10, f3", f"addi r9, r9, {VL}")
        a("mov r9, r13")
        with a.loop("NS"):
            a("vbcast [r9], f0", f"addi r9, r9, {VL}")
        a("mov r10, r14")
        with a.loop(tiles):
            a("mov r9, r13")
            with a.loop("NS"):
                a("vsubs [r10], [r10], f10", "vexp [r10], [r10]", "vadd [r9], [r9], [r10]")
                a(f"addi r9, r9, {VL}", f"addi r10, r10, {VL}")
            a(f"addi r10, r10, {T} - MLEN")
        a("fli f11, 0.0", "mov r9, r13")
        with a.loop("NS"):
            a("vredsum f3, [r9]", "fadd f11, f11, f3", f"addi r9, r9, {VL}")
        a("fdiv f12, f1, f11", "vbcast [r15], f12")
        a("addi r13, r13, MLEN", "addi r14, r14, MLEN", "addi r15, r15, VLEN")
    a.comment("o tile = p @ v (mmb over the key tiles), once the last o tile has left")
    a("dwait 1", "li r11, OT", "li r12, VS")
    with a.loop("KD"):
        if att.causal:
            a("mzero acc1", "li r13, SP", "mov r14, r12")
            with a.loop(tiles):
                a("mm acc1, [r13], [r14]", f"addi r13, r13, {T}", f"addi r14, r14, {T}")
        else:
            a("mzero acc1", "mmb acc1, [r0 + SP], [r12], NT")
        a("mst [r11], acc1", f"addi r11, r11, {T}", f"addi r12, r12, NT * {T}")
    a("li r13, OT", "li r15, RSV")
    with a.loop("MLEN"):
        a("mov r9, r13")
        with a.loop("KD"):
            with a.loop("NS"):
                a("vmul [r9], [r9], [r15]", f"addi r9, r9, {VL}")
            a(f"addi r9, r9, {T} - MLEN")
        a("addi r13, r13, MLEN", "addi r15, r15, VLEN")
    a("li r10, D", "mova a9, a3", "li r11, OT")
    with a.loop("KD"):
        a("min r9, r10, r1", "dstv [a9], [r11], r7, r9, r2, r5, 1")
        a(f"addi r11, r11, {T}", "addai a9, a9, MLEN * itemsize", "sub r10, r10, r9")
    a("mul r9, r7, r2", "adda a0, a0, r9", "adda a3, a3, r9", "sub r6, r6, r7")
    if att.causal:
        a("addi r26, r26, 1")


VARIANTS: dict[str, Attention] = {
    "attention": Attention(
        "o = softmax(q @ k^T / sqrt(D)) @ v for q (M, D), k, v (N, D)",
        equs=(("H", "1"), ("G", "1")),
    ),
    "mha": Attention(
        "multi-head attention: o[h] = softmax(q[h] @ k[h]^T / sqrt(D)) @ v[h]",
        equs=(("G", "H"),),
    ),
    "gqa": Attention(
        "grouped-query attention: o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g], g = h // (H // G)"
    ),
    "mqa": Attention(
        "multi-query attention: o[h] = softmax(q[h] @ k[0]^T / sqrt(D)) @ v[0]",
        equs=(("G", "1"),),
    ),
}


def _generator(att: Attention) -> Callable[[], tuple[str, str]]:
    return lambda: (baseline(att), expert(att))


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {
    name: _generator(att) for name, att in VARIANTS.items()
}
