"""Reference of accel/rvv/llama_block (float64): a LLaMA-style pre-norm decoder block."""

import numpy as np


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * g


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int) -> np.ndarray:
    """Attention per head (every token attends to every token), scores scaled by 1 / sqrt(D)."""
    d = q.shape[1] // heads
    out = np.empty_like(q)
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        scores = q[:, cols] @ k[:, cols].T / np.sqrt(d)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[:, cols] = (e / e.sum(axis=1, keepdims=True)) @ v[:, cols]
    return out


def reference(
    x: np.ndarray,
    g1: np.ndarray,
    wq: np.ndarray,
    wk: np.ndarray,
    wv: np.ndarray,
    wo: np.ndarray,
    g2: np.ndarray,
    wg: np.ndarray,
    wu: np.ndarray,
    wd: np.ndarray,
) -> np.ndarray:
    """The block: y = x2 + swiglu(rmsnorm(x2) * g2), x2 = x + attention(rmsnorm(x) * g1) @ wo."""
    heads, dm = wq.shape[1], x.shape[1]
    h = _rmsnorm(x, g1)
    q, k, v = (h @ w.reshape(dm, dm) for w in (wq, wk, wv))
    x2 = x + _attention(q, k, v, heads) @ wo
    h = _rmsnorm(x2, g2)
    g = h @ wg
    return x2 + (g / (1.0 + np.exp(-g)) * (h @ wu)) @ wd
