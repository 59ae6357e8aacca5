"""Reference of accel/npu/rope (float64): rotate-half rotary position embedding."""

import numpy as np


def reference(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """y = [x1 * cos - x2 * sin, x2 * cos + x1 * sin] with x = [x1, x2] split at COLS / 2."""
    half = x.shape[1] // 2
    x1, x2 = x[:, :half], x[:, half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)
