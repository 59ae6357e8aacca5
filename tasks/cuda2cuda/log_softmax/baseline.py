"""Log-softmax over rows in CUDA: one block per row, three passes over the row.

Pass 1 finds the row's maximum, pass 2 sums exp(x - max), pass 3 writes x - max - log(sum);
each reduction goes through a shared-memory tree. Plain scalar loads, a first CUDA version.
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

template <bool MAX>
__device__ float tree_reduce(float v, float* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            buf[threadIdx.x] = MAX ? fmaxf(buf[threadIdx.x], buf[threadIdx.x + s])
                                   : buf[threadIdx.x] + buf[threadIdx.x + s];
        }
        __syncthreads();
    }
    const float out = buf[0];
    __syncthreads();
    return out;
}

template <typename scalar_t>
__global__ void log_softmax_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                                   int64_t cols) {
    __shared__ float buf[THREADS];
    const scalar_t* row = x + blockIdx.x * cols;
    scalar_t* out = y + blockIdx.x * cols;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, static_cast<float>(row[j]));
    m = tree_reduce<true>(m, buf);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += THREADS) s += expf(static_cast<float>(row[j]) - m);
    s = tree_reduce<false>(s, buf);
    const float shift = m + logf(s);
    for (int64_t j = threadIdx.x; j < cols; j += THREADS) {
        out[j] = static_cast<scalar_t>(static_cast<float>(row[j]) - shift);
    }
}

torch::Tensor log_softmax(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2, "a 2-D CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (rows == 0 || cols == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(xc.scalar_type(), "log_softmax", [&] {
        log_softmax_kernel<scalar_t><<<rows, THREADS, 0, stream>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), cols);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor log_softmax(torch::Tensor x);
"""

_EXT = load_inline(
    name="gauntlet_log_softmax_baseline",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["log_softmax"],
    extra_cuda_cflags=["-O3"],
)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    return _EXT.log_softmax(x)
