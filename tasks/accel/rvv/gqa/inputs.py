"""Inputs and memory contract of accel/rvv/gqa: q (H, M, D), k, v (G, N, D) -> o (H, M, D)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _shapes(c: dict) -> dict[str, tuple[int, ...]]:
    kv = c["G"]
    return {
        "q": (c["H"], c["M"], c["D"]),
        "k": (kv, c["N"], c["D"]),
        "v": (kv, c["N"], c["D"]),
    }


def contract(config: dict) -> MemoryContract:
    """q, k, v in; o out; one head's scores as scratch."""
    c = config
    return MemoryContract.pack(
        inputs=_shapes(c),
        outputs={"o": (c["H"], c["M"], c["D"])},
        scratch={"s": (c["M"], c["N"])},
        dtype=c["dtype"],
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Every input drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    return {
        name: draw_array(rng, shape, distribution, config["dtype"])
        for name, shape in _shapes(config).items()
    }
