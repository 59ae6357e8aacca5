"""Inputs and memory contract of accel/npu/t5_block (DM = H * D).

Regions: x (S, DM), enc (T, DM), g1 (DM), wq1, wk1, wv1 (DM, H, D), wo1 (DM, DM), g2 (DM),
wq2, wk2, wv2 (DM, H, D), wo2 (DM, DM), g3 (DM), wi (DM, F), wf (F, DM) -> y (S, DM); scratch
hn, q, k,
v, a, x2, x3 (S, DM), kc, vc (T, DM), hf (S, F), ss (S, S), sc (S, T).
"""

import math

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array

SQUARE = ("wq1", "wk1", "wv1", "wo1", "wq2", "wk2", "wv2", "wo2")


def _inputs(c: dict) -> dict[str, tuple[int, ...]]:
    s, t, dm, f = c["S"], c["T"], c["H"] * c["D"], c["F"]
    shapes: dict[str, tuple[int, ...]] = {"x": (s, dm), "enc": (t, dm), "g1": (dm,)}
    heads = (dm, c["H"], c["D"])  # the projections to heads: laid out as (DM, DM)
    shapes.update({"wq1": heads, "wk1": heads, "wv1": heads, "wo1": (dm, dm), "g2": (dm,)})
    shapes.update({"wq2": heads, "wk2": heads, "wv2": heads, "wo2": (dm, dm)})
    shapes.update({"g3": (dm,), "wi": (dm, f), "wf": (f, dm)})
    return shapes


def contract(config: dict) -> MemoryContract:
    c = config
    s, t, dm, f = c["S"], c["T"], c["H"] * c["D"], c["F"]
    scratch = {name: (s, dm) for name in ("hn", "q", "k", "v", "a", "x2", "x3")}
    scratch.update({"kc": (t, dm), "vc": (t, dm), "hf": (s, f), "ss": (s, s), "sc": (s, t)})
    return MemoryContract.pack(
        inputs=_inputs(c), outputs={"y": (s, dm)}, scratch=scratch, dtype=c["dtype"]
    )


def _fan_in(n: int) -> float:
    """A power of two near 1 / sqrt(n): activations stay O(1), values stay exact."""
    return 2.0 ** -round(math.log2(math.sqrt(n)))


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """Weights scaled by their fan-in (query weights once more: T5 leaves scores unscaled)."""
    rng = np.random.default_rng(seed)
    c, dtype = config, config["dtype"]
    out = {name: draw_array(rng, shape, distribution, dtype) for name, shape in _inputs(c).items()}
    dm = c["H"] * c["D"]
    for name in (*SQUARE, "wi"):
        out[name] *= _fan_in(dm)
    for name in ("wq1", "wq2"):
        out[name] *= _fan_in(c["D"])
    out["wf"] *= _fan_in(c["F"])
    return out
