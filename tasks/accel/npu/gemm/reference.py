"""Reference of accel/npu/gemm (float64)."""

import numpy as np


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x @ w
