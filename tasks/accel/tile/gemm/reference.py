"""Reference of accel/tile/gemm: c = a @ b (float64)."""

import numpy as np


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return a @ b
