"""Rotary position embedding (rotate-half) of q and k in CUDA: one launch, one pass.

Each thread takes 16 bytes of a head vector's first half and the matching 16 bytes of its second
half (8 half-precision or 4 float32 elements), the position's cos/sin entries from the small
float32 tables (cache-resident), and writes both rotated halves: q and k are read once and
written once, in one launch covering both. Eager PyTorch upcasts, slices, multiplies, adds,
concatenates and casts back, each op a pass through memory. Head sizes whose half is not a
multiple of the 16-byte pack fall back to one element pair per thread.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define DISPATCH_FLOATS(TYPE, NAME, ...) \
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

template <typename T>
struct alignas(16) Pack {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

constexpr int THREADS = 256;

// Thread g rotates elements j0 .. j0 + V - 1 of one head vector's halves; threads [0, q_groups)
// work on q, the rest on k. V = Pack<T>::N when VEC, else 1.
template <typename T, bool VEC>
__global__ void __launch_bounds__(THREADS)
rope_kernel(const T* __restrict__ q, const T* __restrict__ k, const float* __restrict__ cos_t,
            const float* __restrict__ sin_t, T* __restrict__ q_out, T* __restrict__ k_out,
            int64_t q_groups, int64_t k_groups, int64_t half, int64_t seq, int64_t q_heads,
            int64_t k_heads) {
    constexpr int V = VEC ? Pack<T>::N : 1;
    int64_t g = blockIdx.x * static_cast<int64_t>(THREADS) + threadIdx.x;
    const T* src = q;
    T* dst = q_out;
    int64_t heads = q_heads;
    if (g >= q_groups) {
        g -= q_groups;
        if (g >= k_groups) return;
        src = k;
        dst = k_out;
        heads = k_heads;
    }
    const int64_t per_row = half / V;
    const int64_t row = g / per_row;                 // (batch, position, head)
    const int64_t j0 = (g - row * per_row) * V;
    const int64_t pos = (row / heads) % seq;
    const int64_t lo = row * 2 * half + j0, hi = lo + half;
    const float* c = cos_t + pos * half + j0;
    const float* s = sin_t + pos * half + j0;
    if constexpr (VEC) {
        const Pack<T> a = *reinterpret_cast<const Pack<T>*>(src + lo);
        const Pack<T> b = *reinterpret_cast<const Pack<T>*>(src + hi);
        Pack<T> ra, rb;
#pragma unroll
        for (int e = 0; e < V; ++e) {
            const float x1 = static_cast<float>(a.v[e]), x2 = static_cast<float>(b.v[e]);
            const float ce = __ldg(c + e), se = __ldg(s + e);
            ra.v[e] = static_cast<T>(x1 * ce - x2 * se);
            rb.v[e] = static_cast<T>(x2 * ce + x1 * se);
        }
        *reinterpret_cast<Pack<T>*>(dst + lo) = ra;
        *reinterpret_cast<Pack<T>*>(dst + hi) = rb;
    } else {
        const float x1 = static_cast<float>(src[lo]), x2 = static_cast<float>(src[hi]);
        const float ce = __ldg(c), se = __ldg(s);
        dst[lo] = static_cast<T>(x1 * ce - x2 * se);
        dst[hi] = static_cast<T>(x2 * ce + x1 * se);
    }
}

__host__ __forceinline__ bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

std::vector<torch::Tensor> rope(torch::Tensor q, torch::Tensor k, torch::Tensor cos_t,
                                torch::Tensor sin_t) {
    TORCH_CHECK(q.is_cuda() && q.dim() == 4 && k.dim() == 4, "q, k: (batch, seq, heads, head_dim)");
    TORCH_CHECK(q.scalar_type() == k.scalar_type(), "q and k must share a dtype");
    TORCH_CHECK(cos_t.scalar_type() == at::kFloat && sin_t.scalar_type() == at::kFloat,
                "cos and sin must be float32");
    auto qc = q.contiguous();
    auto kc = k.contiguous();
    auto cc = cos_t.contiguous();
    auto sc = sin_t.contiguous();
    auto q_out = torch::empty_like(qc);
    auto k_out = torch::empty_like(kc);
    const int64_t dim = qc.size(3), half = dim / 2, seq = qc.size(1);
    TORCH_CHECK(dim % 2 == 0 && kc.size(3) == dim, "head_dim must be even and shared by q and k");
    const int64_t q_pairs = qc.numel() / 2, k_pairs = kc.numel() / 2;
    if (q_pairs + k_pairs == 0) return {q_out, k_out};
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(qc.scalar_type(), "rope", [&] {
        constexpr int64_t N = Pack<scalar_t>::N;
        const bool vec = half % N == 0 && aligned16(qc.data_ptr()) && aligned16(kc.data_ptr()) &&
                         aligned16(q_out.data_ptr()) && aligned16(k_out.data_ptr());
        const int64_t v = vec ? N : 1;
        const int64_t q_groups = q_pairs / v, k_groups = k_pairs / v;
        const int64_t blocks = (q_groups + k_groups + THREADS - 1) / THREADS;
        auto launch = [&](auto kernel) {
            kernel<<<blocks, THREADS, 0, stream>>>(
                qc.data_ptr<scalar_t>(), kc.data_ptr<scalar_t>(), cc.data_ptr<float>(),
                sc.data_ptr<float>(), q_out.data_ptr<scalar_t>(), k_out.data_ptr<scalar_t>(),
                q_groups, k_groups, half, seq, qc.size(2), kc.size(2));
        };
        if (vec) {
            launch(rope_kernel<scalar_t, true>);
        } else {
            launch(rope_kernel<scalar_t, false>);
        }
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {q_out, k_out};
}
"""

_CPP = """
std::vector<torch::Tensor> rope(torch::Tensor q, torch::Tensor k, torch::Tensor cos_t,
                                torch::Tensor sin_t);
"""

_EXT = load_inline(
    name="gauntlet_rope_pack16",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["rope"],
    extra_cuda_cflags=["-O3"],
)


def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    q_rot, k_rot = _EXT.rope(q, k, cos, sin)
    return q_rot, k_rot
