"""Reference of accel/tile/attention: o = softmax(q @ k^T / sqrt(D)) @ v (float64)."""

import numpy as np


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The expected outputs, in float64."""
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v
