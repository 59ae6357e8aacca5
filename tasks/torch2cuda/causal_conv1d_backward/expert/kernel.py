"""Causal depthwise conv1d + SiLU, forward and backward, in CUDA.

Forward: one thread per output element (taps through L1), SiLU in float32. Backward: a block
per (sample, channel, 256 positions) recomputes the pre-activation a at its positions and the
width - 1 after them (cheaper than storing it), keeps g = dy * silu'(a) in shared memory,
writes dx[t] = sum_k w[k] * g[t + width - 1 - k], and reduces the block's share of dweight and
dbias in a fixed order; a small kernel adds the shares per channel in a fixed order (no atomics:
bitwise reproducible). x and dy are read once from memory. Eager autograd runs a grouped
convolution's data and weight gradients, a bias reduction and the SiLU backward, each through
memory.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

constexpr int BLOCK = 256;     // positions (and threads) of a block
constexpr int MAX_WIDTH = 4;

__device__ __forceinline__ float sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }

// The pre-activation at position t of one (sample, channel) row; x before 0 counts as zero.
template <typename T>
__device__ __forceinline__ float pre_activation(const T* __restrict__ row, const float* w,
                                                float bias, int64_t t, int width) {
    float a = bias;
    for (int k = 0; k < width; ++k) {
        const int64_t src = t - (width - 1) + k;
        if (src >= 0) a += w[k] * static_cast<float>(row[src]);
    }
    return a;
}

// grid.x: (sample, channel) rows; grid.y: blocks of positions.
template <typename T>
__global__ void __launch_bounds__(BLOCK)
forward_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
               T* __restrict__ y, int64_t dim, int64_t seqlen, int width) {
    const int64_t plane = blockIdx.x, d = plane % dim;
    const int64_t t = blockIdx.y * static_cast<int64_t>(BLOCK) + threadIdx.x;
    if (t >= seqlen) return;
    float w[MAX_WIDTH];
    for (int k = 0; k < width; ++k) w[k] = static_cast<float>(weight[d * width + k]);
    const T* row = x + plane * seqlen;
    const float a = pre_activation(row, w, static_cast<float>(bias[d]), t, width);
    y[plane * seqlen + t] = static_cast<T>(a * sigmoid(a));
}

// Block (plane, blk): dx at its positions and its share of dweight[d, :] and dbias[d] in
// part[(plane * blocks + blk) * (MAX_WIDTH + 1) + ...].
template <typename T>
__global__ void __launch_bounds__(BLOCK)
backward_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                const T* __restrict__ dy, T* __restrict__ dx, float* __restrict__ part,
                int64_t dim, int64_t seqlen, int width) {
    __shared__ float g[BLOCK + MAX_WIDTH - 1];
    __shared__ float warp_sums[BLOCK / 32][MAX_WIDTH + 1];
    const int64_t plane = blockIdx.x, d = plane % dim;
    const int64_t t0 = blockIdx.y * static_cast<int64_t>(BLOCK);
    float w[MAX_WIDTH];
    for (int k = 0; k < width; ++k) w[k] = static_cast<float>(weight[d * width + k]);
    const float b = static_cast<float>(bias[d]);
    const T* row = x + plane * seqlen;
    const T* drow = dy + plane * seqlen;
    // g at t0 .. t0 + BLOCK + width - 2: each thread its own position, the first width - 1
    // threads also the positions past the block (zero past the end of the row).
    for (int i = threadIdx.x; i < BLOCK + width - 1; i += BLOCK) {
        const int64_t t = t0 + i;
        float gi = 0.0f;
        if (t < seqlen) {
            const float a = pre_activation(row, w, b, t, width);
            const float s = sigmoid(a);
            gi = static_cast<float>(drow[t]) * s * (1.0f + a * (1.0f - s));
        }
        g[i] = gi;
    }
    __syncthreads();
    const int64_t t = t0 + threadIdx.x;
    float share[MAX_WIDTH + 1] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (t < seqlen) {
        float acc = 0.0f;
        for (int j = 0; j < width; ++j) acc += w[width - 1 - j] * g[threadIdx.x + j];
        dx[plane * seqlen + t] = static_cast<T>(acc);
        const float gt = g[threadIdx.x];
        for (int k = 0; k < width; ++k) {
            const int64_t src = t - (width - 1) + k;
            if (src >= 0) share[k] = gt * static_cast<float>(row[src]);
        }
        share[MAX_WIDTH] = gt;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k <= MAX_WIDTH; ++k) {
        float v = share[k];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) warp_sums[warp][k] = v;
    }
    __syncthreads();
    if (threadIdx.x <= MAX_WIDTH) {
        float total = 0.0f;
        for (int i = 0; i < BLOCK / 32; ++i) total += warp_sums[i][threadIdx.x];
        part[(plane * gridDim.y + blockIdx.y) * (MAX_WIDTH + 1) + threadIdx.x] = total;
    }
}

// One thread per channel: its shares over samples and position blocks, in order.
template <typename T>
__global__ void sum_parts_kernel(const float* __restrict__ part, T* __restrict__ dweight,
                                 T* __restrict__ dbias, int64_t batch, int64_t dim,
                                 int64_t blocks, int width) {
    const int64_t d = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (d >= dim) return;
    float sums[MAX_WIDTH + 1] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t s = 0; s < batch; ++s) {
        const float* p = part + (s * dim + d) * blocks * (MAX_WIDTH + 1);
        for (int64_t i = 0; i < blocks; ++i) {
#pragma unroll
            for (int k = 0; k <= MAX_WIDTH; ++k) sums[k] += p[i * (MAX_WIDTH + 1) + k];
        }
    }
    for (int k = 0; k < width; ++k) dweight[d * width + k] = static_cast<T>(sums[k]);
    dbias[d] = static_cast<T>(sums[MAX_WIDTH]);
}

torch::Tensor conv_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 3 && weight.dim() == 2, "x (batch, dim, seqlen), weight (dim, width)");
    const int width = static_cast<int>(weight.size(1));
    TORCH_CHECK(width >= 1 && width <= MAX_WIDTH, "width must be 1 to 4");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t planes = xc.size(0) * xc.size(1), seqlen = xc.size(2);
    if (planes == 0 || seqlen == 0) return y;
    const dim3 grid(planes, (seqlen + BLOCK - 1) / BLOCK);
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "conv_fwd", [&] {
        forward_kernel<scalar_t><<<grid, BLOCK, 0, stream>>>(
            xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(),
            y.data_ptr<scalar_t>(), xc.size(1), seqlen, width);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}

std::vector<torch::Tensor> conv_backward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                         torch::Tensor dy) {
    TORCH_CHECK(dy.scalar_type() == x.scalar_type(), "dy must have x's dtype");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    auto dyc = dy.contiguous();
    const int width = static_cast<int>(wc.size(1));
    const int64_t batch = xc.size(0), dim = xc.size(1), seqlen = xc.size(2);
    auto dx = torch::empty_like(xc);
    auto dw = torch::empty_like(wc);
    auto db = torch::empty_like(bc);
    if (dim == 0) return {dx, dw, db};
    if (batch == 0 || seqlen == 0) return {dx, torch::zeros_like(wc), torch::zeros_like(bc)};
    const int64_t blocks = (seqlen + BLOCK - 1) / BLOCK;
    auto part = torch::empty({batch * dim * blocks * (MAX_WIDTH + 1)}, xc.options().dtype(at::kFloat));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "conv_bwd", [&] {
        backward_kernel<scalar_t><<<dim3(batch * dim, blocks), BLOCK, 0, stream>>>(
            xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(),
            dyc.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>(), part.data_ptr<float>(), dim,
            seqlen, width);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        sum_parts_kernel<scalar_t><<<(dim + 127) / 128, 128, 0, stream>>>(
            part.data_ptr<float>(), dw.data_ptr<scalar_t>(), db.data_ptr<scalar_t>(), batch, dim,
            blocks, width);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {dx, dw, db};
}
"""

_CPP = """
torch::Tensor conv_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);
std::vector<torch::Tensor> conv_backward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                         torch::Tensor dy);
"""

_EXT = load_inline(
    name="gauntlet_causal_conv1d_bwd_shared",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["conv_forward", "conv_backward"],
    extra_cuda_cflags=["-O3"],
)


class CausalConv1dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight, bias)
        return _EXT.conv_forward(x, weight, bias)

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, weight, bias = ctx.saved_tensors
        dx, dw, db = _EXT.conv_backward(x, weight, bias, dy)
        return dx, dw, db


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """silu(causal depthwise conv1d(x) + bias); differentiable in x, weight and bias."""
    return CausalConv1dFunction.apply(x, weight, bias)
