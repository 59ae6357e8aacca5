"""SwiGLU forward and backward in CUDA: one fused element-wise kernel each way.

Forward reads gate and up once and writes y; backward reads gate, up and dy once, recomputes
sigmoid(gate) in registers and writes dgate and dup. All arithmetic in float32, one thread per
element, joined by a torch.autograd.Function (eager autograd runs several kernels each way
with intermediates in memory).
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <vector>

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
__global__ void fwd(const scalar_t* __restrict__ g, const scalar_t* __restrict__ u,
                    scalar_t* __restrict__ y, int64_t n) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const float gv = static_cast<float>(g[i]);
    const float s = 1.0f / (1.0f + expf(-gv));
    y[i] = static_cast<scalar_t>(gv * s * static_cast<float>(u[i]));
}

template <typename scalar_t>
__global__ void bwd(const scalar_t* __restrict__ g, const scalar_t* __restrict__ u,
                    const scalar_t* __restrict__ dy, scalar_t* __restrict__ dg,
                    scalar_t* __restrict__ du, int64_t n) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const float gv = static_cast<float>(g[i]);
    const float uv = static_cast<float>(u[i]);
    const float d = static_cast<float>(dy[i]);
    const float s = 1.0f / (1.0f + expf(-gv));
    dg[i] = static_cast<scalar_t>(d * uv * s * (1.0f + gv * (1.0f - s)));
    du[i] = static_cast<scalar_t>(d * gv * s);
}

torch::Tensor swiglu_forward(torch::Tensor gate, torch::Tensor up) {
    auto gc = gate.contiguous();
    auto uc = up.contiguous();
    auto y = torch::empty_like(gc);
    const int64_t n = gc.numel();
    if (n == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(gc.scalar_type(), "swiglu_forward", [&] {
        fwd<scalar_t><<<(n + THREADS - 1) / THREADS, THREADS, 0, stream>>>(
            gc.data_ptr<scalar_t>(), uc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

std::vector<torch::Tensor> swiglu_backward(torch::Tensor gate, torch::Tensor up, torch::Tensor dy) {
    auto gc = gate.contiguous();
    auto uc = up.contiguous();
    auto dyc = dy.contiguous();
    auto dg = torch::empty_like(gc);
    auto du = torch::empty_like(uc);
    const int64_t n = gc.numel();
    if (n == 0) return {dg, du};
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(gc.scalar_type(), "swiglu_backward", [&] {
        bwd<scalar_t><<<(n + THREADS - 1) / THREADS, THREADS, 0, stream>>>(
            gc.data_ptr<scalar_t>(), uc.data_ptr<scalar_t>(), dyc.data_ptr<scalar_t>(),
            dg.data_ptr<scalar_t>(), du.data_ptr<scalar_t>(), n);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {dg, du};
}
"""

_CPP = """
torch::Tensor swiglu_forward(torch::Tensor gate, torch::Tensor up);
std::vector<torch::Tensor> swiglu_backward(torch::Tensor gate, torch::Tensor up, torch::Tensor dy);
"""

_EXT = load_inline(
    name="gauntlet_swiglu_backward_fused",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["swiglu_forward", "swiglu_backward"],
    extra_cuda_cflags=["-O3"],
)


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(gate, up)
        return _EXT.swiglu_forward(gate, up)

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        gate, up = ctx.saved_tensors
        dgate, dup = _EXT.swiglu_backward(gate, up, dy)
        return dgate, dup


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return SwiGLUFunction.apply(gate, up)
