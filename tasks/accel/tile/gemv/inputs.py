"""Inputs and memory contract of accel/tile/gemv: w (M, K), x (K) -> y (M)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    c = config
    return MemoryContract.pack(
        inputs={"w": (c["M"], c["K"]), "x": (c["K"],)},
        outputs={"y": (c["M"],)},
        dtype=c["dtype"],
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    c = config
    return {
        "w": draw_array(rng, (c["M"], c["K"]), distribution, c["dtype"]),
        "x": draw_array(rng, (c["K"],), distribution, c["dtype"]),
    }
