"""Reference: RMS normalization over the last dimension, with a weight; differentiable.

The judge checks the gradients of x and weight that autograd takes through this function.
"""

import torch


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # Statistics in at least float32, as production RMSNorm does for float16 and bfloat16, and
    # in float64 when the judge asks for the ground truth; one rounding at the end.
    compute = torch.promote_types(x.dtype, torch.float32)
    xc = x.to(compute)
    rstd = torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xc * rstd * weight.to(compute)).to(x.dtype)
