"""Reference of accel/tile/batched_matmul: c[i] = a[i] @ b[i] (float64)."""

import numpy as np


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return np.matmul(a, b)
