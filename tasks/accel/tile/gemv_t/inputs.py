"""Inputs and memory contract of accel/tile/gemv_t: w (K, N), x (K) -> y (N)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order."""
    k, n = config["K"], config["N"]
    return MemoryContract.pack(
        inputs={"w": (k, n), "x": (k,)}, outputs={"y": (n,)}, dtype=config["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, exact in the config's dtype."""
    rng = np.random.default_rng(seed)
    k, n, dtype = config["K"], config["N"], config["dtype"]
    return {
        "w": draw_array(rng, (k, n), distribution, dtype),
        "x": draw_array(rng, (k,), distribution, dtype),
    }
