"""Matrix-vector product in CUDA: one thread per output row, float32 accumulation.
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
__global__ void gemv_kernel(const scalar_t* __restrict__ w, const scalar_t* __restrict__ v,
                            scalar_t* __restrict__ y, int64_t rows, int64_t cols) {
    const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (r >= rows) return;
    const scalar_t* row = w + r * cols;
    float s = 0.0f;
    for (int64_t j = 0; j < cols; ++j) s += static_cast<float>(row[j]) * static_cast<float>(v[j]);
    y[r] = static_cast<scalar_t>(s);
}

torch::Tensor gemv(torch::Tensor weight, torch::Tensor v) {
    TORCH_CHECK(weight.is_cuda() && weight.dim() == 2 && v.numel() == weight.size(1), "weight (rows, cols), v (cols,)");
    auto wc = weight.contiguous();
    auto vc = v.contiguous();
    const int64_t rows = wc.size(0), cols = wc.size(1);
    auto y = torch::empty({rows}, wc.options());
    if (rows == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(wc.scalar_type(), "gemv", [&] {
        gemv_kernel<scalar_t><<<(rows + THREADS - 1) / THREADS, THREADS, 0, stream>>>(
            wc.data_ptr<scalar_t>(), vc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor gemv(torch::Tensor weight, torch::Tensor v);
"""

_EXT = load_inline(
    name="gauntlet_gemv_baseline",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["gemv"],
    extra_cuda_cflags=["-O3"],
)


def gemv(weight: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return _EXT.gemv(weight, v)
