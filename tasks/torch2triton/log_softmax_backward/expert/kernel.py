"""Log-softmax forward and backward in Triton.

Forward: rows of up to 8192 entries are held whole in registers (one read, one write); longer
rows use the online formulation (one pass for the running maximum and rescaled sum, one to
write). Either way the row's float32 maximum m and log-sum log(s) are kept: 8 bytes a row.
Backward: dx = dy - exp((x - m) - log(s)) * sum(dy), recomputing the softmax from x and the kept
statistics in float32 (x - m is exact near the maximum, so this is more exact than
exponentiating the rounded output or x - logsumexp), again whole rows in registers or two
passes for long rows. PyTorch's eager autograd launches more kernels and moves more bytes.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)
MAX_WHOLE_ROW = 8192
LONG_BLOCK = 4096


@triton.jit
def forward_whole_kernel(
    x_ptr, y_ptr, m_ptr, ls_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=1)
    shifted = x - m[:, None]
    log_sum = tl.log2(tl.sum(tl.exp2(shifted * LOG2E), axis=1)) * LN2
    tl.store(y_ptr + offs, (shifted - log_sum[:, None]).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + rows, m, mask=rows < n_rows)
    tl.store(ls_ptr + rows, log_sum, mask=rows < n_rows)


@triton.jit
def forward_long_kernel(x_ptr, y_ptr, m_ptr, ls_ptr, n_cols, BLOCK: tl.constexpr):
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
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + cols, ((x - m) - log_sum).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(m_ptr + row, m)
    tl.store(ls_ptr + row, log_sum)


@triton.jit
def backward_whole_kernel(
    x_ptr, m_ptr, ls_ptr, dy_ptr, dx_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    mask = row_mask[:, None] & (cols[None, :] < n_cols)
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = tl.load(m_ptr + rows, mask=row_mask, other=0.0)
    log_sum = tl.load(ls_ptr + rows, mask=row_mask, other=0.0)
    p = tl.exp2(((x - m[:, None]) - log_sum[:, None]) * LOG2E)
    dx = dy - p * tl.sum(dy, axis=1)[:, None]
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def backward_long_kernel(x_ptr, m_ptr, ls_ptr, dy_ptr, dx_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(dy_ptr + base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    m = tl.load(m_ptr + row)
    log_sum = tl.load(ls_ptr + row)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        dx = dy - tl.exp2(((x - m) - log_sum) * LOG2E) * total
        tl.store(dx_ptr + base + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _tile(rows: int, cols: int) -> tuple[int, int, int]:
    block_n = triton.next_power_of_2(cols)
    by_size = max(1, 4096 // block_n)
    by_count = 1 << max(0, (rows // 1024).bit_length() - 1)
    block_m = min(by_size, by_count)
    tile = block_m * block_n
    return block_m, block_n, 4 if tile <= 2048 else 8 if tile <= 4096 else 16


class LogSoftmaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.empty_like(x)
        row_max = torch.empty(rows, dtype=torch.float32, device=x.device)
        log_sum = torch.empty(rows, dtype=torch.float32, device=x.device)
        if cols <= MAX_WHOLE_ROW:
            block_m, block_n, warps = _tile(rows, cols)
            forward_whole_kernel[(triton.cdiv(rows, block_m),)](
                x, y, row_max, log_sum, rows, cols, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps,
            )
        else:
            forward_long_kernel[(rows,)](x, y, row_max, log_sum, cols, BLOCK=LONG_BLOCK, num_warps=8)
        ctx.save_for_backward(x, row_max, log_sum)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, row_max, log_sum = ctx.saved_tensors
        dy = dy.contiguous()
        rows, cols = x.shape
        dx = torch.empty_like(x)
        if cols <= MAX_WHOLE_ROW:
            block_m, block_n, warps = _tile(rows, cols)
            backward_whole_kernel[(triton.cdiv(rows, block_m),)](
                x, row_max, log_sum, dy, dx, rows, cols, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps,
            )
        else:
            backward_long_kernel[(rows,)](x, row_max, log_sum, dy, dx, cols, BLOCK=LONG_BLOCK, num_warps=8)
        return dx


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the last dimension of a contiguous 2-D tensor; differentiable in x."""
    return LogSoftmaxFunction.apply(x)
