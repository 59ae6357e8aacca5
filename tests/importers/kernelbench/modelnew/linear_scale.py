"""A KernelBench-format solution of the fixture 1_Linear_Scale: `ModelNew` with a Triton kernel.

This project's own, written as KernelBench solutions are: the layers of `Model` under the same
names, `forward` launching the kernel on them.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_scale(
    x_ptr, w_ptr, b_ptr, out_ptr, n, k, scale, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, k, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * k + ks, mask=ks < k, other=0.0).to(tl.float32)
        w_mask = (cols[:, None] < n) & (ks[None, :] < k)
        w = tl.load(w_ptr + cols[:, None] * k + ks[None, :], mask=w_mask, other=0.0).to(tl.float32)
        acc += tl.sum(w * x[None, :], axis=1)
    b = tl.load(b_ptr + cols, mask=cols < n, other=0.0).to(tl.float32)
    out = (acc + b) * scale
    tl.store(out_ptr + row * n + cols, out.to(out_ptr.dtype.element_ty), mask=cols < n)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        rows, k = x.shape
        n = self.linear.weight.shape[0]
        out = torch.empty((rows, n), dtype=x.dtype, device=x.device)
        block_n = triton.next_power_of_2(n)
        _linear_scale[(rows,)](
            x,
            self.linear.weight,
            self.linear.bias,
            out,
            n,
            k,
            self.scale,
            BLOCK_N=block_n,
            BLOCK_K=16,
        )
        return out
