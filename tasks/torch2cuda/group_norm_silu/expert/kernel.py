"""GroupNorm + SiLU in CUDA: split statistics, then one fused normalize-affine-SiLU pass.

A group (channels / groups consecutive channels of one sample) is contiguous in NCHW. Its
values are split into chunks over enough blocks to fill the GPU (a few groups of a million
values would otherwise leave most SMs idle); each thread sums its values and their squares
shifted by its first value (no division an element), turns them into (count, mean, M2), and
the block merges those with Chan's formula in a fixed order into one partial per chunk; a
small kernel merges a group's chunks in order into its mean and 1 / sqrt(var + eps). The last pass
reads x once more and writes silu((x - mean) * rstd * weight + bias), one (sample, channel)
plane per block row, so the per-element work has no divisions. x is read twice and y written
once; eager PyTorch's group_norm and silu are separate passes with their own statistics.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int TARGET_BLOCKS = 1056;   // about 8 blocks per SM on an H100
constexpr int64_t MIN_CHUNK = 4096;   // values a statistics block takes at least

// (count, mean, sum of squared deviations), merged with Chan's formula.
struct Welford {
    float n, mean, m2;
};

__device__ __forceinline__ Welford combine(Welford a, Welford b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return {0.0f, 0.0f, 0.0f};
    const float delta = b.mean - a.mean, wb = b.n / n;
    return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb};
}

// Block (chunk, group): the chunk's triple into part[group * chunks + chunk], in a fixed order.
// Each thread sums (v - shift) and its square over its strided values, shift being its first
// value (one subtraction and two adds an element, no division), then turns the sums into a
// triple: its few values cancel little even when the shift is an outlier of `special` inputs.
template <typename T>
__global__ void __launch_bounds__(THREADS)
stats_kernel(const T* __restrict__ x, Welford* __restrict__ part, int64_t group_size,
             int64_t chunk_size) {
    __shared__ Welford warp_acc[THREADS / 32];
    const int64_t group = blockIdx.y, chunk = blockIdx.x;
    const int64_t start = chunk * chunk_size + threadIdx.x;
    const int64_t end = std::min((chunk + 1) * chunk_size, group_size);
    const T* g = x + group * group_size;
    const float shift = start < end ? static_cast<float>(g[start]) : 0.0f;
    float n = 0.0f, s1 = 0.0f, s2 = 0.0f;
    for (int64_t i = start; i < end; i += THREADS) {
        const float d = static_cast<float>(g[i]) - shift;
        n += 1.0f;
        s1 += d;
        s2 = fmaf(d, d, s2);
    }
    Welford acc{0.0f, 0.0f, 0.0f};
    if (n > 0.0f) acc = {n, shift + s1 / n, fmaxf(s2 - s1 * s1 / n, 0.0f)};
    for (int o = 16; o > 0; o >>= 1) {
        acc = combine(acc, Welford{__shfl_xor_sync(0xffffffffu, acc.n, o),
                                   __shfl_xor_sync(0xffffffffu, acc.mean, o),
                                   __shfl_xor_sync(0xffffffffu, acc.m2, o)});
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_acc[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        Welford total = warp_acc[0];
        for (int w = 1; w < THREADS / 32; ++w) total = combine(total, warp_acc[w]);
        part[group * gridDim.x + chunk] = total;
    }
}

// One thread per group: its chunks merged in order into (mean, rstd).
__global__ void finish_kernel(const Welford* __restrict__ part, float2* __restrict__ stats,
                              int64_t groups_total, int64_t chunks, float eps) {
    const int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (group >= groups_total) return;
    Welford total = part[group * chunks];
    for (int64_t c = 1; c < chunks; ++c) total = combine(total, part[group * chunks + c]);
    const float var = total.n > 0.0f ? total.m2 / total.n : 0.0f;
    stats[group] = make_float2(total.mean, rsqrtf(var + eps));
}

// Block row = one (sample, channel) plane of hw values; blocks along x split the plane.
template <typename T>
__global__ void __launch_bounds__(THREADS)
apply_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
             const float2* __restrict__ stats, T* __restrict__ y, int64_t channels,
             int64_t channels_per_group, int64_t hw) {
    const int64_t plane = blockIdx.y;
    const int64_t c = plane % channels, sample = plane / channels;
    const float2 ms = stats[sample * (channels / channels_per_group) + c / channels_per_group];
    const float scale = ms.y * static_cast<float>(weight[c]);
    const float shift = static_cast<float>(bias[c]) - ms.x * scale;
    const T* src = x + plane * hw;
    T* dst = y + plane * hw;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(THREADS) + threadIdx.x; i < hw;
         i += static_cast<int64_t>(gridDim.x) * THREADS) {
        const float a = static_cast<float>(src[i]) * scale + shift;
        dst[i] = static_cast<T>(a / (1.0f + expf(-a)));
    }
}

torch::Tensor group_norm_silu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                              int64_t groups, double eps) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 4, "x: (batch, channels, height, width) on the GPU");
    const int64_t batch = x.size(0), channels = x.size(1), hw = x.size(2) * x.size(3);
    TORCH_CHECK(groups > 0 && channels % groups == 0, "groups must divide channels");
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() == 0) return y;
    const int64_t groups_total = batch * groups;
    const int64_t group_size = (channels / groups) * hw;
    const int64_t wanted = std::max<int64_t>(1, TARGET_BLOCKS / groups_total);
    const int64_t chunks = std::max<int64_t>(
        1, std::min<int64_t>(wanted, (group_size + MIN_CHUNK - 1) / MIN_CHUNK));
    const int64_t chunk_size = (group_size + chunks - 1) / chunks;
    auto part = torch::empty({groups_total * chunks * 3}, xc.options().dtype(at::kFloat));
    auto stats = torch::empty({groups_total * 2}, xc.options().dtype(at::kFloat));
    auto* part_ptr = reinterpret_cast<Welford*>(part.data_ptr<float>());
    auto* stats_ptr = reinterpret_cast<float2*>(stats.data_ptr<float>());
    const int64_t planes = batch * channels;
    const int64_t plane_blocks = std::max<int64_t>(
        1, std::min<int64_t>((hw + THREADS - 1) / THREADS,
                             (TARGET_BLOCKS * 4 + planes - 1) / planes));
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "group_norm_silu", [&] {
        stats_kernel<scalar_t><<<dim3(chunks, groups_total), THREADS, 0, stream>>>(
            xc.data_ptr<scalar_t>(), part_ptr, group_size, chunk_size);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        finish_kernel<<<(groups_total + 127) / 128, 128, 0, stream>>>(
            part_ptr, stats_ptr, groups_total, chunks, static_cast<float>(eps));
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        apply_kernel<scalar_t><<<dim3(plane_blocks, planes), THREADS, 0, stream>>>(
            xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), stats_ptr,
            y.data_ptr<scalar_t>(), channels, channels / groups, hw);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor group_norm_silu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                              int64_t groups, double eps);
"""

_EXT = load_inline(
    name="gauntlet_group_norm_silu_split",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["group_norm_silu"],
    extra_cuda_cflags=["-O3"],
)


def group_norm_silu(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, groups: int, eps: float
) -> torch.Tensor:
    return _EXT.group_norm_silu(x, weight, bias, int(groups), float(eps))
