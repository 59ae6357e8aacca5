"""Inputs and memory contract of accel/npu/linear: x (M, K), w (N, K), b (N) -> y (M, N)."""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    m, n, k = config["M"], config["N"], config["K"]
    return MemoryContract.pack(
        inputs={"x": (m, k), "w": (n, k), "b": (n,)}, outputs={"y": (m, n)}, dtype=config["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    m, n, k, dtype = config["M"], config["N"], config["K"], config["dtype"]
    return {
        "x": draw_array(rng, (m, k), distribution, dtype),
        "w": draw_array(rng, (n, k), distribution, dtype),
        "b": draw_array(rng, (n,), "normal", dtype),
    }
