"""Reference of accel/npu/llama_block (float64): a LLaMA-style pre-norm decoder block."""

import numpy as np


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * g


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate-half RoPE of every head: cos, sin (S, H, D / 2)."""
    s, heads, half = cos.shape
    xh = x.reshape(s, heads, 2 * half)
    x1, x2 = xh[..., :half], xh[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).reshape(x.shape)


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int) -> np.ndarray:
    """Causal attention per head, scores scaled by 1 / sqrt(D)."""
    s, dm = q.shape
    d = dm // heads
    out = np.empty_like(q)
    causal = np.tril(np.ones((s, s), dtype=bool))
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        scores = np.where(causal, q[:, cols] @ k[:, cols].T / np.sqrt(d), -np.inf)
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
    cos: np.ndarray,
    sin: np.ndarray,
) -> np.ndarray:
    """y = x2 + swiglu(rmsnorm(x2) * g2) with x2 = x + attention(rmsnorm(x) * g1) @ wo."""
    heads = cos.shape[1]
    h = _rmsnorm(x, g1)
    q, k = _rope(h @ wq, cos, sin), _rope(h @ wk, cos, sin)
    x2 = x + _attention(q, k, h @ wv, heads) @ wo
    h = _rmsnorm(x2, g2)
    g = h @ wg
    return x2 + (g / (1.0 + np.exp(-g)) * (h @ wu)) @ wd
