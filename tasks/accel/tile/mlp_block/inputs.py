"""Inputs and memory contract of accel/tile/mlp_block.

Regions: x (M, D), g (D), w1 (D, F), w2 (F, D) -> y (M, D), scratch n (M, D) and h (M, F).
"""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    c = config
    return MemoryContract.pack(
        inputs={
            "x": (c["M"], c["D"]),
            "g": (c["D"],),
            "w1": (c["D"], c["F"]),
            "w2": (c["F"], c["D"]),
        },
        outputs={"y": (c["M"], c["D"])},
        scratch={"n": (c["M"], c["D"]), "h": (c["M"], c["F"])},
        dtype=c["dtype"],
        dtypes={"n": "float32", "h": "float32"},
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    c = config
    return {
        "x": draw_array(rng, (c["M"], c["D"]), distribution, c["dtype"]),
        "g": draw_array(rng, (c["D"],), distribution, c["dtype"]),
        "w1": draw_array(rng, (c["D"], c["F"]), distribution, c["dtype"]),
        "w2": draw_array(rng, (c["F"], c["D"]), distribution, c["dtype"]),
    }
