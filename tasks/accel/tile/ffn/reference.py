"""Reference of accel/tile/ffn: y = gelu(x @ w1 + b1) @ w2 + b2, GELU in tanh form (float64)."""

import numpy as np


def reference(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    """The expected outputs, in float64."""
    h = x @ w1 + b1
    h = 0.5 * h * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (h + 0.044715 * h**3)))
    return h @ w2 + b2
