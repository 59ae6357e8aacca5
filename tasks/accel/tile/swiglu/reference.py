"""Reference of accel/tile/swiglu: silu(g) * u (float64)."""

import numpy as np


def reference(g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return g / (1.0 + np.exp(-g)) * u
