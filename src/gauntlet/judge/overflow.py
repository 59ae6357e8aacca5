"""Exact values past an output dtype's range: correctly rounded, they *are* infinities.

Shared by the reference worker (the baseline's own errors) and the orchestrator's comparison,
which must agree on which elements no kernel can hold finitely. No dependencies beyond torch,
which the worker imports lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def rounds_to_infinity(reference: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The mask of finite `reference` values that `dtype` can hold only as +-Inf."""
    import torch

    finite = torch.isfinite(reference)
    if not dtype.is_floating_point or dtype == torch.float64:
        return torch.zeros_like(finite)
    return finite & torch.isinf(reference.to(dtype))
