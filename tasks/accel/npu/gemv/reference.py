"""Reference of accel/npu/gemv (float64)."""

import numpy as np


def reference(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return w @ x
