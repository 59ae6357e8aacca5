"""Reference of accel/tile/gelu: GELU, tanh form (float64)."""

import numpy as np


def reference(x: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
