"""Inputs and memory contract of accel/rvv/llama_block (DM = H * D).

Regions: x (S, DM), g1 (DM), wq, wk, wv (DM, H, D: the (DM, DM) matrices, columns by head),
wo (DM, DM), g2 (DM), wg, wu (DM, F), wd (F, DM)
-> y (S, DM); scratch hn, q, k, v, a, x2 (S, DM), u, gt (S, F), s (S, S).
"""

import math

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def _inputs(c: dict) -> dict[str, tuple[int, ...]]:
    s, dm, f = c["S"], c["H"] * c["D"], c["F"]
    return {
        "x": (s, dm),
        "g1": (dm,),
        "wq": (dm, c["H"], c["D"]),
        "wk": (dm, c["H"], c["D"]),
        "wv": (dm, c["H"], c["D"]),
        "wo": (dm, dm),
        "g2": (dm,),
        "wg": (dm, f),
        "wu": (dm, f),
        "wd": (f, dm),
    }


def contract(config: dict) -> MemoryContract:
    """The regions, in calling-convention order (the first 16 arrive in p0..p15)."""
    c = config
    s, dm, f = c["S"], c["H"] * c["D"], c["F"]
    scratch = {name: (s, dm) for name in ("hn", "q", "k", "v", "a", "x2")}
    scratch.update({"u": (s, f), "gt": (s, f), "s": (s, s)})
    return MemoryContract.pack(
        inputs=_inputs(c), outputs={"y": (s, dm)}, scratch=scratch, dtype=c["dtype"]
    )


def _fan_in(n: int) -> float:
    """A power of two near 1 / sqrt(n): activations stay O(1), values stay exact."""
    return 2.0 ** -round(math.log2(math.sqrt(n)))


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Inputs drawn from `distribution`, the weights scaled by their fan-in."""
    rng = np.random.default_rng(seed)
    c, dtype = config, config["dtype"]
    out = {name: draw_array(rng, shape, distribution, dtype) for name, shape in _inputs(c).items()}
    dm = c["H"] * c["D"]
    for name in ("wq", "wk", "wv", "wo", "wg", "wu"):
        out[name] *= _fan_in(dm)
    out["wd"] *= _fan_in(c["F"])
    return out
