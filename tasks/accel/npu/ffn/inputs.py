"""Inputs and memory contract of accel/npu/ffn.

Regions: x (M, D), w1 (D, F), b1 (F), w2 (F, D), b2 (D) -> y (M, D); scratch h (M, F) float32.
"""

import math

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _shapes(c: dict) -> dict[str, tuple[int, ...]]:
    m, d, f = c["M"], c["D"], c["F"]
    return {"x": (m, d), "w1": (d, f), "b1": (f,), "w2": (f, d), "b2": (d,)}


def contract(config: dict) -> MemoryContract:
    c = config
    return MemoryContract.pack(
        inputs=_shapes(c),
        outputs={"y": (c["M"], c["D"])},
        scratch={"h": (c["M"], c["F"])},
        dtype=c["dtype"],
        dtypes={"h": "float32"},
    )


def _fan_in(n: int) -> float:
    """A power of two near 1 / sqrt(n): keeps activations O(1) and values exact."""
    return 2.0 ** -round(math.log2(math.sqrt(n)))


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c, dtype = config, config["dtype"]
    out = {name: draw_array(rng, shape, distribution, dtype) for name, shape in _shapes(c).items()}
    out["w1"] *= _fan_in(c["D"])
    out["w2"] *= _fan_in(c["F"])
    return out
