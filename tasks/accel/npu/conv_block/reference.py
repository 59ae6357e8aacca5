"""Reference of accel/npu/conv_block (float64): two valid NHWC convolutions with bias and ReLU."""

import numpy as np


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    kh, kw = w.shape[:2]
    oh, ow = x.shape[0] - kh + 1, x.shape[1] - kw + 1
    y = np.zeros((oh, ow, w.shape[3]))
    for i in range(kh):
        for j in range(kw):
            y += x[i : i + oh, j : j + ow] @ w[i, j]
    return y


def reference(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    """y = relu(conv(relu(conv(x, w1) + b1), w2) + b2)."""
    h = np.maximum(_conv(x, w1) + b1, 0.0)
    return np.maximum(_conv(h, w2) + b2, 0.0)
