"""Inputs and memory contract of accel/npu/gemv: w (M, K) @ x (K) -> y (M)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    m, k = config["M"], config["K"]
    return MemoryContract.pack(
        inputs={"w": (m, k), "x": (k,)}, outputs={"y": (m,)}, dtype=config["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    m, k, dtype = config["M"], config["K"], config["dtype"]
    return {
        "w": draw_array(rng, (m, k), distribution, dtype),
        "x": draw_array(rng, (k,), distribution, dtype),
    }
