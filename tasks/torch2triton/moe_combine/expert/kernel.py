"""Mixture-of-experts combine in Triton: one fused gather-and-reduce kernel.

Each program owns a slice of one token's output row: for each of the token's topk choices it
reads the index and the weight once, loads the matching slice of expert_out straight from where
it lies, and accumulates in float32 registers. The gathered rows never go to memory (eager
PyTorch converts expert_out to float32, gathers, multiplies and sums, writing and re-reading
tokens * topk rows at each step), and there is one launch instead of five or six.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def combine_kernel(
    src_ptr, index_ptr, weights_ptr, out_ptr, topk, dim, BLOCK: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < dim
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, topk):
        src_row = tl.load(index_ptr + token * topk + j)
        w = tl.load(weights_ptr + token * topk + j).to(tl.float32)
        row = tl.load(src_ptr + src_row * dim + cols, mask=mask, other=0.0)
        acc += w * row.to(tl.float32)
    tl.store(out_ptr + token * dim + cols, acc.to(out_ptr.dtype.element_ty), mask=mask)


def moe_combine(
    expert_out: torch.Tensor, index: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """out[t] = sum_j weights[t, j] * expert_out[index[t, j]]; (tokens, dim) in expert_out's dtype."""
    tokens, topk = index.shape
    dim = expert_out.shape[1]
    out = torch.empty((tokens, dim), dtype=expert_out.dtype, device=expert_out.device)
    block = min(2048, max(128, triton.next_power_of_2(dim)))
    combine_kernel[(tokens, triton.cdiv(dim, block))](
        expert_out, index, weights, out, topk, dim,
        BLOCK=block, num_warps=4 if block <= 1024 else 8,
    )
    return out
