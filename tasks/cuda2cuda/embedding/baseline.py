"""Embedding lookup in CUDA: one thread per output element, scalar loads and stores.

Thread i finds its token (i / dim) and column (i % dim), reads the token's row index and copies
one element of that table row. Reads and writes are coalesced along each row, but every element
pays a 64-bit division and a reload of the index, and moves only one element: a plain first
CUDA version.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define DISPATCH_FLOATS(TYPE, NAME, ...) \
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

constexpr int THREADS = 256;

template <typename scalar_t>
__global__ void embedding_kernel(const scalar_t* __restrict__ table,
                                 const int64_t* __restrict__ index, scalar_t* __restrict__ out,
                                 int64_t n, int64_t dim) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const int64_t t = i / dim, c = i % dim;
    out[i] = table[index[t] * dim + c];
}

torch::Tensor embedding(torch::Tensor table, torch::Tensor index) {
    TORCH_CHECK(table.is_cuda() && table.dim() == 2, "table: a 2-D CUDA tensor");
    TORCH_CHECK(index.is_cuda() && index.dim() == 1 && index.scalar_type() == torch::kInt64,
                "index: a 1-D int64 CUDA tensor");
    auto tc = table.contiguous();
    auto ic = index.contiguous();
    const int64_t tokens = ic.size(0), dim = tc.size(1);
    auto out = torch::empty({tokens, dim}, tc.options());
    const int64_t n = tokens * dim;
    if (n == 0) return out;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(tc.scalar_type(), "embedding", [&] {
        embedding_kernel<scalar_t><<<(n + THREADS - 1) / THREADS, THREADS, 0, stream>>>(
            tc.data_ptr<scalar_t>(), ic.data_ptr<int64_t>(), out.data_ptr<scalar_t>(), n, dim);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP = """
torch::Tensor embedding(torch::Tensor table, torch::Tensor index);
"""

_EXT = load_inline(
    name="gauntlet_embedding_baseline",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["embedding"],
    extra_cuda_cflags=["-O3"],
)


def embedding(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return _EXT.embedding(table, index)
