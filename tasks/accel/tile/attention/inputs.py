"""Inputs and memory contract of accel/tile/attention.

Regions: q (M, D), k (N, D), v (N, D) -> o (M, D), scratch s (M, N).
"""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    c = config
    return MemoryContract.pack(
        inputs={"q": (c["M"], c["D"]), "k": (c["N"], c["D"]), "v": (c["N"], c["D"])},
        outputs={"o": (c["M"], c["D"])},
        dtype=c["dtype"],
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    c = config
    return {
        "q": draw_array(rng, (c["M"], c["D"]), distribution, c["dtype"]),
        "k": draw_array(rng, (c["N"], c["D"]), distribution, c["dtype"]),
        "v": draw_array(rng, (c["N"], c["D"]), distribution, c["dtype"]),
    }
