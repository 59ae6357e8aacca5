"""Reference of accel/npu/swiglu (float64): y = silu(x @ wg) * (x @ wu)."""

import numpy as np


def reference(x: np.ndarray, wg: np.ndarray, wu: np.ndarray) -> np.ndarray:
    g = x @ wg
    return g / (1.0 + np.exp(-g)) * (x @ wu)
