"""Log-softmax forward and backward in CUDA, one block per row.

Forward: each thread keeps an online (max, sum of exp) over its strided share of the row in one
read, the block merges the pairs with shuffles in a fixed order, and a second read writes
y = (x - max) - log(sum); the row's max and log-sum (float32) are kept apart for the backward:
their float32 sum would be rounded at the max's magnitude (1e-4 near 500), an error the exp
turns into a relative one on every probability. Backward: one read of
dy sums it over the row, a second read of dy and x writes dx = dy - exp(x - lse) * sum(dy),
recomputing the softmax from x in float32 rather than from the rounded output. Eager autograd
runs the forward's max, exp-sum and subtraction passes and a separate backward kernel over the
saved output.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cmath>
#include <cstdint>

// Visits i = start, start + step, ... below n with U loads in flight: with a stride known only
// at run time nvcc keeps one load at a time in such a loop, which is latency-bound when there
// are few rows (few blocks) to hide it. The order of the visits is unchanged.
template <int U, typename F>
__device__ __forceinline__ void strided(int64_t start, int64_t step, int64_t n, F&& f) {
    int64_t i = start;
    for (; i + (U - 1) * step < n; i += U * step) {
#pragma unroll
        for (int u = 0; u < U; ++u) f(i + u * step);
    }
    for (; i < n; i += step) f(i);
}

// The same over values: all U loads first, then `use` on each in order. A branch in `use`
// (the online max below) would otherwise keep nvcc from issuing the next load early.
template <int U, typename Load, typename Use>
__device__ __forceinline__ void strided_values(int64_t start, int64_t step, int64_t n, Load&& load,
                                               Use&& use) {
    int64_t i = start;
    for (; i + (U - 1) * step < n; i += U * step) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = load(i + u * step);
#pragma unroll
        for (int u = 0; u < U; ++u) use(v[u]);
    }
    for (; i < n; i += step) use(load(i));
}

constexpr int UNROLL = 8;  // loads in flight per thread

struct MaxSum {
    float m, s;  // running max and sum of exp(v - m)
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// The block's merged pair, in the same order on every call; every thread gets it.
__device__ __forceinline__ MaxSum block_merge(MaxSum v, MaxSum* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = merge(v, other);
    }
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        MaxSum w = lane < warps ? shared[lane] : MaxSum{-INFINITY, 0.0f};
        for (int o = 16; o > 0; o >>= 1) {
            MaxSum other{__shfl_xor_sync(0xffffffffu, w.m, o),
                         __shfl_xor_sync(0xffffffffu, w.s, o)};
            w = merge(w, other);
        }
        if (lane == 0) shared[0] = w;
    }
    __syncthreads();
    return shared[0];
}

__device__ __forceinline__ float block_sum(float v, float* shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < warps ? shared[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
        if (lane == 0) shared[0] = w;
    }
    __syncthreads();
    return shared[0];
}

template <typename T>
__global__ void __launch_bounds__(1024)
forward_kernel(const T* __restrict__ x, T* __restrict__ y, float* __restrict__ lse, int64_t cols) {
    __shared__ MaxSum pairs[32];
    const T* row = x + blockIdx.x * cols;
    MaxSum acc{-INFINITY, 0.0f};
    // One exp an element: the sum is rescaled only when the max moves (rarely).
    const auto load = [&](int64_t j) { return static_cast<float>(row[j]); };
    strided_values<UNROLL>(threadIdx.x, blockDim.x, cols, load, [&](float v) {
        if (v > acc.m) {
            acc.s = acc.s * expf(acc.m - v) + 1.0f;
            acc.m = v;
        } else if (acc.m != -INFINITY) {
            acc.s += expf(v - acc.m);
        }
    });
    const MaxSum total = block_merge(acc, pairs);
    const float log_sum = logf(total.s);
    T* out = y + blockIdx.x * cols;
    strided<UNROLL>(threadIdx.x, blockDim.x, cols, [&](int64_t j) {
        out[j] = static_cast<T>((static_cast<float>(row[j]) - total.m) - log_sum);
    });
    if (threadIdx.x == 0) {
        lse[2 * blockIdx.x] = total.m;
        lse[2 * blockIdx.x + 1] = log_sum;
    }
}

template <typename T>
__global__ void __launch_bounds__(1024)
backward_kernel(const T* __restrict__ x, const float* __restrict__ lse, const T* __restrict__ dy,
                T* __restrict__ dx, int64_t cols) {
    __shared__ float sums[32];
    const int64_t base = blockIdx.x * cols;
    float acc = 0.0f;
    strided<UNROLL>(threadIdx.x, blockDim.x, cols, [&](int64_t j) { acc += static_cast<float>(dy[base + j]); });
    const float total = block_sum(acc, sums);
    const float row_max = lse[2 * blockIdx.x], log_sum = lse[2 * blockIdx.x + 1];
    strided<UNROLL>(threadIdx.x, blockDim.x, cols, [&](int64_t j) {
        const float p = expf((static_cast<float>(x[base + j]) - row_max) - log_sum);
        dx[base + j] = static_cast<T>(static_cast<float>(dy[base + j]) - p * total);
    });
}

static int threads_for(int64_t cols) {
    // About eight elements a thread, in whole warps, 32 to 1024 threads.
    const int64_t warps = (cols / 8 + 31) / 32;
    return static_cast<int>(32 * std::min<int64_t>(32, std::max<int64_t>(1, warps)));
}

std::vector<torch::Tensor> log_softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2, "x: (rows, cols) on the GPU");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto lse = torch::empty({rows, 2}, xc.options().dtype(at::kFloat));  // (max, log-sum)
    if (rows == 0 || cols == 0) return {y, lse};
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "log_softmax", [&] {
        forward_kernel<scalar_t><<<rows, threads_for(cols), 0, stream>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), lse.data_ptr<float>(), cols);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {y, lse};
}

torch::Tensor log_softmax_backward(torch::Tensor x, torch::Tensor lse, torch::Tensor dy) {
    TORCH_CHECK(dy.scalar_type() == x.scalar_type(), "dy must have x's dtype");
    auto xc = x.contiguous();
    auto dyc = dy.contiguous();
    auto dx = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (rows == 0 || cols == 0) return dx;
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "log_softmax_bwd", [&] {
        backward_kernel<scalar_t><<<rows, threads_for(cols), 0, stream>>>(
            xc.data_ptr<scalar_t>(), lse.data_ptr<float>(), dyc.data_ptr<scalar_t>(),
            dx.data_ptr<scalar_t>(), cols);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return dx;
}
"""

_CPP = """
std::vector<torch::Tensor> log_softmax_forward(torch::Tensor x);
torch::Tensor log_softmax_backward(torch::Tensor x, torch::Tensor lse, torch::Tensor dy);
"""

_EXT = load_inline(
    name="gauntlet_log_softmax_rowblock",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["log_softmax_forward", "log_softmax_backward"],
    extra_cuda_cflags=["-O3"],
)


class LogSoftmaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y, lse = _EXT.log_softmax_forward(x)
        ctx.save_for_backward(x, lse)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, lse = ctx.saved_tensors
        return _EXT.log_softmax_backward(x, lse, dy)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """log_softmax over the last dimension; differentiable in x."""
    return LogSoftmaxFunction.apply(x)
