"""Level-2 products with an epilogue: the FFN (GELU MLP) and the SwiGLU gated projection.

Both are chains of `Gemm`s whose output tiles pass through vector code (`Tile` epilogues)
before they are stored; intermediates go through float32 scratch regions in HBM.

- **ffn**: h = gelu(x @ w1 + b1) (bias through the accumulator, GELU on the tile) into the
  scratch h, then y = h @ w2 + b2.
- **swiglu**: u = x @ wu into the scratch u, then y = silu(x @ wg) * u, the u tile loaded by the
  epilogue of the second product.

The baseline chains the baseline products, the expert the expert products; the epilogues are
the same vector code, tile-wide (the expert's run while the next tile multiplies).
"""

from __future__ import annotations

from collections.abc import Callable

from .asm import Asm
from .matmul import Gemm, Tile, baseline_gemm, expert_gemm, expert_layout, flat_tile
from .rowtasks import GELU_CONSTANTS, gelu, silu

Emit = Callable[[Asm, Gemm], None]


def _expert(a: Asm, g: Gemm) -> None:
    expert_layout(a, g)
    expert_gemm(a, g)


def gelu_tile(a: Asm, tile: Tile) -> None:
    """GELU (tanh form) on the whole tile, in place (f1 = 1, f5, f6 its constants)."""
    flat_tile(a, tile.vsram, lambda v: gelu(a, v, v, f"[r0 + {tile.scratch}]"))


def load_matching(a: Asm, tile: Tile, region: str, out: str, rows: str) -> None:
    """Load the tile of `region` (shaped and typed as `out`) at the output tile's offset."""
    a.comment(f"the matching tile of {region}: same offset from {region} as from {out}")
    with a.when(f"{rows} % MLEN"):
        a.comment("rows past the end are never loaded: zero them (the whole tile) first")
        a("mzero acc3", f"mst [r0 + {tile.scratch}], acc3")
    a(f"addai a3, {tile.hbm}, {region} - {out}")
    a(f"dldv [r0 + {tile.scratch}], [a3], {tile.rows}, {tile.cols}, r4, r5, 7", "dwait 7")


def plus(region: str, out: str, rows: str) -> Callable[[Asm, Tile], None]:
    """Tile + the same tile of `region` (a residual connection), in place."""

    def epilogue(a: Asm, tile: Tile) -> None:
        load_matching(a, tile, region, out, rows)
        a(f"li {tile.temp}, {tile.scratch}")

        def body(v: str) -> None:
            a(f"vadd {v}, {v}, [{tile.temp}]", f"addi {tile.temp}, {tile.temp}, min(MLEN, VLEN)")

        flat_tile(a, tile.vsram, body)

    return epilogue


def silu_times(region: str, out: str, rows: str = "M") -> Callable[[Asm, Tile], None]:
    """silu(tile) * the same tile of `region` (same shape and dtype as `out`), in place."""

    def epilogue(a: Asm, tile: Tile) -> None:
        a.comment(f"the matching tile of {region}: same offset from {region} as from {out}")
        with a.when(f"{rows} % MLEN"):
            a.comment("rows past M are never loaded: zero them (the whole tile) first")
            a("mzero acc3", f"mst [r0 + {tile.scratch}], acc3")
        a(f"addai a3, {tile.hbm}, {region} - {out}")
        a(f"dldv [r0 + {tile.scratch}], [a3], {tile.rows}, {tile.cols}, r4, r5, 7", "dwait 7")
        a(f"li {tile.temp}, {tile.scratch}")

        def body(v: str) -> None:
            a("setvli min(MLEN, VLEN)")
            silu(a, v, v, f"[r0 + {tile.scratch} + MLEN * MLEN]")
            a(f"vmul {v}, {v}, [{tile.temp}]", f"addi {tile.temp}, {tile.temp}, min(MLEN, VLEN)")

        flat_tile(a, tile.vsram, body)

    return epilogue


def _ffn_gemms() -> tuple[Gemm, Gemm]:
    up = Gemm(
        m="M", n="F", k="D", lda="D", ldb="F", ldc="F", bias=True, csz="4", epilogue=gelu_tile
    )
    down = Gemm(m="M", n="D", k="F", lda="F", ldb="D", ldc="D", bias=True, asz="4", name="H")
    return up, down


def ffn() -> tuple[str, str]:
    """Y (M, D) = gelu(x @ w1 + b1) @ w2 + b2, through the scratch h (M, F) fp32."""
    title = "y = gelu(x @ w1 + b1) @ w2 + b2 for x (M, D), w1 (D, F), w2 (F, D); scratch h"
    up, down = _ffn_gemms()

    def program(what: str, emit: Emit) -> str:
        a = Asm(title, what)
        a("fli f1, 1.0", *(f"fli {r}, {v}" for r, v in GELU_CONSTANTS.items()))
        a.comment("h = gelu(x @ w1 + b1)")
        a("la a4, x", "la a5, w1", "la a6, h", "la a7, b1")
        emit(a, up)
        a.comment("y = h @ w2 + b2")
        a("la a4, h", "la a5, w2", "la a6, y", "la a7, b2")
        emit(a, down)
        return a.text()

    return (
        program("baseline: two tile-by-tile products, GELU on each tile", baseline_gemm),
        program("expert: two double-buffered products, GELU on each tile", _expert),
    )


def swiglu() -> tuple[str, str]:
    """Y (M, F) = silu(x @ wg) * (x @ wu), through the scratch u (M, F)."""
    title = "y = silu(x @ wg) * (x @ wu) for x (M, D), wg, wu (D, F); scratch u"
    up = Gemm(m="M", n="F", k="D", lda="D", ldb="F", ldc="F", name="U")
    gate = Gemm(
        m="M", n="F", k="D", lda="D", ldb="F", ldc="F", name="G", epilogue=silu_times("u", "y")
    )

    def program(what: str, emit: Emit) -> str:
        a = Asm(title, what)
        a("fli f1, 1.0", "fli f2, -1.0")
        a.comment("u = x @ wu")
        a("la a4, x", "la a5, wu", "la a6, u")
        emit(a, up)
        a.comment("y = silu(x @ wg) * u")
        a("la a4, x", "la a5, wg", "la a6, y")
        emit(a, gate)
        return a.text()

    return (
        program("baseline: two tile-by-tile products, gating on each tile", baseline_gemm),
        program("expert: two double-buffered products, gating on each tile", _expert),
    )


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {"ffn": ffn, "swiglu": swiglu}
