"""2-D convolution (NHWC, stride 1, same padding) in Triton: a direct implicit-GEMM first version.

The convolution is a matrix product in disguise: rows are the output pixels (batch * height *
width), columns the output channels, and the reduction runs over the filter taps (r, s) and the
input channels. Each program computes a 64 x 64 tile of that product: for every tap it loads
the shifted input pixels (zero outside the image, by masking) and the matching filter slice,
32 input channels at a time, and accumulates with tl.dot in float32. Three nested loops, no
software pipelining, row-major tile order.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(
    x_ptr, w_ptr, y_ptr, batch, height, width, cin, cout, ksize,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    n_pixels = batch * height * width
    pix = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    ch = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    b = pix // (height * width)
    oh = (pix // width) % height
    ow = pix % width
    pad = ksize // 2
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r in range(0, ksize):
        for s in range(0, ksize):
            ih = oh + r - pad
            iw = ow + s - pad
            inside = (pix < n_pixels) & (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
            x_base = ((b * height + ih) * width + iw) * cin
            for c0 in range(0, cin, BLOCK_C):
                cc = c0 + tl.arange(0, BLOCK_C)
                a = tl.load(
                    x_ptr + x_base[:, None] + cc[None, :],
                    mask=inside[:, None] & (cc[None, :] < cin), other=0.0,
                )
                w = tl.load(
                    w_ptr + ch[None, :] * (ksize * ksize * cin) + (r * ksize + s) * cin + cc[:, None],
                    mask=(cc[:, None] < cin) & (ch[None, :] < cout), other=0.0,
                )
                acc = tl.dot(a, w, acc)
    tl.store(
        y_ptr + pix[:, None] * cout + ch[None, :],
        acc.to(y_ptr.dtype.element_ty),
        mask=(pix[:, None] < n_pixels) & (ch[None, :] < cout),
    )


def conv2d(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """NHWC x (B, H, W, Cin) conv weight (Cout, k, k, Cin), stride 1, pad k // 2 -> (B, H, W, Cout)."""
    batch, height, width, cin = x.shape
    cout, ksize = weight.shape[0], weight.shape[1]
    y = torch.empty((batch, height, width, cout), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(batch * height * width, 64), triton.cdiv(cout, 64))
    conv2d_kernel[grid](
        x, weight, y, batch, height, width, cin, cout, ksize,
        BLOCK_M=64, BLOCK_N=64, BLOCK_C=32, num_warps=4, num_stages=1,
    )
    return y
