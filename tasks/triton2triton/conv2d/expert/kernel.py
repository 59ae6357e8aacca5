"""2-D convolution (NHWC, stride 1, same padding) in Triton: a pipelined implicit GEMM.

- The filter is re-laid out once on the host as (k, k, cin, cout) (a permute and a copy, no
  arithmetic), so a [BLOCK_C, BLOCK_N] filter tile is contiguous along the output channels and
  loads coalesce; the baseline reads it with a stride of k * k * cin.
- The three loops over (r, s, channel block) are flattened into one, which Triton software-
  pipelines (num_stages = 3-4): the next taps' loads fly while tensor cores work.
- 128 x 128 output tiles with 64-channel steps, grouped tile order for L2 reuse; fewer
  channels per tile for narrow outputs (16-64) and 64-pixel tiles where 128-pixel ones would
  not give every SM two (small images: 0.35-0.87x on an H100 with 128 x 64 tiles). On 192
  channels 3 x 64 and 64 x 64 tiles were no faster than 2 x 128 (H100, 2026-11-24).
"""

import torch
import triton
import triton.language as tl

#: Streaming multiprocessors of an H100/H200: below two tiles each, tiles get smaller.
SMS = 132


@triton.jit
def conv2d_kernel(
    x_ptr, w_ptr, y_ptr, batch, height, width, cin, cout, ksize,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr, GROUP_M: tl.constexpr,
):
    n_pixels = batch * height * width
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(n_pixels, BLOCK_M)
    num_pid_n = tl.cdiv(cout, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    pix = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    ch = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    b = pix // (height * width)
    oh = (pix // width) % height
    ow = pix % width
    pad = ksize // 2
    pix_ok = pix < n_pixels
    ch_ok = ch < cout
    c_blocks = tl.cdiv(cin, BLOCK_C)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(0, ksize * ksize * c_blocks):
        tap = t // c_blocks
        c0 = (t % c_blocks) * BLOCK_C
        r = tap // ksize
        s = tap % ksize
        ih = oh + r - pad
        iw = ow + s - pad
        inside = pix_ok & (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
        cc = c0 + tl.arange(0, BLOCK_C)
        c_ok = cc < cin
        a = tl.load(
            x_ptr + (((b * height + ih) * width + iw) * cin)[:, None] + cc[None, :],
            mask=inside[:, None] & c_ok[None, :], other=0.0,
        )
        w = tl.load(
            w_ptr + (tap * cin + cc)[:, None] * cout + ch[None, :],
            mask=c_ok[:, None] & ch_ok[None, :], other=0.0,
        )
        acc = tl.dot(a, w, acc)
    tl.store(
        y_ptr + pix[:, None] * cout + ch[None, :],
        acc.to(y_ptr.dtype.element_ty),
        mask=pix_ok[:, None] & ch_ok[None, :],
    )


def _tile(n_pixels: int, cout: int) -> tuple[int, int]:
    """Output tile (pixels, channels): channels padded to a power of two up to 128, then pixels
    from 128 down to 64 where 128 would not give every SM two tiles."""
    block_n = 128 if cout > 64 else max(16, triton.next_power_of_2(cout))
    tiles = triton.cdiv(n_pixels, 128) * triton.cdiv(cout, block_n)
    return (128 if tiles >= 2 * SMS else 64), block_n


def conv2d(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """NHWC x (B, H, W, Cin) conv weight (Cout, k, k, Cin), stride 1, pad k // 2 -> (B, H, W, Cout)."""
    batch, height, width, cin = x.shape
    cout, ksize = weight.shape[0], weight.shape[1]
    w_kkcn = weight.permute(1, 2, 3, 0).contiguous()  # (k, k, cin, cout): a copy, no arithmetic
    y = torch.empty((batch, height, width, cout), dtype=x.dtype, device=x.device)
    block_m, block_n = _tile(batch * height * width, cout)
    block_c = 64 if cin >= 64 else max(16, triton.next_power_of_2(cin))
    grid = (triton.cdiv(batch * height * width, block_m) * triton.cdiv(cout, block_n),)
    conv2d_kernel[grid](
        x, w_kkcn, y, batch, height, width, cin, cout, ksize,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_C=block_c, GROUP_M=8,
        num_warps=8 if block_n == 128 else 4, num_stages=3 if block_n == 128 else 4,
    )
    return y
