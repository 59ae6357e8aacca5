"""Reference of accel/tile/gemv: y = w @ x (float64)."""

import numpy as np


def reference(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return w @ x
