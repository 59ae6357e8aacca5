"""Element semantics shared by every platform's ISA table, each defined once.

Scalar float helpers and NumPy operations on whole vectors and tiles.

IEEE-754 behaviour where Python's own would differ (NaN through max/min, division by zero,
square roots of negatives) is spelled out here, so that every platform computes the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def same(a: Any) -> Any:
    """The operand itself (moves and immediates); the simulator inlines it."""
    return a


def fmax(a: float, b: float) -> float:
    """Max with NaN propagation."""
    return math.nan if a != a or b != b else max(a, b)


def fmin(a: float, b: float) -> float:
    """Min with NaN propagation."""
    return math.nan if a != a or b != b else min(a, b)


def fsqrt(a: float) -> float:
    """Square root; NaN for negative inputs."""
    return math.sqrt(a) if a >= 0 else math.nan


def fdiv(x: float, y: float) -> float:
    """Division with IEEE-754 results for a zero divisor."""
    if y == 0:
        if x != x or x == 0:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def ftoi(a: float) -> int:
    """Float to a 32-bit integer: truncated, saturated, NaN to 0."""
    if a != a:
        return 0
    return int(max(min(a, float(INT_MAX)), float(INT_MIN)))


class Elementwise:
    """`d <- ufunc(a, b)` element-wise, written in place; generated code calls `ufunc` itself."""

    def __init__(self, ufunc: Any) -> None:
        self.ufunc = ufunc
        self.__name__ = f"v_{ufunc.__name__}"

    def __call__(self, d: np.ndarray, a: np.ndarray, b: Any) -> None:
        """Apply it."""
        self.ufunc(a, b, out=d)


def elementwise(ufunc: Any) -> Elementwise:
    """`d <- ufunc(a, b)` element-wise, written in place."""
    return Elementwise(ufunc)


def to_bf16(d: np.ndarray, a: np.ndarray) -> None:
    """Round to bfloat16 (nearest even), into the destination's dtype."""
    d[...] = a.astype(ml_dtypes.bfloat16)


def iota(d: np.ndarray) -> None:
    """0, 1, 2, ... into the destination."""
    d[...] = np.arange(d.size, dtype=np.float32)


def reduce_sum(a: np.ndarray) -> float:
    """Exactly rounded sum (fsum), independent of the order of the lanes."""
    return math.fsum(a.tolist())


def reduce_max(a: np.ndarray) -> float:
    """Largest element (NaN if any is NaN): the ufunc `a.max()` calls, without its wrapper."""
    return float(np.maximum.reduce(a))


#: Comparison conditions of compare instructions, by their mnemonic suffix.
COMPARE: dict[str, Callable[..., Any]] = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def compare(mask: np.ndarray, a: np.ndarray, b: np.ndarray | float, cond: str) -> None:
    """`mask <- a <cond> b` element-wise."""
    COMPARE[cond](a, b, out=mask)


def select(d: np.ndarray, mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """`d <- a where mask else b`."""
    np.copyto(d, np.where(mask, a, b))


def copy(d: np.ndarray, a: np.ndarray) -> None:
    """`d <- a`."""
    np.copyto(d, a)
