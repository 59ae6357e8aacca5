"""Reference of accel/tile/linear: y = x @ w + b (float64)."""

import numpy as np


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return x @ w + b
