"""A KernelBench-format solution of the fixture 1_Linear_Scale: `ModelNew` with a CUDA kernel.

This project's own, written as KernelBench solutions are: `load_inline` at module level, the
layers of `Model` under the same names, `forward` launching the kernel on them.
"""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename T>
__global__ void linear_scale_kernel(const T* x, const T* w, const T* b, T* y, int m, int n, int k,
                                    float scale) {
    int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = static_cast<float>(b[col]);
    for (int i = 0; i < k; ++i)
        acc += static_cast<float>(x[(long)row * k + i]) * static_cast<float>(w[(long)col * k + i]);
    y[(long)row * n + col] = static_cast<T>(acc * scale);
}

torch::Tensor linear_scale(torch::Tensor x, torch::Tensor w, torch::Tensor b, double scale) {
    int m = x.size(0), k = x.size(1), n = w.size(0);
    auto y = torch::empty({m, n}, x.options());
    dim3 blocks((n + 127) / 128, m);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
                                    x.scalar_type(), "linear_scale", [&] {
        linear_scale_kernel<scalar_t><<<blocks, 128, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(),
            y.data_ptr<scalar_t>(), m, n, k, (float)scale);
    });
    return y;
}
"""

_ext = load_inline(
    name="kb_fixture_linear_scale",
    cpp_sources="torch::Tensor linear_scale(torch::Tensor x, torch::Tensor w, torch::Tensor b, "
    "double scale);",
    cuda_sources=CUDA,
    functions=["linear_scale"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return _ext.linear_scale(x, self.linear.weight, self.linear.bias, self.scale)
