"""Inputs and memory contract of accel/tile/stencil: x (N), w (STEPS) -> y (N)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    return MemoryContract.pack(
        inputs={"x": (config["N"],), "w": (config["STEPS"],)},
        outputs={"y": (config["N"],)},
        dtype=config["dtype"],
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """The vector from `distribution`; the rates |uniform| in [0, 1), exact in the dtype."""
    rng = np.random.default_rng(seed)
    return {
        "x": draw_array(rng, (config["N"],), distribution, config["dtype"]),
        "w": np.abs(draw_array(rng, (config["STEPS"],), "uniform", config["dtype"])),
    }
