"""y = gelu_tanh(x * a + b) * sigmoid(z) in Triton: one simple kernel per step.

A direct translation of the PyTorch expression: a scale-and-shift kernel, a GELU kernel, a
sigmoid kernel and a multiply kernel, each reading its inputs from memory and writing its result
back in the input dtype, as PyTorch's eager mode would. Each is easy to read and test alone.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def scale_shift_kernel(x_ptr, a_ptr, b_ptr, out_ptr, n, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % n_cols  # a and b are broadcast over the rows
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    a = tl.load(a_ptr + col, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + col, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * a + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gelu_tanh_kernel(h_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask).to(tl.float32)
    # 0.5 * (1 + tanh(u)) == sigmoid(2u), with u = sqrt(2 / pi) * (h + 0.044715 h^3).
    u = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    g = h / (1.0 + tl.exp(-2.0 * u))
    tl.store(out_ptr + offs, g.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def sigmoid_kernel(z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    z = tl.load(z_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (1.0 / (1.0 + tl.exp(-z))).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def mul_kernel(p_ptr, q_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    q = tl.load(q_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (p * q).to(out_ptr.dtype.element_ty), mask=mask)


def fused_elementwise(
    x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, z: torch.Tensor
) -> torch.Tensor:
    """gelu_tanh(x * a + b) * sigmoid(z) for contiguous (rows, cols) x, z and (cols,) a, b."""
    n, n_cols = x.numel(), x.shape[-1]
    grid = (triton.cdiv(n, BLOCK),)
    h = torch.empty_like(x)
    scale_shift_kernel[grid](x, a, b, h, n, n_cols, BLOCK=BLOCK)
    g = torch.empty_like(x)
    gelu_tanh_kernel[grid](h, g, n, BLOCK=BLOCK)
    s = torch.empty_like(z)
    sigmoid_kernel[grid](z, s, n, BLOCK=BLOCK)
    y = torch.empty_like(x)
    mul_kernel[grid](g, s, y, n, BLOCK=BLOCK)
    return y
