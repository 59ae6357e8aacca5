"""LayerNorm forward and backward in Triton: one fused backward pass over x and dy.

Forward: tiles of whole rows ([BLOCK_M, BLOCK_N], several short rows per program), one read of
x, one write of y, and the rows' mean and 1 / std kept for the backward.
Backward: a grid of at most ~2 programs per SM walks strided row tiles; for each it writes dx
and adds its rows' dy * x_hat and dy into float32 partial sums of dweight and dbias held in
registers, so x and dy are read once (the baseline reads them twice, and sums the columns on
only cols / 64 programs). A small second kernel adds the per-program partial sums in a fixed
order: no atomics, bitwise reproducible.
Rows wider than 8192 do not fit in registers together with the dweight/dbias accumulators
(a 16384-wide tile spilled: 0.78x at 4096 x 12288 on an H100), so there the forward and the dx
pass take one row per program as 1-D tiles, and a second kernel sums dy * x_hat and dy over
(row range, 256-column) tiles of a 2-D grid: x and dy are read twice, as by the baseline, which
such rows only match (1.00x at 4096 x 12288).
"""

import torch
import triton
import triton.language as tl

#: Programs of the fused backward: enough to fill an H100/H200 (132 SMs) twice over.
MAX_PROGRAMS = 264
#: Widest row (a power of two) whose tile leaves registers for the dweight/dbias partials;
#: wider rows take one program per row in both directions.
FUSED_MAX_BLOCK_N = 8192


