"""Inputs and memory contract of accel/tile/colmax: x (ROWS, COLS) -> y (COLS)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    rows, cols = config["ROWS"], config["COLS"]
    return MemoryContract.pack(
        inputs={"x": (rows, cols)}, outputs={"y": (cols,)}, dtype=config["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    shape = (config["ROWS"], config["COLS"])
    return {"x": draw_array(rng, shape, distribution, config["dtype"])}
