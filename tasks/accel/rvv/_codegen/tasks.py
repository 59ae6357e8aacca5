"""Each rvv task's programs: which routines run on which regions.

Pointer registers p0.. follow the memory contract's order: inputs, outputs, scratch.
"""

from __future__ import annotations

from collections.abc import Callable

from . import kernels as k
from .asm import Asm

Programs = tuple[str, str]


def _both(title: str, emit: Callable[[Asm, bool], None]) -> Programs:
    texts = []
    for expert, what in ((False, "baseline"), (True, "expert")):
        a = Asm(title, what)
        emit(a, expert)
        texts.append(a.text())
    return texts[0], texts[1]


def elementwise(title: str, ins: int, op: k.Op) -> Callable[[], Programs]:
    def generate() -> Programs:
        return k.elementwise_baseline(title, ins, op), k.elementwise_expert(title, ins, op)

    return generate


def rows(spec: k.Rows) -> Callable[[], Programs]:
    def generate() -> Programs:
        def emit(a: Asm, expert: bool) -> None:
            k.constants(a)
            vectors = [f"p{1 + i}" for i in range(spec.vectors)]
            y = f"p{1 + spec.vectors}"
            (k.row_expert if expert else k.row_baseline)(a, spec, "p0", y, vectors)

        return _both(spec.title, emit)

    return generate


def gemm(title: str, spec: k.Gemm, batch: bool = False) -> Callable[[], Programs]:
    def generate() -> Programs:
        def emit(a: Asm, expert: bool) -> None:
            k.constants(a, rows=False)
            routine = k.gemm_expert if expert else k.gemm_baseline
            if not batch:
                routine(a, spec)
                return
            # Batches one after another: p5, p6, p7 walk the batch's A, B and C.
            a(f"p.mov p5, {spec.a}", f"p.mov p6, {spec.b}", f"p.mov p7, {spec.c}")
            with a.loop("s24", "BATCH"):
                routine(a, k.Gemm("p5", "p6", "p7"))
                a("p.addk p5, p5, M * K * itemsize", "p.addk p6, p6, K * N * itemsize")
                a("p.addk p7, p7, M * N * itemsize")

        return _both(title, emit)

    return generate


def gemv() -> Programs:
    def emit(a: Asm, expert: bool) -> None:
        k.constants(a, rows=False)
        (k.gemv_expert if expert else k.gemv_baseline)(a, "p0", "p1", "p2", "M", "K")

    return _both("GEMV: y (M) = W (M, K) @ x (K)", emit)


def ffn() -> Programs:
    def emit(a: Asm, expert: bool) -> None:
        k.constants(a, rows=False)
        routine = k.gemm_expert if expert else k.gemm_baseline
        a.comment("h = gelu(x @ w1 + b1) into the scratch region (fp32)")
        routine(a, k.Gemm("p0", "p1", "p6", "p2", "M", "D", "F", "gelu", c_size="4"))
        a.comment("y = h @ w2 + b2")
        routine(a, k.Gemm("p6", "p3", "p5", "p4", "M", "F", "D", a_size="4"))

    return _both("FFN: y = gelu(x @ w1 + b1) @ w2 + b2", emit)


def _attention_setup(a: Asm) -> None:
    # The row routines read ROWS and COLS: here the rows of S.
    a.lines += [".equ ROWS, M", ".equ COLS, N"]
    k.constants(a)
    a("f.set f28, 1 / sqrt(D)")


def _attention_head(a: Asm, expert: bool) -> None:
    """One head: q p0, k p1, v p2, o p3, scores s p4 (p5, p6 and s24 are its own)."""
    gemv = k.gemv_expert if expert else k.gemv_baseline
    a.comment("S[i] = K @ Q[i] / sqrt(D), query by query")
    a("p.mov p5, p0", "p.mov p6, p4")
    with a.loop("s24", "M"):
        gemv(a, "p1", "p5", "p6", "N", "D", scale="f28")
        a("p.addk p5, p5, D * itemsize", "p.addk p6, p6, N * itemsize")
    a.comment("S = softmax(S) row by row, in place")
    (k.row_expert if expert else k.row_baseline)(a, k.SOFTMAX, "p4", "p4", [])
    a.comment("O = S @ V")
    routine = k.gemm_expert if expert else k.gemm_baseline
    routine(a, k.Gemm("p4", "p2", "p3", None, "M", "N", "D"))


def attention() -> Programs:
    """Single-head attention: S = Q K^T / sqrt(D) (scratch), softmax rows of S, O = S V."""

    def emit(a: Asm, expert: bool) -> None:
        _attention_setup(a)
        _attention_head(a, expert)

    return _both("attention: O = softmax(Q K^T / sqrt(D)) V, one head", emit)


def heads(title: str, groups: str, per_group: str) -> Callable[[], Programs]:
    """Attention over `groups` key/value heads, each shared by `per_group` query heads."""

    def generate() -> Programs:
        def emit(a: Asm, expert: bool) -> None:
            _attention_setup(a)
            with a.loop("s25", groups):
                with a.loop("s26", per_group):
                    _attention_head(a, expert)
                    # The next query head; the scores scratch is reused.
                    a("p.addk p0, p0, M * D * itemsize", "p.addk p3, p3, M * D * itemsize")
                a("p.addk p1, p1, N * D * itemsize", "p.addk p2, p2, N * D * itemsize")

        return _both(title, emit)

    return generate


