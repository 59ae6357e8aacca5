"""Inputs and memory contract of accel/npu/rope.

Regions: x (ROWS, COLS), cos (ROWS, COLS / 2), sin (ROWS, COLS / 2) -> y (ROWS, COLS).
"""

import numpy as np

from gauntlet.accel import MemoryContract
from gauntlet.judge.asm_backend import draw_array


def contract(config: dict) -> MemoryContract:
    rows, cols = config["ROWS"], config["COLS"]
    half = (rows, cols // 2)
    return MemoryContract.pack(
        inputs={"x": (rows, cols), "cos": half, "sin": half},
        outputs={"y": (rows, cols)},
        dtype=config["dtype"],
    )


def _exact(values: np.ndarray, dtype: str) -> np.ndarray:
    out = values.astype(np.float32)
    if dtype == "bfloat16":
        import ml_dtypes

        out = out.astype(ml_dtypes.bfloat16).astype(np.float32)
    return out


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, np.ndarray]:
    """x from `distribution`; the tables of row position p and frequency 10000^(-2i / COLS)."""
    rng = np.random.default_rng(seed)
    rows, cols, dtype = config["ROWS"], config["COLS"], config["dtype"]
    offset = int(rng.integers(0, 512))
    freq = 10000.0 ** (-2.0 * np.arange(cols // 2) / cols)
    angle = (offset + np.arange(rows))[:, None] * freq[None, :]
    return {
        "x": draw_array(rng, (rows, cols), distribution, dtype),
        "cos": _exact(np.cos(angle), dtype),
        "sin": _exact(np.sin(angle), dtype),
    }
