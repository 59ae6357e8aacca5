"""Mixture-of-experts combine in Triton: a straightforward first version, gather then reduce.

- gather_kernel copies, for every (token, choice), the row expert_out[index[token, choice]]
  into a (tokens, topk, dim) buffer, in order.
- combine_kernel then sums each token's topk rows of that buffer, weighted, in float32.
Each step is simple and easy to check alone; the gathered rows make a round trip through memory.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def gather_kernel(src_ptr, index_ptr, dst_ptr, dim, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < dim
    src_row = tl.load(index_ptr + row)
    values = tl.load(src_ptr + src_row * dim + cols, mask=mask)
    tl.store(dst_ptr + row * dim + cols, values, mask=mask)


@triton.jit
def combine_kernel(gathered_ptr, weights_ptr, out_ptr, topk, dim, BLOCK: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < dim
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, topk):
        w = tl.load(weights_ptr + token * topk + j).to(tl.float32)
        row = tl.load(gathered_ptr + (token * topk + j) * dim + cols, mask=mask, other=0.0)
        acc += w * row.to(tl.float32)
    tl.store(out_ptr + token * dim + cols, acc.to(out_ptr.dtype.element_ty), mask=mask)


def moe_combine(
    expert_out: torch.Tensor, index: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """out[t] = sum_j weights[t, j] * expert_out[index[t, j]]; (tokens, dim) in expert_out's dtype."""
    tokens, topk = index.shape
    dim = expert_out.shape[1]
    gathered = torch.empty((tokens, topk, dim), dtype=expert_out.dtype, device=expert_out.device)
    gather_kernel[(tokens * topk, triton.cdiv(dim, BLOCK))](
        expert_out, index, gathered, dim, BLOCK=BLOCK
    )
    out = torch.empty((tokens, dim), dtype=expert_out.dtype, device=expert_out.device)
    combine_kernel[(tokens, triton.cdiv(dim, BLOCK))](
        gathered, weights, out, topk, dim, BLOCK=BLOCK
    )
    return out
