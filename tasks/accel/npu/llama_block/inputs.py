"""Inputs and memory contract of accel/npu/llama_block (DM = H * D).

Regions: x (S, DM), g1 (DM), wq, wk, wv, wo (DM, DM), g2 (DM), wg, wu (DM, F), wd (F, DM),
cos, sin (S, H, D / 2) -> y (S, DM); scratch hn, q, k, v, a, x2 (S, DM), u, gt (S, F), s (S, S).
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
        "wq": (dm, dm),
        "wk": (dm, dm),
        "wv": (dm, dm),
        "wo": (dm, dm),
        "g2": (dm,),
        "wg": (dm, f),
        "wu": (dm, f),
        "wd": (f, dm),
        "cos": (s, c["H"], c["D"] // 2),
        "sin": (s, c["H"], c["D"] // 2),
    }


def contract(config: dict) -> MemoryContract:
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
    """Weights scaled by their fan-in; the RoPE tables of S positions, repeated per head."""
    rng = np.random.default_rng(seed)
    c, dtype = config, config["dtype"]
    shapes = _inputs(c)
    out = {
        name: draw_array(rng, shape, distribution, dtype)
        for name, shape in shapes.items()
        if name not in ("cos", "sin")
    }
    dm = c["H"] * c["D"]
    for name in ("wq", "wk", "wv", "wo", "wg", "wu"):
        out[name] *= _fan_in(dm)
    out["wd"] *= _fan_in(c["F"])
    half = c["D"] // 2
    freq = 10000.0 ** (-2.0 * np.arange(half) / c["D"])
    start = int(rng.integers(0, 512))  # the block sees positions start .. start + S - 1
    angle = (start + np.arange(c["S"]))[:, None] * freq[None, :]
    shape = shapes["cos"]
    out["cos"] = np.broadcast_to(np.cos(angle)[:, None, :], shape).astype(np.float32)
    out["sin"] = np.broadcast_to(np.sin(angle)[:, None, :], shape).astype(np.float32)
    return out