@triton.jit
def forward_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n_rows, n_cols, eps,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    col_mask = cols < n_cols
    mask = row_mask[:, None] & col_mask[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    d = tl.where(mask, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = d * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@triton.jit
def wide_forward_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    # One row a program as a 1-D tile: the [1, 16384] tile of forward_kernel spilled in float32
    # and ran 2.6x slower than this on an H100 (100 x 16384).
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def load_tile(x_ptr, dy_ptr, mean_ptr, rstd_ptr, rows, row_mask, cols, col_mask, n_cols):
    """x_hat and dy of a [rows, cols] tile in float32 (zero outside it), the rows' 1 / std, the
    tile's offsets and mask."""
    mask = row_mask[:, None] & col_mask[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
    x_hat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    return x_hat, dy, rstd, offs, mask


@triton.jit
def backward_kernel(
    x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr, n_rows, n_cols,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(pid * BLOCK_M, n_rows, tl.num_programs(0) * BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        x_hat, dy, rstd, offs, mask = load_tile(
            x_ptr, dy_ptr, mean_ptr, rstd_ptr, rows, rows < n_rows, cols, col_mask, n_cols
        )
        wdy = w[None, :] * dy
        c1 = tl.sum(x_hat * wdy, axis=1) / n_cols
        c2 = tl.sum(wdy, axis=1) / n_cols
        dx = (wdy - (x_hat * c1[:, None] + c2[:, None])) * rstd[:, None]
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += tl.sum(dy * x_hat, axis=0)
        db += tl.sum(dy, axis=0)
    tl.store(dw_part_ptr + pid * n_cols + cols, dw, mask=col_mask)
    tl.store(db_part_ptr + pid * n_cols + cols, db, mask=col_mask)


@triton.jit
def wide_dx_kernel(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, n_cols, BLOCK_N: tl.constexpr):
    # One row a program, no loop: a loop-carried weight row spilled at 16384 columns.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(x_hat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    dx = (wdy - (x_hat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * n_cols + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def column_partials_kernel(
    x_ptr, dy_ptr, mean_ptr, rstd_ptr, dw_part_ptr, db_part_ptr, n_rows, n_cols, rows_per_part,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    part = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    first = part * rows_per_part
    last = tl.minimum(first + rows_per_part, n_rows)
    for start in range(first, last, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        x_hat, dy, _, _, _ = load_tile(
            x_ptr, dy_ptr, mean_ptr, rstd_ptr, rows, rows < last, cols, col_mask, n_cols
        )
        dw += dy * x_hat
        db += dy
    tl.store(dw_part_ptr + part * n_cols + cols, tl.sum(dw, axis=0), mask=col_mask)
    tl.store(db_part_ptr + part * n_cols + cols, tl.sum(db, axis=0), mask=col_mask)


@triton.jit
def sum_partials_kernel(
    dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_parts, n_cols,
    BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_parts, BLOCK_P):
        parts = start + tl.arange(0, BLOCK_P)
        mask = (parts < n_parts)[:, None] & col_mask[None, :]
        offs = parts[:, None] * n_cols + cols[None, :]
        dw += tl.sum(tl.load(dw_part_ptr + offs, mask=mask, other=0.0), axis=0)
        db += tl.sum(tl.load(db_part_ptr + offs, mask=mask, other=0.0), axis=0)
    tl.store(dw_ptr + cols, dw.to(dw_ptr.dtype.element_ty), mask=col_mask)
    tl.store(db_ptr + cols, db.to(db_ptr.dtype.element_ty), mask=col_mask)


def _tile(rows: int, cols: int) -> tuple[int, int, int]:
    """BLOCK_M, BLOCK_N and warps for tiles of whole rows (short rows packed to 4K entries)."""
    block_n = triton.next_power_of_2(cols)
    by_size = max(1, 4096 // block_n)
    by_count = 1 << max(0, (rows // 1024).bit_length() - 1)
    block_m = min(by_size, by_count)
    tile = block_m * block_n
    return block_m, block_n, 4 if tile <= 2048 else 8 if tile <= 8192 else 16


class LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        rows, cols = x.shape
        y = torch.empty_like(x)
        mean = torch.empty(rows, dtype=torch.float32, device=x.device)
        rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
        block_m, block_n, warps = _tile(rows, cols)
        if block_n <= FUSED_MAX_BLOCK_N:
            forward_kernel[(triton.cdiv(rows, block_m),)](
                x, weight, bias, y, mean, rstd, rows, cols, eps,
                BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps,
            )
        else:
            wide_forward_kernel[(rows,)](x, weight, bias, y, mean, rstd, cols, eps, BLOCK_N=block_n, num_warps=16)
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        dy = dy.contiguous()
        rows, cols = x.shape
        block_n = triton.next_power_of_2(cols)
        dx = torch.empty_like(x)
        if block_n <= FUSED_MAX_BLOCK_N:
            block_m = max(1, min(16, 2048 // block_n))
            warps = 4 if block_m * block_n <= 2048 else 8 if block_m * block_n <= 8192 else 16
            parts = min(triton.cdiv(rows, block_m), MAX_PROGRAMS)
            dw_part = torch.empty((parts, cols), dtype=torch.float32, device=x.device)
            db_part = torch.empty((parts, cols), dtype=torch.float32, device=x.device)
            backward_kernel[(parts,)](
                x, weight, dy, mean, rstd, dx, dw_part, db_part, rows, cols,
                BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps,
            )
        else:
            wide_dx_kernel[(rows,)](x, weight, dy, mean, rstd, dx, cols, BLOCK_N=block_n, num_warps=16)
            col_blocks = triton.cdiv(cols, 256)
            parts = max(1, min(triton.cdiv(rows, 16), 2 * MAX_PROGRAMS // col_blocks))
            rows_per_part = triton.cdiv(rows, parts)
            parts = triton.cdiv(rows, rows_per_part)
            dw_part = torch.empty((parts, cols), dtype=torch.float32, device=x.device)
            db_part = torch.empty((parts, cols), dtype=torch.float32, device=x.device)
            column_partials_kernel[(parts, col_blocks)](
                x, dy, mean, rstd, dw_part, db_part, rows, cols, rows_per_part,
                BLOCK_M=16, BLOCK_N=256, num_warps=4,
            )
        dw = torch.empty_like(weight)
        db = torch.empty_like(weight)
        sum_partials_kernel[(triton.cdiv(cols, 64),)](
            dw_part, db_part, dw, db, parts, cols, BLOCK_P=32, BLOCK_N=64, num_warps=4,
        )
        return dx, dw, db, None


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """LayerNorm over the last dimension of a contiguous 2-D x; differentiable in x, weight, bias."""
    return LayerNormFunction.apply(x, weight, bias, eps)
