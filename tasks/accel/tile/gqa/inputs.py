"""Inputs and memory contract of accel/tile/gqa: q (H, M, D), k, v (G, N, D) -> o (H, M, D)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _shapes(c: dict) -> dict[str, tuple[int, ...]]:
    return {
        "q": (c["H"], c["M"], c["D"]),
        "k": (c["G"], c["N"], c["D"]),
        "v": (c["G"], c["N"], c["D"]),
    }


def contract(config: dict) -> MemoryContract:
    """q, k, v in; o out."""
    c = config
    return MemoryContract.pack(
        inputs=_shapes(c), outputs={"o": (c["H"], c["M"], c["D"])}, dtype=c["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Every input drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    return {
        name: draw_array(rng, shape, distribution, config["dtype"])
        for name, shape in _shapes(config).items()
    }
