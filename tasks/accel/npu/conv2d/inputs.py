"""Inputs and memory contract of accel/npu/conv2d.

Regions: x (H, W, CI), w (KH, KW, CI, CO) -> y (OH, OW, CO), OH = H - KH + 1, OW = W - KW + 1.
"""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _shapes(c: dict) -> dict[str, tuple[int, ...]]:
    oh, ow = c["H"] - c["KH"] + 1, c["W"] - c["KW"] + 1
    return {
        "x": (c["H"], c["W"], c["CI"]),
        "w": (c["KH"], c["KW"], c["CI"], c["CO"]),
        "y": (oh, ow, c["CO"]),
    }


def contract(config: dict) -> MemoryContract:
    s = _shapes(config)
    return MemoryContract.pack(
        inputs={"x": s["x"], "w": s["w"]}, outputs={"y": s["y"]}, dtype=config["dtype"]
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = _shapes(config)
    return {
        "x": draw_array(rng, s["x"], distribution, config["dtype"]),
        "w": draw_array(rng, s["w"], distribution, config["dtype"]),
    }
