"""Mean cross-entropy loss in Triton: one streaming pass over the logits, then a mean.

Kernel 1 gives each program BLOCK_M rows and streams them through an online logsumexp in
[BLOCK_M, BLOCK_N] chunks (running maximum and rescaled running sum), so the logits are read
once whatever the class count, and writes one float32 loss per row. Kernel 2, one program,
sums those losses in a fixed order and divides by the row count: deterministic, unlike atomics.
PyTorch's eager path runs a log-softmax kernel and a gather-and-mean kernel, after a float32
copy for float16 and bfloat16 logits.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # log2(e): exp(x) == exp2(x * LOG2E)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def row_loss_kernel(
    logits_ptr, targets_ptr, loss_ptr, n_rows, n_classes, row_stride,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_ptrs = logits_ptr + rows.to(tl.int64)[:, None] * row_stride
    # Online logsumexp in base 2: m is the running maximum of log2(e) * x, s the sum of
    # 2^(log2(e) * x - m). Rows past the end start at 0 instead of -inf so they never make NaNs.
    m = tl.where(row_mask, float("-inf"), 0.0)
    s = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < n_classes)[None, :]
        x = tl.load(row_ptrs + cols[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        x = x * LOG2E
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
    lse = (m + tl.log2(s)) * LN2
    target = tl.load(targets_ptr + rows, mask=row_mask, other=0)
    target_logit = tl.load(logits_ptr + rows.to(tl.int64) * row_stride + target, mask=row_mask)
    tl.store(loss_ptr + rows, lse - target_logit.to(tl.float32), mask=row_mask)


@triton.jit
def mean_kernel(loss_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + offs, mask=offs < n_rows, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n_rows).to(out_ptr.dtype.element_ty))


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of contiguous (rows, classes) logits and (rows,) int64 targets."""
    rows, classes = logits.shape
    losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=logits.dtype, device=logits.device)
    # Chunks of up to 4K classes; short rows are packed several to a program (measured on an
    # H200: as fast as one row a program even for a few dozen rows, and fewer programs).
    block_n = min(triton.next_power_of_2(classes), 4096)
    block_m = min(max(1, 2048 // block_n), triton.next_power_of_2(rows))
    num_warps = 4 if block_m * block_n <= 2048 else 8
    row_loss_kernel[(triton.cdiv(rows, block_m),)](
        logits, targets, losses, rows, classes, logits.stride(0),
        BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
    )
    mean_kernel[(1,)](losses, out, rows, BLOCK=min(triton.next_power_of_2(rows), 1024))
    return out
