"""Causal depthwise conv1d + SiLU, forward and backward, in Triton.

Forward: one streaming kernel (taps as scalars, shifted loads of x that hit L1, SiLU in float32).
Backward: one kernel per (batch, channel, block of positions) recomputes the pre-activation a
(cheaper than storing it) at the block's positions and the width - 1 after it, forms
g = dy * silu'(a), writes dx = sum_k w[k] * g[t + width - 1 - k], and emits the block's partial
sums of dweight and dbias; a small kernel adds the partial sums per channel in a fixed order (no
atomics: bitwise reproducible). x and dy are read once from memory. Eager autograd runs a
cuDNN grouped-convolution backward (data and weight), a bias reduction and the SiLU backward,
each through memory.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
BLOCK_L = 1024
#: Largest filter width, as a power of two for the partial-sum tiles.
MAX_WIDTH = 4


@triton.jit
def conv_forward_kernel(x_ptr, w_ptr, b_ptr, y_ptr, dim, seqlen, width, BLOCK_L: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    d = row % dim
    t = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    in_seq = t < seqlen
    base = row * seqlen
    acc = tl.zeros([BLOCK_L], dtype=tl.float32) + tl.load(b_ptr + d).to(tl.float32)
    for k in range(0, width):
        w = tl.load(w_ptr + d * width + k).to(tl.float32)
        src = t - (width - 1) + k
        acc += w * tl.load(x_ptr + base + src, mask=in_seq & (src >= 0), other=0.0).to(tl.float32)
    y = acc / (1.0 + tl.exp2(-acc * LOG2E))
    tl.store(y_ptr + base + t, y.to(y_ptr.dtype.element_ty), mask=in_seq)


@triton.jit
def _grad_pre_activation(x_ptr, w_ptr, dy_ptr, base, d, s, seqlen, width, bias):
    """g = dy * silu'(a) at positions s (zero past the end)."""
    in_seq = s < seqlen
    # A block from the start: compiled Triton (unlike its interpreter) rejects a loop-carried
    # value that turns from a scalar into a block.
    a = tl.zeros(s.shape, dtype=tl.float32) + bias
    for k in range(0, width):
        w = tl.load(w_ptr + d * width + k).to(tl.float32)
        src = s - (width - 1) + k
        a += w * tl.load(x_ptr + base + src, mask=in_seq & (src >= 0), other=0.0).to(tl.float32)
    sig = 1.0 / (1.0 + tl.exp2(-a * LOG2E))
    dy = tl.load(dy_ptr + base + s, mask=in_seq, other=0.0).to(tl.float32)
    return dy * sig * (1.0 + a * (1.0 - sig))


@triton.jit
def conv_backward_kernel(
    x_ptr, w_ptr, b_ptr, dy_ptr, dx_ptr, dw_part_ptr, db_part_ptr, dim, seqlen, width, n_blocks,
    BLOCK_L: tl.constexpr, MAX_WIDTH: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    d = row % dim
    t = blk * BLOCK_L + tl.arange(0, BLOCK_L)
    in_seq = t < seqlen
    base = row * seqlen
    bias = tl.load(b_ptr + d).to(tl.float32)
    g0 = _grad_pre_activation(x_ptr, w_ptr, dy_ptr, base, d, t, seqlen, width, bias)
    # dx[t] = sum_j w[width - 1 - j] * g[t + j]
    dx = g0 * tl.load(w_ptr + d * width + width - 1).to(tl.float32)
    for j in range(1, width):
        gj = _grad_pre_activation(x_ptr, w_ptr, dy_ptr, base, d, t + j, seqlen, width, bias)
        dx += gj * tl.load(w_ptr + d * width + width - 1 - j).to(tl.float32)
    tl.store(dx_ptr + base + t, dx.to(dx_ptr.dtype.element_ty), mask=in_seq)
    # This block's share of dweight[d, k] = sum_t g[t] * x[t - (width - 1) + k] and dbias[d].
    part = row * n_blocks + blk
    ks = tl.arange(0, MAX_WIDTH)
    dw = tl.zeros([MAX_WIDTH], dtype=tl.float32)
    for k in range(0, width):
        src = t - (width - 1) + k
        xv = tl.load(x_ptr + base + src, mask=in_seq & (src >= 0), other=0.0).to(tl.float32)
        dw += tl.where(ks == k, tl.sum(g0 * xv, axis=0), 0.0)
    tl.store(dw_part_ptr + part * MAX_WIDTH + ks, dw)
    tl.store(db_part_ptr + part, tl.sum(g0, axis=0))


@triton.jit
def sum_parts_kernel(
    dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, batch, dim, n_blocks, width,
    BLOCK_P: tl.constexpr, MAX_WIDTH: tl.constexpr,
):
    d = tl.program_id(0).to(tl.int64)
    ks = tl.arange(0, MAX_WIDTH)
    dw = tl.zeros([BLOCK_P, MAX_WIDTH], dtype=tl.float32)
    db = tl.zeros([BLOCK_P], dtype=tl.float32)
    for b in range(0, batch):
        first = (b * dim + d) * n_blocks
        for start in range(0, n_blocks, BLOCK_P):
            p = start + tl.arange(0, BLOCK_P)
            pm = p < n_blocks
            dw += tl.load(
                dw_part_ptr + (first + p)[:, None] * MAX_WIDTH + ks[None, :], mask=pm[:, None], other=0.0
            )
            db += tl.load(db_part_ptr + first + p, mask=pm, other=0.0)
    tl.store(dw_ptr + d * width + ks, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=ks < width)
    tl.store(db_ptr + d, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty))


def _block(seqlen: int) -> int:
    return min(BLOCK_L, max(64, triton.next_power_of_2(seqlen)))


class CausalConv1dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, dim, seqlen = x.shape
        width = weight.shape[1]
        y = torch.empty_like(x)
        block = _block(seqlen)
        conv_forward_kernel[(batch * dim, triton.cdiv(seqlen, block))](
            x, weight, bias, y, dim, seqlen, width, BLOCK_L=block, num_warps=4,
        )
        ctx.save_for_backward(x, weight, bias)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, weight, bias = ctx.saved_tensors
        dy = dy.contiguous()
        batch, dim, seqlen = x.shape
        width = weight.shape[1]
        block = _block(seqlen)
        n_blocks = triton.cdiv(seqlen, block)
        dx = torch.empty_like(x)
        dw_part = torch.empty((batch * dim * n_blocks, MAX_WIDTH), dtype=torch.float32, device=x.device)
        db_part = torch.empty((batch * dim * n_blocks,), dtype=torch.float32, device=x.device)
        conv_backward_kernel[(batch * dim, n_blocks)](
            x, weight, bias, dy, dx, dw_part, db_part, dim, seqlen, width, n_blocks,
            BLOCK_L=block, MAX_WIDTH=MAX_WIDTH, num_warps=4,
        )
        dw = torch.empty_like(weight)
        db = torch.empty_like(bias)
        sum_parts_kernel[(dim,)](
            dw_part, db_part, dw, db, batch, dim, n_blocks, width,
            BLOCK_P=min(64, triton.next_power_of_2(n_blocks)), MAX_WIDTH=MAX_WIDTH, num_warps=1,
        )
        return dx, dw, db


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """silu(causal depthwise conv1d(x, weight) + bias); differentiable in x, weight and bias."""
    return CausalConv1dFunction.apply(x, weight, bias)
