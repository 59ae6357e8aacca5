"""Mixture-of-experts combine in CUDA: fused gather and weighted sum.

One thread per output element (token, column) reads the token's topk row indices and router
weights and sums weights[t, j] * expert_out[index[t, j], column] in float32, in j order: no
(tokens, topk, dim) intermediate, each expert row read once and the output written once.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define DISPATCH_FLOATS(TYPE, NAME, ...) \
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum (or max) over the block; every thread gets the same value. `red` holds 32 floats.
template <bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = MAX ? warp_max(v) : warp_sum(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < warps ? red[lane] : (MAX ? -INFINITY : 0.0f);
        w = MAX ? warp_max(w) : warp_sum(w);
        if (lane == 0) red[0] = w;
    }
    __syncthreads();
    return red[0];
}

// 16 bytes of T: vectorized loads and stores.
template <typename T>
struct alignas(16) Pack {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

__host__ __forceinline__ bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

constexpr int THREADS = 256;

template <typename scalar_t>
__global__ void combine(const scalar_t* __restrict__ eo, const int64_t* __restrict__ index,
                        const scalar_t* __restrict__ weights, scalar_t* __restrict__ out,
                        int64_t n, int64_t dim, int topk) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const int64_t t = i / dim, c = i % dim;
    float s = 0.0f;
    for (int j = 0; j < topk; ++j) {
        const int64_t r = index[t * topk + j];
        s += static_cast<float>(weights[t * topk + j]) * static_cast<float>(eo[r * dim + c]);
    }
    out[i] = static_cast<scalar_t>(s);
}

torch::Tensor moe_combine(torch::Tensor expert_out, torch::Tensor index, torch::Tensor weights) {
    TORCH_CHECK(expert_out.is_cuda() && index.scalar_type() == torch::kInt64, "CUDA tensors, int64 index");
    auto eo = expert_out.contiguous();
    auto ic = index.contiguous();
    auto wc = weights.contiguous();
    const int64_t tokens = ic.size(0), topk = ic.size(1), dim = eo.size(1);
    auto out = torch::empty({tokens, dim}, eo.options());
    const int64_t n = tokens * dim;
    if (n == 0) return out;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(eo.scalar_type(), "moe_combine", [&] {
        combine<scalar_t><<<(n + THREADS - 1) / THREADS, THREADS, 0, stream>>>(
            eo.data_ptr<scalar_t>(), ic.data_ptr<int64_t>(), wc.data_ptr<scalar_t>(),
            out.data_ptr<scalar_t>(), n, dim, static_cast<int>(topk));
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP = """
torch::Tensor moe_combine(torch::Tensor expert_out, torch::Tensor index, torch::Tensor weights);
"""

_EXT = load_inline(
    name="gauntlet_moe_combine_fused",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["moe_combine"],
    extra_cuda_cflags=["-O3"],
)


def moe_combine(expert_out: torch.Tensor, index: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return _EXT.moe_combine(expert_out, index, weights)
