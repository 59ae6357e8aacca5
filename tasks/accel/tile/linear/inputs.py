"""Inputs and memory contract of accel/tile/linear: x (M, K), w (K, N), b (N) -> y (M, N)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    c = config
    return MemoryContract.pack(
        inputs={"x": (c["M"], c["K"]), "w": (c["K"], c["N"]), "b": (c["N"],)},
        outputs={"y": (c["M"], c["N"])},
        dtype=c["dtype"],
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    c = config
    return {
        "x": draw_array(rng, (c["M"], c["K"]), distribution, c["dtype"]),
        "w": draw_array(rng, (c["K"], c["N"]), distribution, c["dtype"]),
        "b": draw_array(rng, (c["N"],), distribution, c["dtype"]),
    }
