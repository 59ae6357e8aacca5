"""Reference of accel/npu/flash_attention (float64): o = softmax(q @ k^T / sqrt(D)) @ v."""

import numpy as np


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v
