"""Matrix-vector product in CUDA: one warp per row, 16-byte loads, warp-shuffle sums.

Each warp owns one output row: its 32 lanes read the row with 16-byte vector loads (32 x 16 =
512 contiguous bytes per step, fully coalesced), multiply by the matching slice of v in float32, and fold the 32 partial sums with shuffles. Rows whose
width is not a multiple of 16 bytes take a scalar loop of the same shape.
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

constexpr int WARPS = 8;

template <typename scalar_t, bool VEC>
__global__ void __launch_bounds__(WARPS * 32)
gemv_warp(const scalar_t* __restrict__ w, const scalar_t* __restrict__ v,
          scalar_t* __restrict__ y, int64_t rows, int64_t cols) {
    using P = Pack<scalar_t>;
    const int lane = threadIdx.x & 31;
    const int64_t r = static_cast<int64_t>(blockIdx.x) * WARPS + (threadIdx.x >> 5);
    if (r >= rows) return;
    float s = 0.0f;
    if (VEC) {
        const P* wp = reinterpret_cast<const P*>(w + r * cols);
        const P* vp = reinterpret_cast<const P*>(v);
        for (int64_t p = lane; p < cols / P::N; p += 32) {
            const P a = wp[p];
            const P b = vp[p];
#pragma unroll
            for (int e = 0; e < P::N; ++e) s += static_cast<float>(a.v[e]) * static_cast<float>(b.v[e]);
        }
    } else {
        const scalar_t* row = w + r * cols;
        for (int64_t j = lane; j < cols; j += 32) s += static_cast<float>(row[j]) * static_cast<float>(v[j]);
    }
    s = warp_sum(s);
    if (lane == 0) y[r] = static_cast<scalar_t>(s);
}

torch::Tensor gemv(torch::Tensor weight, torch::Tensor v) {
    TORCH_CHECK(weight.is_cuda() && weight.dim() == 2 && v.numel() == weight.size(1), "weight (rows, cols), v (cols,)");
    auto wc = weight.contiguous();
    auto vc = v.contiguous();
    const int64_t rows = wc.size(0), cols = wc.size(1);
    auto y = torch::empty({rows}, wc.options());
    if (rows == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    const int64_t blocks = (rows + WARPS - 1) / WARPS;
    DISPATCH_FLOATS(wc.scalar_type(), "gemv", [&] {
        const bool vec = cols % Pack<scalar_t>::N == 0 && aligned16(wc.data_ptr()) && aligned16(vc.data_ptr());
        if (vec) {
            gemv_warp<scalar_t, true><<<blocks, WARPS * 32, 0, stream>>>(
                wc.data_ptr<scalar_t>(), vc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols);
        } else {
            gemv_warp<scalar_t, false><<<blocks, WARPS * 32, 0, stream>>>(
                wc.data_ptr<scalar_t>(), vc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols);
        }
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor gemv(torch::Tensor weight, torch::Tensor v);
"""

_EXT = load_inline(
    name="gauntlet_gemv_warp",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["gemv"],
    extra_cuda_cflags=["-O3"],
)


def gemv(weight: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return _EXT.gemv(weight, v)