def _block_head(a: Asm, expert: bool) -> None:
    """One head of the block: q p0, k p1, v p2, a p3 (column slices of (S, DM) rows), s p4."""
    gemv = k.gemv_expert if expert else k.gemv_baseline
    a.comment("s[i] = k_h @ q_h[i] / sqrt(D), query by query (head rows are DM apart)")
    a("p.mov p5, p0", "p.mov p6, p4")
    with a.loop("s24", "S"):
        gemv(a, "p1", "p5", "p6", "S", "D", scale="f28", ld="DM")
        a("p.addk p5, p5, DM * itemsize", "p.addk p6, p6, S * itemsize")
    a.comment("s = softmax(s) row by row, in place")
    (k.row_expert if expert else k.row_baseline)(a, k.SOFTMAX, "p4", "p4", [], "S", "S")
    a.comment("a_h = s @ v_h")
    routine = k.gemm_expert if expert else k.gemm_baseline
    routine(a, k.Gemm("p4", "p2", "p3", None, "S", "S", "D", ldb="DM", ldc="DM"))


def llama_block() -> Programs:
    """RMSNorm, Q/K/V, attention per head, residual, RMSNorm, SwiGLU FFN, residual.

    Every stage is a whole routine of the level-1/2 generators, run on regions loaded into
    p0.. by name (the contract has more regions than pointer registers); the intermediates go
    through the scratch regions.
    """

    def emit(a: Asm, expert: bool) -> None:
        # The row routines read ROWS and COLS (and 1 / COLS): the RMSNorms' rows.
        a.lines += [".equ DM, H * D", ".equ ROWS, S", ".equ COLS, DM"]
        k.constants(a)
        a("f.set f28, 1 / sqrt(D)")
        rows = k.row_expert if expert else k.row_baseline
        gemm = k.gemm_expert if expert else k.gemm_baseline

        def regions(*names: str) -> None:
            a(*(f"p.set p{i}, {name}" for i, name in enumerate(names)))

        a.comment("hn = rmsnorm(x) * g1")
        regions("x", "g1", "hn")
        rows(a, k.RMSNORM, "p0", "p2", ["p1"])
        for w, out in (("wq", "q"), ("wk", "k"), ("wv", "v")):
            a.comment(f"{out} = hn @ {w}")
            regions("hn", w, out)
            gemm(a, k.Gemm("p0", "p1", "p2", None, "S", "DM", "DM"))
        a.comment("attention head by head: a[:, h] = softmax(q_h k_h^T / sqrt(D)) v_h")
        regions("q", "k", "v", "a", "s")
        with a.loop("s25", "H"):
            _block_head(a, expert)
            a(*(f"p.addk p{i}, p{i}, D * itemsize" for i in range(4)))
        a.comment("x2 = x + a @ wo")
        regions("a", "wo", "x2")
        gemm(a, k.Gemm("p0", "p1", "p2", None, "S", "DM", "DM", residual="x - x2"))
        a.comment("hn = rmsnorm(x2) * g2")
        regions("x2", "g2", "hn")
        rows(a, k.RMSNORM, "p0", "p2", ["p1"])
        a.comment("gt = silu(hn @ wg)")
        regions("hn", "wg", "gt")
        gemm(a, k.Gemm("p0", "p1", "p2", None, "S", "DM", "F", "silu"))
        a.comment("u = gt * (hn @ wu)")
        regions("hn", "wu", "u")
        gemm(a, k.Gemm("p0", "p1", "p2", None, "S", "DM", "F", gate="gt - u"))
        a.comment("y = x2 + u @ wd")
        regions("u", "wd", "y")
        gemm(a, k.Gemm("p0", "p1", "p2", None, "S", "F", "DM", residual="x2 - y"))

    return _both("LLaMA-style decoder block: x (S, DM) -> y (S, DM), DM = H * D", emit)


#: Task folder name -> generator of (baseline, expert).
TASKS: dict[str, Callable[[], Programs]] = {
    "relu": elementwise("ReLU of x (ROWS, COLS)", 1, k.relu),
    "silu": elementwise("SiLU of x (ROWS, COLS)", 1, k.silu),
    "gelu": elementwise("GELU (tanh form) of x (ROWS, COLS)", 1, k.gelu),
    "swiglu": elementwise("SwiGLU: silu(g) * u for g, u (ROWS, COLS)", 2, k.swiglu),
    "softmax": rows(k.SOFTMAX),
    "layernorm": rows(k.LAYERNORM),
    "rmsnorm": rows(k.RMSNORM),
    "gemv": gemv,
    "gemm": gemm("GEMM: c (M, N) = a (M, K) @ b (K, N)", k.Gemm("p0", "p1", "p2")),
    "batched_matmul": gemm(
        "batched matmul: c[i] = a[i] @ b[i] for BATCH pairs", k.Gemm("p0", "p1", "p2"), batch=True
    ),
    "linear": gemm(
        "linear: y (M, N) = x (M, K) @ w (K, N) + b (N)", k.Gemm("p0", "p1", "p3", "p2")
    ),
    "ffn": ffn,
    "attention": attention,
    "mha": heads("multi-head attention: H heads", "H", "1"),
    "gqa": heads("grouped-query attention: H query heads, G key/value heads", "G", "H // G"),
    "mqa": heads("multi-query attention: H query heads, one key/value head", "1", "H"),
    "llama_block": llama_block,
}
