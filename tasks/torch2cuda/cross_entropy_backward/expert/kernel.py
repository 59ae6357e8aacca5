"""Cross-entropy loss forward and backward in CUDA.

Forward: one block per row keeps an online (max, sum of exp) over the row in one read, merged in
a fixed order, and writes the row's max and log-sum apart (their float32 sum would be rounded at
the max's magnitude, an error exp() turns into a relative one on every probability) and its loss
term (max - logits[target]) + log-sum; one more
block adds the rows' terms in a fixed order into the mean (bitwise reproducible, no atomics).
Backward: one block per row reads dloss on the device and writes
dlogits = dloss / rows * (exp((logits - max) - log-sum) - onehot) in one read of the logits. Eager autograd
runs log_softmax (max, exp-sum, subtract), a gather, a mean, and their backward kernels, each
through memory.
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
row_kernel(const T* __restrict__ logits, const int64_t* __restrict__ targets,
           float* __restrict__ lse, float* __restrict__ terms, int64_t vocab) {
    __shared__ MaxSum pairs[32];
    const T* row = logits + blockIdx.x * vocab;
    MaxSum acc{-INFINITY, 0.0f};
    // One exp an element: the sum is rescaled only when the max moves (rarely).
    const auto load = [&](int64_t j) { return static_cast<float>(row[j]); };
    strided_values<UNROLL>(threadIdx.x, blockDim.x, vocab, load, [&](float v) {
        if (v > acc.m) {
            acc.s = acc.s * expf(acc.m - v) + 1.0f;
            acc.m = v;
        } else if (acc.m != -INFINITY) {
            acc.s += expf(v - acc.m);
        }
    });
    const MaxSum total = block_merge(acc, pairs);
    if (threadIdx.x == 0) {
        const float log_sum = logf(total.s);
        lse[2 * blockIdx.x] = total.m;
        lse[2 * blockIdx.x + 1] = log_sum;
        terms[blockIdx.x] = (total.m - static_cast<float>(row[targets[blockIdx.x]])) + log_sum;
    }
}

template <typename T>
__global__ void __launch_bounds__(1024)
mean_kernel(const float* __restrict__ terms, T* __restrict__ loss, int64_t rows) {
    __shared__ float sums[32];
    float acc = 0.0f;
    strided<UNROLL>(threadIdx.x, blockDim.x, rows, [&](int64_t r) { acc += terms[r]; });
    const float total = block_sum(acc, sums);
    if (threadIdx.x == 0) *loss = static_cast<T>(total / static_cast<float>(rows));
}

template <typename T>
__global__ void __launch_bounds__(1024)
grad_kernel(const T* __restrict__ logits, const int64_t* __restrict__ targets,
            const float* __restrict__ lse, const T* __restrict__ dloss, T* __restrict__ dlogits,
            int64_t rows, int64_t vocab) {
    const float scale = static_cast<float>(*dloss) / static_cast<float>(rows);
    const float row_max = lse[2 * blockIdx.x], log_sum = lse[2 * blockIdx.x + 1];
    const int64_t target = targets[blockIdx.x];
    const int64_t base = blockIdx.x * vocab;
    strided<UNROLL>(threadIdx.x, blockDim.x, vocab, [&](int64_t j) {
        const float p = expf((static_cast<float>(logits[base + j]) - row_max) - log_sum);
        dlogits[base + j] = static_cast<T>(scale * (p - (j == target ? 1.0f : 0.0f)));
    });
}

static int threads_for(int64_t cols) {
    // About eight elements a thread, in whole warps, 32 to 1024 threads.
    const int64_t warps = (cols / 8 + 31) / 32;
    return static_cast<int>(32 * std::min<int64_t>(32, std::max<int64_t>(1, warps)));
}

std::vector<torch::Tensor> cross_entropy_forward(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(logits.is_cuda() && logits.dim() == 2, "logits: (rows, vocab) on the GPU");
    TORCH_CHECK(targets.scalar_type() == at::kLong && targets.dim() == 1, "targets: int64 (rows,)");
    auto lc = logits.contiguous();
    auto tc = targets.contiguous();
    const int64_t rows = lc.size(0), vocab = lc.size(1);
    TORCH_CHECK(rows > 0 && vocab > 0, "cross entropy needs at least one row and one class");
    auto loss = torch::empty({}, lc.options());
    auto lse = torch::empty({rows, 2}, lc.options().dtype(at::kFloat));  // (max, log-sum)
    auto terms = torch::empty({rows}, lc.options().dtype(at::kFloat));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, lc.scalar_type(), "cross_entropy", [&] {
        row_kernel<scalar_t><<<rows, threads_for(vocab), 0, stream>>>(
            lc.data_ptr<scalar_t>(), tc.data_ptr<int64_t>(), lse.data_ptr<float>(),
            terms.data_ptr<float>(), vocab);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        mean_kernel<scalar_t><<<1, 1024, 0, stream>>>(
            terms.data_ptr<float>(), loss.data_ptr<scalar_t>(), rows);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {loss, lse};
}

torch::Tensor cross_entropy_backward(torch::Tensor logits, torch::Tensor targets,
                                     torch::Tensor lse, torch::Tensor dloss) {
    TORCH_CHECK(dloss.scalar_type() == logits.scalar_type() && dloss.numel() == 1,
                "dloss: one value of the logits' dtype");
    auto lc = logits.contiguous();
    auto tc = targets.contiguous();
    const int64_t rows = lc.size(0), vocab = lc.size(1);
    auto dlogits = torch::empty_like(lc);
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, lc.scalar_type(), "cross_entropy_bwd", [&] {
        grad_kernel<scalar_t><<<rows, threads_for(vocab), 0, stream>>>(
            lc.data_ptr<scalar_t>(), tc.data_ptr<int64_t>(), lse.data_ptr<float>(),
            dloss.data_ptr<scalar_t>(), dlogits.data_ptr<scalar_t>(), rows, vocab);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return dlogits;
}
"""

_CPP = """
std::vector<torch::Tensor> cross_entropy_forward(torch::Tensor logits, torch::Tensor targets);
torch::Tensor cross_entropy_backward(torch::Tensor logits, torch::Tensor targets,
                                     torch::Tensor lse, torch::Tensor dloss);
"""

_EXT = load_inline(
    name="gauntlet_cross_entropy_rowblock",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["cross_entropy_forward", "cross_entropy_backward"],
    extra_cuda_cflags=["-O3"],
)


class CrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        loss, lse = _EXT.cross_entropy_forward(logits, targets)
        ctx.save_for_backward(logits, targets, lse)
        return loss

    @staticmethod
    def backward(ctx, dloss: torch.Tensor):
        logits, targets, lse = ctx.saved_tensors
        return _EXT.cross_entropy_backward(logits, targets, lse, dloss.contiguous()), None


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of logits against int64 targets; differentiable in the logits."""
    return CrossEntropyFunction.apply(logits, targets)
