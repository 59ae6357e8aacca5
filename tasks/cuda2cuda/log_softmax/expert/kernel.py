"""Log-softmax over rows in CUDA: rows in registers when they fit, else an online max/sum.

One block per row. Rows of up to 512 * 4 16-byte packs (16K half-precision or 8K float32
values; 16K scalars when the width is not a multiple of 16 bytes) are loaded once into registers
by 64 to 512 threads sized to the row: a block max, one exp per element for the block sum, and
the output written from registers with 16-byte stores; one read, no rescaling. Longer rows
(vocabularies) are read twice by 512 threads: pass 1 keeps a running (max, sum of exp(x - max))
per thread, rescaling the sum when the max grows, merged with warp shuffles and across warps;
pass 2 reads the row again (mostly from L2) and writes the output. The row's max and log-sum
are applied apart, (x - max) - log(sum): their float32 sum would be rounded at the max's
magnitude. Reduction order depends on the shape only, so results repeat bitwise.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define DISPATCH_FLOATS(TYPE, NAME, ...) \
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum (or max) over the block; every thread gets the same value. `red` holds 32 floats.
template <bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = MAX ? warp_max(v) : warp_sum(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < warps ? red[lane] : (MAX ? -INFINITY : 0.0f);
        w = MAX ? warp_max(w) : warp_sum(w);
        if (lane == 0) red[0] = w;
    }
    __syncthreads();
    return red[0];
}

// 16 bytes of T: vectorized loads and stores.
template <typename T>
struct alignas(16) Pack {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

__host__ __forceinline__ bool aligned16(const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

constexpr int THREADS = 512;  // online path
constexpr int MAXP = 4;       // 16-byte packs a thread keeps in registers
constexpr int MAXE = 32;      // single elements a thread keeps (unaligned widths)

// Rows in registers, as 16-byte packs: blockDim.x * MAXP packs at most.
template <typename scalar_t>
__global__ void __launch_bounds__(THREADS)
cached_vec(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t cols) {
    using P = Pack<scalar_t>;
    constexpr int N = P::N;
    __shared__ float red[32];
    const int64_t packs = cols / N;
    const int nt = blockDim.x;
    const P* row = reinterpret_cast<const P*>(x + blockIdx.x * cols);
    P* out = reinterpret_cast<P*>(y + blockIdx.x * cols);
    // Fully unrolled with predicates (no break), so regs stays in registers.
    P regs[MAXP];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < MAXP; ++k) {
        const int64_t p = threadIdx.x + static_cast<int64_t>(k) * nt;
        if (p < packs) {
            regs[k] = row[p];
#pragma unroll
            for (int e = 0; e < N; ++e) m = fmaxf(m, static_cast<float>(regs[k].v[e]));
        }
    }
    m = block_reduce<true>(m, red);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXP; ++k) {
        const int64_t p = threadIdx.x + static_cast<int64_t>(k) * nt;
        if (p < packs) {
#pragma unroll
            for (int e = 0; e < N; ++e) s += expf(static_cast<float>(regs[k].v[e]) - m);
        }
    }
    const float log_sum = logf(block_reduce<false>(s, red));
#pragma unroll
    for (int k = 0; k < MAXP; ++k) {
        const int64_t p = threadIdx.x + static_cast<int64_t>(k) * nt;
        if (p < packs) {
            P o;
#pragma unroll
            for (int e = 0; e < N; ++e) {
                o.v[e] = static_cast<scalar_t>((static_cast<float>(regs[k].v[e]) - m) - log_sum);
            }
            out[p] = o;
        }
    }
}

// Rows in registers, element by element (widths that are not a multiple of 16 bytes).
template <typename scalar_t>
__global__ void __launch_bounds__(THREADS)
cached_scalar(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t cols) {
    __shared__ float red[32];
    const int nt = blockDim.x;
    const scalar_t* row = x + blockIdx.x * cols;
    scalar_t* out = y + blockIdx.x * cols;
    float regs[MAXE];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
        const int64_t j = threadIdx.x + static_cast<int64_t>(k) * nt;
        regs[k] = j < cols ? static_cast<float>(row[j]) : -INFINITY;
        m = fmaxf(m, regs[k]);
    }
    m = block_reduce<true>(m, red);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
        const int64_t j = threadIdx.x + static_cast<int64_t>(k) * nt;
        if (j < cols) s += expf(regs[k] - m);
    }
    const float log_sum = logf(block_reduce<false>(s, red));
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
        const int64_t j = threadIdx.x + static_cast<int64_t>(k) * nt;
        if (j < cols) out[j] = static_cast<scalar_t>((regs[k] - m) - log_sum);
    }
}

__device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
    } else {
        s += expf(v - m);
    }
}

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) {
        m = m2;
        s = s2;
        return;
    }
    const float mn = fmaxf(m, m2);
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

// Rows too long for registers: an online (max, sum) in one read, the output in a second.
template <typename scalar_t, bool VEC>
__global__ void __launch_bounds__(THREADS)
online_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t cols) {
    using P = Pack<scalar_t>;
    constexpr int N = P::N;
    __shared__ float ms[32], ss[32];
    const scalar_t* row = x + blockIdx.x * cols;
    scalar_t* out = y + blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    if (VEC) {
        const P* rp = reinterpret_cast<const P*>(row);
        for (int64_t p = threadIdx.x; p < cols / N; p += THREADS) {
            const P v = rp[p];
#pragma unroll
            for (int e = 0; e < N; ++e) online_add(m, s, static_cast<float>(v.v[e]));
        }
    } else {
        for (int64_t j = threadIdx.x; j < cols; j += THREADS) online_add(m, s, static_cast<float>(row[j]));
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        ms[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < THREADS / 32 ? ms[lane] : -INFINITY;
        s = lane < THREADS / 32 ? ss[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
            const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
            merge(m, s, m2, s2);
        }
        if (lane == 0) {
            ms[0] = m;
            ss[0] = s;
        }
    }
    __syncthreads();
    const float row_max = ms[0], log_sum = logf(ss[0]);
    if (VEC) {
        const P* rp = reinterpret_cast<const P*>(row);
        P* op = reinterpret_cast<P*>(out);
        for (int64_t p = threadIdx.x; p < cols / N; p += THREADS) {
            P v = rp[p];
#pragma unroll
            for (int e = 0; e < N; ++e) {
                v.v[e] = static_cast<scalar_t>((static_cast<float>(v.v[e]) - row_max) - log_sum);
            }
            op[p] = v;
        }
    } else {
        for (int64_t j = threadIdx.x; j < cols; j += THREADS) {
            out[j] = static_cast<scalar_t>((static_cast<float>(row[j]) - row_max) - log_sum);
        }
    }
}

// Threads for one row kept in registers: about `per` items each, a multiple of 32 in [64, 512].
inline int threads_for(int64_t items, int per) {
    const int64_t t = ((items + per - 1) / per + 31) / 32 * 32;
    return static_cast<int>(t < 64 ? 64 : (t > THREADS ? THREADS : t));
}

torch::Tensor log_softmax(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2, "a 2-D CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (rows == 0 || cols == 0) return y;
    auto stream = at::cuda::getCurrentCUDAStream();
    DISPATCH_FLOATS(xc.scalar_type(), "log_softmax", [&] {
        constexpr int N = Pack<scalar_t>::N;
        const scalar_t* xp = xc.data_ptr<scalar_t>();
        scalar_t* yp = y.data_ptr<scalar_t>();
        if (cols % N == 0 && aligned16(xp) && aligned16(yp)) {
            const int threads = threads_for(cols / N, MAXP);
            if (cols / N <= static_cast<int64_t>(threads) * MAXP) {
                cached_vec<scalar_t><<<rows, threads, 0, stream>>>(xp, yp, cols);
            } else {
                online_kernel<scalar_t, true><<<rows, THREADS, 0, stream>>>(xp, yp, cols);
            }
        } else {
            const int threads = threads_for(cols, MAXE);
            if (cols <= static_cast<int64_t>(threads) * MAXE) {
                cached_scalar<scalar_t><<<rows, threads, 0, stream>>>(xp, yp, cols);
            } else {
                online_kernel<scalar_t, false><<<rows, THREADS, 0, stream>>>(xp, yp, cols);
            }
        }
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP = """
torch::Tensor log_softmax(torch::Tensor x);
"""

_EXT = load_inline(
    name="gauntlet_log_softmax_registers",
    cpp_sources=_CPP,
    cuda_sources=_CUDA,
    functions=["log_softmax"],
    extra_cuda_cflags=["-O3"],
)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    return _EXT.log_softmax(x)
