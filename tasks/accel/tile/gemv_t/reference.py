"""Reference of accel/tile/gemv_t: the transposed matrix-vector product (float64)."""

import numpy as np


def reference(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return x @ w
