"""Embedding lookup in CUDA: a team of threads per row, the widest vector the row allows.

A gather is pure data movement, so the kernel copies bytes, whatever the dtype: each row is
moved in 16-, 8-, 4- or 2-byte words, the widest that divides the row's size and the tables'
alignment (16 bytes for every even-sized row of a fresh tensor). A team of 1 to 32 threads
(a power of two, about the row's width in words) copies one row; a block of 256 threads
copies 256 / team rows. The team reads the row index once, then each thread keeps four loads
in flight before its stores. No per-element division, no index reloads, coalesced both ways.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

constexpr int THREADS = 256;

// Rows are `width` words of type W; a team of TEAM threads copies one row.
template <typename W, int TEAM>
__global__ void __launch_bounds__(THREADS)
gather_rows(const W* __restrict__ table, const int64_t* __restrict__ index, W* __restrict__ out,
            int64_t tokens, int64_t width) {
    constexpr int ROWS = THREADS / TEAM;
    const int64_t t = static_cast<int64_t>(blockIdx.x) * ROWS + threadIdx.x / TEAM;
    if (t >= tokens) return;
    const W* src = table + index[t] * width;
    W* dst = out + t * width;
    int64_t j = threadIdx.x % TEAM;
    for (; j + 3 * TEAM < width; j += 4 * TEAM) {
        const W a = src[j], b = src[j + TEAM], c = src[j + 2 * TEAM], d = src[j + 3 * TEAM];
        dst[j] = a;
        dst[j + TEAM] = b;
        dst[j + 2 * TEAM] = c;
        dst[j + 3 * TEAM] = d;
    }
    for (; j < width; j += TEAM) dst[j] = src[j];
}

template <typename W>
void launch(const void* table, const int64_t* index, void* out, int64_t tokens, int64_t width,
            cudaStream_t stream) {
    const auto* src = static_cast<const W*>(table);
    auto* dst = static_cast<W*>(out);
    // The smallest team that still gives each thread whole words to move, up to a warp.
    int team = 1;
    while (team < 32 && team < width) team *= 2;
    const int64_t rows_per_block = THREADS / team;
    const int64_t blocks = (tokens + rows_per_block - 1) / rows_per_block;
    switch (team) {
        case 1: gather_rows<W, 1><<<blocks, THREADS, 0, stream>>>(src, index, dst, tokens, width); break;
        case 2: gather_rows<W, 2><<<blocks, THREADS, 0, stream>>>(src, index, dst, tokens, width); break;
        case 4: gather_rows<W, 4><<<blocks, THREADS, 0, stream>>>(src, index, dst, tokens, width); break;
        case 8: gather_rows<W, 8><<<blocks, THREADS, 0, stream>>>(src, index, dst, tokens, width); break;
        case 16: gather_rows<W, 16><<<blocks, THREADS, 0, stream>>>(src, index, dst, tokens, width); break;
        default: gather_rows<W, 32><<<blocks, THREADS, 0, stream>>>(src, index, dst, tokens, width); break;
    }
}

torch::Tensor embedding(torch::Tensor table, torch::Tensor index) {
    TORCH_CHECK(table.is_cuda() && table.dim() == 2, "table: a 2-D CUDA tensor");
    TORCH_CHECK(index.is_cuda() && index.dim() == 1 && index.scalar_type() == torch::kInt64,
                "index: a 1-D int64 CUDA tensor");
    auto tc = table.contiguous();
    auto ic = index.contiguous();
    const int64_t tokens = ic.size(0), dim = tc.size(1);
    auto out = torch::empty({tokens, dim}, tc.options());
    if (tokens == 0 || dim == 0) return out;
    const int64_t row_bytes = dim * static_cast<int64_t>(tc.element_size());
    const auto bases = reinterpret_cast<uintptr_t>(tc.data_ptr()) |
                       reinterpret_cast<uintptr_t>(out.data_ptr());
    auto fits = [&](int64_t word) { return row_bytes % word == 0 && bases % word == 0; };
    auto stream = at::cuda::getCurrentCUDAStream();
    const int64_t* ip = ic.data_ptr<int64_t>();
    if (fits(16)) {
        launch<uint4>(tc.data_ptr(), ip, out.data_ptr(), tokens, row_bytes / 16, stream);
    } else if (fits(8)) {
        launch<uint2>(tc.data_ptr(), ip, out.data_ptr(), tokens, row_bytes / 8, stream);
    } else if (fits(4)) {
        launch<uint32_t>(tc.data_ptr(), ip, out.data_ptr(), tokens, row_bytes / 4, stream);
    } else {
        TORCH_CHECK(fits(2), "rows of 2-byte elements at least");
        launch<uint16_t>(tc.data_ptr(), ip, out.data_ptr(), tokens, row_bytes / 2, stream);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP = """
torch::Tensor embedding(torch::Tensor table, torch::Tensor index);
"""

_EXT = load_inline(
    name="gauntlet_embedding_rows",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["embedding"],
    extra_cuda_cflags=["-O3"],
)


def embedding(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return _EXT.embedding(table, index)
