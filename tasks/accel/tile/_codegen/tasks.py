"""Each tile task's programs: which stages run on which regions.

Address registers a0.. follow the memory contract's order: inputs, outputs, scratch.
"""

from __future__ import annotations

from collections.abc import Callable

from . import kernels as k
from .asm import Asm

Programs = tuple[str, str]


def _both(title: str, emit: Callable[[Asm, bool], None]) -> Callable[[], Programs]:
    def generate() -> Programs:
        texts = []
        for expert, what in ((False, "baseline"), (True, "expert")):
            a = Asm(title, what)
            emit(a, expert)
            texts.append(a.text())
        return texts[0], texts[1]

    return generate


def rows(title: str, op: str, inputs: int = 1, params: int = 0) -> Callable[[], Programs]:
    """A row stage: inputs a0.., then per-column parameters, then the output."""
    ins = [f"a{i}" for i in range(inputs)]
    consts = [f"a{inputs + i}" for i in range(params)]
    out = f"a{inputs + params}"
    return _both(title, lambda a, expert: k.row_stage(a, op, ins, out, consts, expert))


def matmul(title: str, bias: bool = False, batch: bool = False) -> Callable[[], Programs]:
    """C = A @ B (+ bias): a0 = A, a1 = B, [a2 = bias], then C."""
    m = {
        "A": "a0",
        "B": "a1",
        "C": "a3" if bias else "a2",
        "M": "M",
        "N": "N",
        "K": "K",
        "BATCH": "BATCH" if batch else "1",
        "asz": "itemsize",
        "bsz": "itemsize",
        "csz": "itemsize",
    }
    if bias:
        m["bias"] = "a2"
    return _both(title, lambda a, expert: k.matmul_stage(a, m, expert))


def ffn(title: str) -> Callable[[], Programs]:
    """H = gelu(x @ w1 + b1) into scratch (fp32); y = h @ w2 + b2; a barrier between."""
    first = {
        "A": "a0",
        "B": "a1",
        "bias": "a2",
        "C": "a6",
        "M": "M",
        "N": "F",
        "K": "D",
        "BATCH": "1",
        "asz": "itemsize",
        "bsz": "itemsize",
        "csz": "4",
        "epilogue": "gelu",
    }
    second = {
        "A": "a6",
        "B": "a3",
        "bias": "a4",
        "C": "a5",
        "M": "M",
        "N": "D",
        "K": "F",
        "BATCH": "1",
        "asz": "4",
        "bsz": "itemsize",
        "csz": "itemsize",
    }

    def emit(a: Asm, expert: bool) -> None:
        k.matmul_stage(a, first, expert)
        if expert:
            k.barrier(a)
        k.matmul_stage(a, second, expert)

    return _both(title, emit)


def mlp_block(title: str) -> Callable[[], Programs]:
    """A pre-norm MLP block, three stages with a barrier between each two (expert).

    n = rmsnorm(x) * g and h = gelu(n @ w1) go to float32 scratch; y = x + h @ w2.
    a0 = x (M, D), a1 = g (D), a2 = w1 (D, F), a3 = w2 (F, D), a4 = y, a5 = n, a6 = h.
    """
    first = {
        "A": "a5",
        "B": "a2",
        "C": "a6",
        "M": "M",
        "N": "F",
        "K": "D",
        "BATCH": "1",
        "asz": "4",
        "bsz": "itemsize",
        "csz": "4",
        "epilogue": "gelu",
    }
    second = {
        "A": "a6",
        "B": "a3",
        "C": "a4",
        "residual": "a0",
        "M": "M",
        "N": "D",
        "K": "F",
        "BATCH": "1",
        "asz": "4",
        "bsz": "itemsize",
        "csz": "itemsize",
    }

    def emit(a: Asm, expert: bool) -> None:
        a.equ("ROWS", "M")
        a.equ("COLS", "D")
        k.row_stage(a, "rmsnorm", ["a0"], "a5", ["a1"], expert, out_size="4")
        for stage in (first, second):
            if expert:
                k.barrier(a)
            k.matmul_stage(a, stage, expert)

    return _both(title, emit)


def attention(title: str, heads: bool) -> Callable[[], Programs]:
    """Scaled dot-product attention; single-head tasks define H = G = 1."""

    def emit(a: Asm, expert: bool) -> None:
        if not heads:
            a.equ("H", "1")
            a.equ("G", "1")
        k.attention_stage(a, expert)

    return _both(title, emit)


def gemv_t(a: Asm, expert: bool) -> None:
    """The transposed GEMV x @ w, w (K, N): a column reduction of w's rows weighted by x."""
    a.equ("ROWS", "K")
    a.equ("COLS", "N")
    k.colsum_stage(a, expert, "gemvt")


TASKS: dict[str, Callable[[], Programs]] = {
    "relu": rows("ReLU", "relu"),
    "silu": rows("SiLU", "silu"),
    "gelu": rows("GELU (tanh form)", "gelu"),
    "softmax": rows("row softmax", "softmax"),
    "layernorm": rows("LayerNorm", "layernorm", params=2),
    "rmsnorm": rows("RMSNorm", "rmsnorm", params=1),
    "swiglu": rows("SwiGLU gate", "swiglu", inputs=2),
    "colsum": _both("column sums", k.colsum_stage),
    "colmax": _both("column maxima", lambda a, expert: k.colsum_stage(a, expert, "max")),
    "gemv_t": _both("transposed GEMV", lambda a, expert: gemv_t(a, expert)),
    "gemv": _both("GEMV", k.gemv_stage),
    "gemm": matmul("GEMM"),
    "linear": matmul("linear layer", bias=True),
    "batched_matmul": matmul("batched matmul", batch=True),
    "ffn": ffn("feed-forward block"),
    "mlp_block": mlp_block("pre-norm MLP block"),
    "attention": attention("scaled dot-product attention", heads=False),
    "gqa": attention("grouped-query attention", heads=True),
    "stencil": _both("1-D stencil steps", k.stencil_stage),
    "cumsum": _both("cumulative sum down the rows", k.cumsum_stage),
}
