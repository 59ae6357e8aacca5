"""Reference of accel/npu/depthwise_conv (float64): per-channel NHWC convolution, stride 1."""

import numpy as np


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """y[oh, ow, c] = sum_{kh, kw} x[oh + kh, ow + kw, c] * w[kh, kw, c]."""
    kh, kw = w.shape[:2]
    oh, ow = x.shape[0] - kh + 1, x.shape[1] - kw + 1
    y = np.zeros((oh, ow, x.shape[2]))
    for i in range(kh):
        for j in range(kw):
            y += x[i : i + oh, j : j + ow] * w[i, j]
    return y
