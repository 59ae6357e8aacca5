"""GroupNorm + SiLU in Triton: split statistics, then one fused normalize-scale-SiLU pass.

In NCHW a (sample, group) is one contiguous run of channels / groups * height * width values.
1. stats_kernel: the run is split into SPLIT segments so that ~1000+ programs share the work;
   each walks its segment once and merges per-chunk means and squared deviations (Chan's
   parallel formula: exact, no E[x^2] - E[x]^2 cancellation) into one (mean, M2) pair.
2. apply_kernel: each program merges its group's SPLIT pairs (a few scalars, fixed order),
   then normalizes a block of the run, applies the channel's weight and bias and SiLU, and
   writes y.
Two reads of x and one write; eager PyTorch reads x twice in group_norm and then reads and
writes the whole tensor again for SiLU.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
STATS_BLOCK = 2048
APPLY_BLOCK = 2048
#: Target number of statistics programs (several per SM on an H100/H200).
TARGET_PROGRAMS = 1024
NUM_WARPS = 8


@triton.jit
def stats_kernel(x_ptr, mean_ptr, m2_ptr, group_size, segment, split, BLOCK: tl.constexpr):
    sg = tl.program_id(0).to(tl.int64)  # (sample, group)
    part = tl.program_id(1)
    start = part * segment
    end = tl.minimum(start + segment, group_size)
    base = x_ptr + sg * group_size
    mean = tl.zeros([], dtype=tl.float32)
    m2 = tl.zeros([], dtype=tl.float32)
    count = tl.zeros([], dtype=tl.float32)
    for s in range(start, end, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        mask = offs < end
        x = tl.load(base + offs, mask=mask, other=0.0).to(tl.float32)
        n = tl.minimum(end - s, BLOCK).to(tl.float32)
        c_mean = tl.sum(x, axis=0) / n
        dev = tl.where(mask, x - c_mean, 0.0)
        c_m2 = tl.sum(dev * dev, axis=0)
        total = count + n
        delta = c_mean - mean
        mean += delta * (n / total)
        m2 += c_m2 + delta * delta * (count * n / total)
        count = total
    tl.store(mean_ptr + sg * split + part, mean)
    tl.store(m2_ptr + sg * split + part, m2)


@triton.jit
def apply_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, m2_ptr, group_size, segment, split, hw,
    channels_per_group, groups, eps, BLOCK: tl.constexpr,
):
    sg = tl.program_id(0).to(tl.int64)
    # Merge the group's partial statistics, in a fixed order.
    mean = tl.zeros([], dtype=tl.float32)
    m2 = tl.zeros([], dtype=tl.float32)
    count = tl.zeros([], dtype=tl.float32)
    for part in range(0, split):
        n = (tl.minimum((part + 1) * segment, group_size) - part * segment).to(tl.float32)
        p_mean = tl.load(mean_ptr + sg * split + part)
        p_m2 = tl.load(m2_ptr + sg * split + part)
        total = count + n
        delta = p_mean - mean
        mean += delta * (n / total)
        m2 += p_m2 + delta * delta * (count * n / total)
        count = total
    rstd = 1.0 / tl.sqrt(m2 / group_size + eps)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < group_size
    channel = (sg % groups) * channels_per_group + offs // hw
    x = tl.load(x_ptr + sg * group_size + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + channel, mask=mask, other=0.0).to(tl.float32)
    a = (x - mean) * rstd * w + b
    y = a / (1.0 + tl.exp2(-a * LOG2E))
    tl.store(y_ptr + sg * group_size + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def group_norm_silu(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, groups: int, eps: float
) -> torch.Tensor:
    """silu(group_norm(x, groups, weight, bias, eps)) for a contiguous NCHW x."""
    batch, channels, height, width = x.shape
    hw = height * width
    channels_per_group = channels // groups
    group_size = channels_per_group * hw
    n_groups = batch * groups
    # Segments of whole STATS_BLOCK chunks, as many as fill the GPU.
    split = max(1, min(triton.cdiv(group_size, STATS_BLOCK), TARGET_PROGRAMS // n_groups))
    segment = triton.cdiv(triton.cdiv(group_size, split), STATS_BLOCK) * STATS_BLOCK
    split = triton.cdiv(group_size, segment)
    mean = torch.empty((n_groups, split), dtype=torch.float32, device=x.device)
    m2 = torch.empty((n_groups, split), dtype=torch.float32, device=x.device)
    stats_kernel[(n_groups, split)](
        x, mean, m2, group_size, segment, split, BLOCK=STATS_BLOCK, num_warps=NUM_WARPS,
    )
    y = torch.empty_like(x)
    apply_kernel[(n_groups, triton.cdiv(group_size, APPLY_BLOCK))](
        x, weight, bias, y, mean, m2, group_size, segment, split, hw,
        channels_per_group, groups, eps, BLOCK=APPLY_BLOCK, num_warps=NUM_WARPS,
    )
    return y
