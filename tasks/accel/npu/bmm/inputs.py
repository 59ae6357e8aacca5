"""Inputs and memory contract of accel/npu/bmm: x (BATCH, M, K) @ w (BATCH, K, N)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    b, m, n, k = config["BATCH"], config["M"], config["N"], config["K"]
    return MemoryContract.pack(
        inputs={"x": (b, m, k), "w": (b, k, n)}, outputs={"y": (b, m, n)}, dtype=config["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, m, n, k, dtype = config["BATCH"], config["M"], config["N"], config["K"], config["dtype"]
    return {
        "x": draw_array(rng, (b, m, k), distribution, dtype),
        "w": draw_array(rng, (b, k, n), distribution, dtype),
    }
