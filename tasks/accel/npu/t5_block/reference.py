"""Reference of accel/npu/t5_block (float64): a T5-style pre-norm decoder block."""

import numpy as np


def _rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * g


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int, causal: bool) -> np.ndarray:
    """Attention per head, scores unscaled (T5)."""
    d = q.shape[1] // heads
    out = np.empty_like(q)
    allowed = np.tril(np.ones((q.shape[0], k.shape[0]), dtype=bool)) if causal else True
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        scores = np.where(allowed, q[:, cols] @ k[:, cols].T, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[:, cols] = (e / e.sum(axis=1, keepdims=True)) @ v[:, cols]
    return out


def reference(
    x: np.ndarray,
    enc: np.ndarray,
    g1: np.ndarray,
    wq1: np.ndarray,
    wk1: np.ndarray,
    wv1: np.ndarray,
    wo1: np.ndarray,
    g2: np.ndarray,
    wq2: np.ndarray,
    wk2: np.ndarray,
    wv2: np.ndarray,
    wo2: np.ndarray,
    g3: np.ndarray,
    wi: np.ndarray,
    wf: np.ndarray,
) -> np.ndarray:
    """Causal self-attention, cross-attention to enc, ReLU feed-forward; each with residual."""
    heads, dm = wq1.shape[1], x.shape[1]
    wq1, wk1, wv1, wq2, wk2, wv2 = (w.reshape(dm, dm) for w in (wq1, wk1, wv1, wq2, wk2, wv2))
    h = _rmsnorm(x, g1)
    x2 = x + _attention(h @ wq1, h @ wk1, h @ wv1, heads, causal=True) @ wo1
    h = _rmsnorm(x2, g2)
    x3 = x2 + _attention(h @ wq2, enc @ wk2, enc @ wv2, heads, causal=False) @ wo2
    h = _rmsnorm(x3, g3)
    return x3 + np.maximum(h @ wi, 0.0) @ wf
