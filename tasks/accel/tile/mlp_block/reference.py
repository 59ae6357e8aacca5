"""Reference of accel/tile/mlp_block: y = x + gelu(rmsnorm(x) * g @ w1) @ w2 (float64)."""

import numpy as np


def reference(x: np.ndarray, g: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    n = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-5) * g
    h = n @ w1
    h = 0.5 * h * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (h + 0.044715 * h**3)))
    return x + h @ w2
