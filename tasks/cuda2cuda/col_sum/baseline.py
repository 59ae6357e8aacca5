"""Column sums in CUDA: one thread per column walks every row, accumulating in float32.
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
__global__ void col_sum_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                               int64_t rows, int64_t cols) {
    const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int64_t r = 0; r < rows; ++r) s += static_cast<float>(x[r * cols + c]);
    y[c] = static_cast<scalar_t>(s);
}

torch::Tensor col_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2, "a 2-D CUDA tensor");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto y = torch::empty({cols}, xc.options());
    if (cols == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(xc.scalar_type(), "col_sum", [&] {
        col_sum_kernel<scalar_t><<<(cols + THREADS - 1) / THREADS, THREADS, 0, stream>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor col_sum(torch::Tensor x);
"""

_EXT = load_inline(
    name="gauntlet_col_sum_baseline",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["col_sum"],
    extra_cuda_cflags=["-O3"],
)


def col_sum(x: torch.Tensor) -> torch.Tensor:
    return _EXT.col_sum(x)
