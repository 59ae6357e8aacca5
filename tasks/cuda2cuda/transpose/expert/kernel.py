"""Batched transpose in CUDA: 32 x 32 tiles through padded shared memory.

A block of 32 x 8 threads moves one 32 x 32 tile: it reads the tile row by row (coalesced),
stores it in shared memory with one column of padding (no bank conflicts on the transposed
read), and writes the transposed tile row by row (coalesced again). Each thread moves four
elements; the batch is the grid's z dimension (chunked when above 65535). With one row or one
column the transpose keeps the input's memory order, so it is a plain copy, one element a thread
(tiles would leave 31 of 32 threads idle).
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define DISPATCH_FLOATS(TYPE, NAME, ...) \
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

constexpr int TILE = 32, ROWS = 8;

template <typename scalar_t>
__global__ void transpose_tiled(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                                int64_t rows, int64_t cols, int64_t b0) {
    __shared__ scalar_t tile[TILE][TILE + 1];
    const int64_t b = b0 + blockIdx.z;
    const scalar_t* src = x + b * rows * cols;
    scalar_t* dst = y + b * rows * cols;
    const int64_t c = static_cast<int64_t>(blockIdx.x) * TILE + threadIdx.x;
    const int64_t r0 = static_cast<int64_t>(blockIdx.y) * TILE;
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS) {
        const int64_t r = r0 + threadIdx.y + k;
        if (r < rows && c < cols) tile[threadIdx.y + k][threadIdx.x] = src[r * cols + c];
    }
    __syncthreads();
    const int64_t oc = r0 + threadIdx.x;  // output column = input row
    const int64_t or0 = static_cast<int64_t>(blockIdx.x) * TILE;
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS) {
        const int64_t orow = or0 + threadIdx.y + k;  // output row = input column
        if (orow < cols && oc < rows) dst[orow * rows + oc] = tile[threadIdx.x][threadIdx.y + k];
    }
}

// rows == 1 or cols == 1: x and its transpose have the same memory order.
template <typename scalar_t>
__global__ void copy_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

torch::Tensor transpose(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 3, "a 3-D CUDA tensor");
    auto xc = x.contiguous();
    const int64_t batch = xc.size(0), rows = xc.size(1), cols = xc.size(2);
    auto y = torch::empty({batch, cols, rows}, xc.options());
    if (xc.numel() == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (rows == 1 || cols == 1) {
        const int64_t n = xc.numel();
        DISPATCH_FLOATS(xc.scalar_type(), "transpose_copy", [&] {
            copy_kernel<scalar_t><<<(n + 255) / 256, 256, 0, stream>>>(
                xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
        });
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return y;
    }
    TORCH_CHECK((rows + TILE - 1) / TILE <= 65535, "at most 65535 * 32 rows");
    dim3 threads(TILE, ROWS);
    DISPATCH_FLOATS(xc.scalar_type(), "transpose", [&] {
        for (int64_t b0 = 0; b0 < batch; b0 += 65535) {
            const int64_t nb = batch - b0 < 65535 ? batch - b0 : 65535;
            dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE, nb);
            transpose_tiled<scalar_t><<<grid, threads, 0, stream>>>(
                xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols, b0);
            C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
    });
    return y;
}
"""

_CPP = """
torch::Tensor transpose(torch::Tensor x);
"""

_EXT = load_inline(
    name="gauntlet_transpose_tiled",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["transpose"],
    extra_cuda_cflags=["-O3"],
)


def transpose(x: torch.Tensor) -> torch.Tensor:
    return _EXT.transpose(x)
