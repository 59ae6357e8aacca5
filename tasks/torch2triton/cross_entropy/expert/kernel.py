"""Mean cross-entropy loss in Triton: one streaming pass over the logits, in one launch.

Each program takes BLOCK_M rows and streams them through an online logsumexp in
[BLOCK_M, BLOCK_N] chunks (running maximum and rescaled running sum), so the logits are read
once whatever the class count, and stores the sum of its rows' losses. The last program to
finish then adds those per-program sums in program order and divides by the row count: the
atomic only counts finished programs and adds no data, so the loss is bitwise reproducible.

At the sizes of this task the host's work counts as much as the GPU's: PyTorch's eager path
launches two or three kernels (a float32 copy for low-precision logits, a log-softmax, a
gather-and-mean); this launches one, and allocates only the output and one zeroed scratch
buffer (the finish counter, then the partial sums stored as their float32 bits).
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # log2(e): exp(x) == exp2(x * LOG2E)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def cross_entropy_kernel(
    logits_ptr, targets_ptr, scratch_ptr, out_ptr, n_rows, n_classes, row_stride,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_P: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    row_ptrs = logits_ptr + rows.to(tl.int64) * row_stride
    # Online logsumexp: m is the running maximum, s the sum of exp(x - m). Rows past the end
    # start at 0 instead of -inf so they never make NaNs.
    m = tl.where(row_mask, float("-inf"), 0.0)
    s = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start in range(0, n_classes, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < n_classes)[None, :]
        x = tl.load(row_ptrs[:, None] + cols[None, :], mask=mask, other=float("-inf"))
        x = x.to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.exp2((m - m_new) * LOG2E)
        s += tl.sum(tl.exp2((x - m_new[:, None]) * LOG2E), axis=1)
        m = m_new
    target = tl.load(targets_ptr + rows, mask=row_mask, other=0)
    target_logit = tl.load(row_ptrs + target, mask=row_mask, other=0.0).to(tl.float32)
    # (m - x_t) first: exact when the target holds the maximum, so a confident row's loss of
    # about zero is not swamped by the rounding of logits in the hundreds.
    loss = (m - target_logit) + tl.log2(s) * LN2
    partial = tl.sum(tl.where(row_mask, loss, 0.0), axis=0)
    tl.store(scratch_ptr + 1 + pid, partial.to(tl.int32, bitcast=True))

    # The last program to finish sums the partials in program order. acq_rel makes every
    # program's partial visible before its count; .cg reads them from L2, past stale L1 lines.
    n_programs = tl.num_programs(0)
    if tl.atomic_add(scratch_ptr, 1, sem="acq_rel") == n_programs - 1:
        acc = tl.zeros([BLOCK_P], dtype=tl.float32)
        for start in range(0, n_programs, BLOCK_P):
            offs = start + tl.arange(0, BLOCK_P)
            mask = offs < n_programs
            bits = tl.load(scratch_ptr + 1 + offs, mask=mask, other=0, cache_modifier=".cg")
            acc += bits.to(tl.float32, bitcast=True)
        tl.store(out_ptr, (tl.sum(acc, axis=0) / n_rows).to(out_ptr.dtype.element_ty))


# Classes per chunk and elements per program (knobs of the autotune agent, [autotune]).
CHUNK_CLASSES = 4096
TILE_ELEMENTS = 2048


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of contiguous (rows, classes) logits and (rows,) int64 targets."""
    rows, classes = logits.shape
    # Chunks of up to 4K classes; short rows are packed several to a program.
    block_n = min(triton.next_power_of_2(classes), CHUNK_CLASSES)
    block_m = min(max(1, TILE_ELEMENTS // block_n), triton.next_power_of_2(rows))
    programs = triton.cdiv(rows, block_m)
    # scratch[0] counts finished programs, scratch[1 + p] holds program p's partial sum.
    scratch = torch.zeros(programs + 1, dtype=torch.int32, device=logits.device)
    out = torch.empty((), dtype=logits.dtype, device=logits.device)
    cross_entropy_kernel[(programs,)](
        logits, targets, scratch, out, rows, classes, logits.stride(0),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_P=min(triton.next_power_of_2(programs), 1024),
        num_warps=4 if block_m * block_n <= TILE_ELEMENTS else 8,
    )
    return out
