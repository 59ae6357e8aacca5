"""Cross-entropy loss forward and backward in Triton.

Forward: one program per row streams the logits once with the online logsumexp (a running
maximum and a rescaled running sum), picks the target's logit, and writes the row's loss and
float32 maximum and log-sum; a one-program kernel averages the row losses in a fixed order.
Backward: a 2-D grid over (row, vocabulary slice) writes
dlogits = (exp((x - m) - log s) - onehot) * dloss / rows from the logits and kept statistics:
one read and one write, with dloss read on the device (no host synchronization). Eager PyTorch
materializes the log-probabilities in the forward and runs two kernels in the backward.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def forward_kernel(x_ptr, t_ptr, m_ptr, ls_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    m = tl.full([], float("-inf"), dtype=tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new) * LOG2E), axis=0)
        m = m_new
    log_sum = tl.log2(s) * LN2
    target = tl.load(t_ptr + row)
    x_t = tl.load(x_ptr + base + target).to(tl.float32)
    tl.store(m_ptr + row, m)
    tl.store(ls_ptr + row, log_sum)
    # (m - x_t) is exact when the target is near the maximum, where the loss is near zero.
    tl.store(loss_ptr + row, (m - x_t) + log_sum)


@triton.jit
def mean_kernel(loss_ptr, out_ptr, n_rows, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        idx = start + tl.arange(0, BLOCK)
        acc += tl.load(loss_ptr + idx, mask=idx < n_rows, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n_rows).to(out_ptr.dtype.element_ty))


@triton.jit
def backward_kernel(x_ptr, t_ptr, m_ptr, ls_ptr, dloss_ptr, dx_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    base = row * n_cols
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    m = tl.load(m_ptr + row)
    log_sum = tl.load(ls_ptr + row)
    target = tl.load(t_ptr + row)
    scale = tl.load(dloss_ptr).to(tl.float32) / n_rows
    p = tl.exp2(((x - m) - log_sum) * LOG2E)
    g = (p - tl.where(cols == target, 1.0, 0.0)) * scale
    tl.store(dx_ptr + base + cols, g.to(dx_ptr.dtype.element_ty), mask=mask)


class CrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        rows, cols = logits.shape
        row_max = torch.empty(rows, dtype=torch.float32, device=logits.device)
        log_sum = torch.empty(rows, dtype=torch.float32, device=logits.device)
        row_loss = torch.empty(rows, dtype=torch.float32, device=logits.device)
        block = min(4096, triton.next_power_of_2(cols))
        forward_kernel[(rows,)](
            logits, targets, row_max, log_sum, row_loss, cols, BLOCK=block, num_warps=8 if block >= 2048 else 4,
        )
        loss = torch.empty((), dtype=logits.dtype, device=logits.device)
        mean_kernel[(1,)](row_loss, loss, rows, BLOCK=1024, num_warps=4)
        ctx.save_for_backward(logits, targets, row_max, log_sum)
        return loss

    @staticmethod
    def backward(ctx, dloss: torch.Tensor):
        logits, targets, row_max, log_sum = ctx.saved_tensors
        rows, cols = logits.shape
        dx = torch.empty_like(logits)
        block = min(4096, triton.next_power_of_2(cols))
        backward_kernel[(rows, triton.cdiv(cols, block))](
            logits, targets, row_max, log_sum, dloss.contiguous(), dx, rows, cols,
            BLOCK=block, num_warps=8 if block >= 2048 else 4,
        )
        return dx, None


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of (rows, vocab) logits against int64 targets; differentiable in logits."""
    return CrossEntropyFunction.apply(logits, targets)
