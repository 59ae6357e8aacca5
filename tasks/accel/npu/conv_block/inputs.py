"""Inputs and memory contract of accel/npu/conv_block.

Regions: x (H, W, CI), w1 (KH, KW, CI, CM), b1 (CM), w2 (KH, KW, CM, CO), b2 (CO)
-> y (OH, OW, CO); scratch h (HM, WM, CM) float32, with HM = H - KH + 1, WM = W - KW + 1,
OH = HM - KH + 1, OW = WM - KW + 1.
"""

import math

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _sizes(c: dict) -> tuple[int, int, int, int]:
    h1, w1 = c["H"] - c["KH"] + 1, c["W"] - c["KW"] + 1
    return h1, w1, h1 - c["KH"] + 1, w1 - c["KW"] + 1


def _inputs(c: dict) -> dict[str, tuple[int, ...]]:
    kh, kw, ci, cm, co = c["KH"], c["KW"], c["CI"], c["CM"], c["CO"]
    return {
        "x": (c["H"], c["W"], ci),
        "w1": (kh, kw, ci, cm),
        "b1": (cm,),
        "w2": (kh, kw, cm, co),
        "b2": (co,),
    }


def contract(config: dict) -> MemoryContract:
    c = config
    h1, w1, oh, ow = _sizes(c)
    return MemoryContract.pack(
        inputs=_inputs(c),
        outputs={"y": (oh, ow, c["CO"])},
        scratch={"h": (h1, w1, c["CM"])},
        dtype=c["dtype"],
        dtypes={"h": "float32"},
    )


def _fan_in(n: int) -> float:
    """A power of two near 1 / sqrt(n): activations stay O(1), values stay exact."""
    return 2.0 ** -round(math.log2(math.sqrt(n)))


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c, dtype = config, config["dtype"]
    out = {name: draw_array(rng, shape, distribution, dtype) for name, shape in _inputs(c).items()}
    out["w1"] *= _fan_in(c["KH"] * c["KW"] * c["CI"])
    out["w2"] *= _fan_in(c["KH"] * c["KW"] * c["CM"])
    return out
