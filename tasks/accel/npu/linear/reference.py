"""Reference of accel/npu/linear (float64): x @ w^T + b."""

import numpy as np


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return x @ w.T + b
