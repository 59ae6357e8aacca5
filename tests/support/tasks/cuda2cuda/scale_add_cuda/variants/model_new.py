# KernelBench's style: a `ModelNew` module whose forward calls a load_inline extension. The judge
# instantiates it with no arguments and calls it (the task's entry is set to "ModelNew").
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scale_add_source = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_add_f32(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}

__global__ void scale_add_f16(const at::Half* x, const at::Half* y, at::Half* out, float alpha,
                              int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = static_cast<at::Half>(alpha * static_cast<float>(x[i])
                                              + static_cast<float>(y[i]));
}

torch::Tensor scale_add_cuda(torch::Tensor x, torch::Tensor y, double alpha) {
    auto out = torch::empty_like(x);
    const int n = x.numel();
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (x.scalar_type() == torch::kHalf) {
        scale_add_f16<<<blocks, threads, 0, stream>>>(
            x.data_ptr<at::Half>(), y.data_ptr<at::Half>(), out.data_ptr<at::Half>(),
            static_cast<float>(alpha), n);
    } else {
        scale_add_f32<<<blocks, threads, 0, stream>>>(
            x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(),
            static_cast<float>(alpha), n);
    }
    return out;
}
"""

scale_add_cpp_source = (
    "torch::Tensor scale_add_cuda(torch::Tensor x, torch::Tensor y, double alpha);"
)

scale_add = load_inline(
    name="scale_add_model",
    cpp_sources=scale_add_cpp_source,
    cuda_sources=scale_add_source,
    functions=["scale_add_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale_add = scale_add

    def forward(self, x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        return self.scale_add.scale_add_cuda(x, y, alpha)
