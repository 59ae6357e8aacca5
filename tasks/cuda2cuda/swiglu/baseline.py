"""SwiGLU gate in CUDA: two element-wise kernels, one thread per output element.

silu_kernel writes silu(gate) to a temporary of x's dtype; mul_kernel multiplies it by up.
Scalar loads and stores: a plain first CUDA version, not fused.
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
__global__ void silu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ t,
                            int64_t n, int64_t ffn) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const int64_t r = i / ffn, c = i % ffn;
    const float g = static_cast<float>(x[r * 2 * ffn + c]);
    t[i] = static_cast<scalar_t>(g / (1.0f + expf(-g)));
}

template <typename scalar_t>
__global__ void mul_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ t,
                           scalar_t* __restrict__ y, int64_t n, int64_t ffn) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const int64_t r = i / ffn, c = i % ffn;
    y[i] = static_cast<scalar_t>(static_cast<float>(t[i]) *
                                 static_cast<float>(x[r * 2 * ffn + ffn + c]));
}

torch::Tensor swiglu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.size(1) % 2 == 0, "a (rows, 2 * ffn) CUDA tensor");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), ffn = xc.size(1) / 2;
    auto y = torch::empty({rows, ffn}, xc.options());
    auto t = torch::empty({rows, ffn}, xc.options());
    const int64_t n = rows * ffn;
    if (n == 0) return y;
    const int64_t blocks = (n + THREADS - 1) / THREADS;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(xc.scalar_type(), "swiglu", [&] {
        silu_kernel<scalar_t><<<blocks, THREADS, 0, stream>>>(
            xc.data_ptr<scalar_t>(), t.data_ptr<scalar_t>(), n, ffn);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        mul_kernel<scalar_t><<<blocks, THREADS, 0, stream>>>(
            xc.data_ptr<scalar_t>(), t.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, ffn);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor swiglu(torch::Tensor x);
"""

_EXT = load_inline(
    name="gauntlet_swiglu_baseline",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["swiglu"],
    extra_cuda_cflags=["-O3"],
)


def swiglu(x: torch.Tensor) -> torch.Tensor:
    return _EXT.swiglu(x)
