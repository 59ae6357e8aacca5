"""Reference of accel/tile/gqa: attention with one key/value head per query head (float64)."""

import numpy as np


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g], g = h // (H // G)."""
    per_group = q.shape[0] // k.shape[0]
    out = np.empty_like(q)
    for h in range(q.shape[0]):
        g = h // per_group
        s = q[h] @ k[g].T / np.sqrt(q.shape[2])
        e = np.exp(s - s.max(axis=1, keepdims=True))
        out[h] = (e / e.sum(axis=1, keepdims=True)) @ v[g]
    return out
