"""Reference of accel/npu/conv2d (float64): valid NHWC convolution, stride 1."""

import numpy as np


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """y[oh, ow, o] = sum_{kh, kw, c} x[oh + kh, ow + kw, c] * w[kh, kw, c, o]."""
    kh, kw = w.shape[:2]
    oh, ow = x.shape[0] - kh + 1, x.shape[1] - kw + 1
    y = np.zeros((oh, ow, w.shape[3]))
    for i in range(kh):
        for j in range(kw):
            y += x[i : i + oh, j : j + ow] @ w[i, j]
    return y
