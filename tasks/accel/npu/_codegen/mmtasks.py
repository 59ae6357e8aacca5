"""Level-1 matrix tasks: GEMM, linear (x W^T + b), batched matmul, GEMV."""

from __future__ import annotations

from collections.abc import Callable

from .asm import Asm
from .matmul import Gemm, baseline_gemm, baseline_gemv, expert_gemm, expert_gemv, expert_layout

GEMM = Gemm(m="M", n="N", k="K", lda="K", ldb="N", ldc="N")
BMM = Gemm(
    m="M",
    n="N",
    k="K",
    lda="K",
    ldb="N",
    ldc="N",
    batch="BATCH",
    a_step="M * K",
    b_step="K * N",
    c_step="M * N",
)
LINEAR = Gemm(m="M", n="N", k="K", lda="K", ldb="K", ldc="N", trans_b=True, bias=True)


def _program(title: str, what: str, regions: str, body: Callable[[Asm], None]) -> str:
    a = Asm(title, what)
    a(*regions.split(";"))
    body(a)
    return a.text()


def gemm() -> tuple[str, str]:
    """Y (M, N) = x (M, K) @ w (K, N)."""
    title = "y = x @ w for x (M, K), w (K, N)"
    setup = "la a4, x;la a5, w;la a6, y"
    return (
        _program(title, "baseline: tile by tile", setup, lambda a: baseline_gemm(a, GEMM)),
        _program(
            title,
            "expert: double-buffered panels, mmb",
            setup,
            lambda a: (expert_layout(a, GEMM), expert_gemm(a, GEMM)),
        ),
    )


def linear() -> tuple[str, str]:
    """Y (M, N) = x (M, K) @ w (N, K)^T + b (N,)."""
    title = "y = x @ w^T + b for x (M, K), w (N, K), b (N)"
    setup = "la a4, x;la a5, w;la a6, y;la a7, b"
    return (
        _program(title, "baseline: tile by tile", setup, lambda a: baseline_gemm(a, LINEAR)),
        _program(
            title,
            "expert: double-buffered panels, bias through mld",
            setup,
            lambda a: (expert_layout(a, LINEAR), expert_gemm(a, LINEAR)),
        ),
    )


def bmm() -> tuple[str, str]:
    """y[b] = x[b] @ w[b] for BATCH products."""
    title = "y[b] = x[b] @ w[b] for x (BATCH, M, K), w (BATCH, K, N)"
    setup = "la a4, x;la a5, w;la a6, y"

    def step(a: Asm) -> None:
        a("addai a4, a4, M * K * itemsize", "addai a5, a5, K * N * itemsize")
        a("addai a6, a6, M * N * itemsize")

    def base(a: Asm) -> None:
        with a.loop("BATCH"):
            baseline_gemm(a, GEMM)
            step(a)

    def fast(a: Asm) -> None:
        expert_layout(a, BMM)
        expert_gemm(a, BMM)

    return (
        _program(title, "baseline: one product after the other, tile by tile", setup, base),
        _program(title, "expert: panels double-buffered across the products", setup, fast),
    )


def gemv() -> tuple[str, str]:
    """Y (M,) = w (M, K) @ x (K,)."""
    title = "y = w @ x for w (M, K), x (K)"
    setup = "la a4, w;la a5, x;la a6, y"
    return (
        _program(title, "baseline: tile by tile", setup, baseline_gemv),
        _program(title, "expert: double-buffered row panels", setup, expert_gemv),
    )


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {
    "gemm": gemm,
    "linear": linear,
    "bmm": bmm,
    "gemv": gemv,
}
