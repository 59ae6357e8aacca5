"""Inputs and memory contract of accel/npu/swiglu.

Regions: x (M, D), wg (D, F), wu (D, F) -> y (M, F); scratch u (M, F) in the config's dtype.
"""

import math

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _shapes(c: dict) -> dict[str, tuple[int, ...]]:
    m, d, f = c["M"], c["D"], c["F"]
    return {"x": (m, d), "wg": (d, f), "wu": (d, f)}


def contract(config: dict) -> MemoryContract:
    c = config
    return MemoryContract.pack(
        inputs=_shapes(c),
        outputs={"y": (c["M"], c["F"])},
        scratch={"u": (c["M"], c["F"])},
        dtype=c["dtype"],
    )


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c, dtype = config, config["dtype"]
    out = {name: draw_array(rng, shape, distribution, dtype) for name, shape in _shapes(c).items()}
    scale = 2.0 ** -round(math.log2(math.sqrt(c["D"])))  # exact: activations stay O(1)
    out["wg"] *= scale
    out["wu"] *= scale
    return out
