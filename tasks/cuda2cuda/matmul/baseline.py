"""Matrix product C = A @ B in CUDA: 32 x 32 output tiles staged through shared memory.

Each block of 32 x 32 threads computes one 32 x 32 tile of C, one element per thread: it walks
K in steps of 32, loading one tile of A and one of B into shared memory (zero outside the
matrices), and accumulates in float32 with scalar fused multiply-adds. No tensor cores, no
register blocking, no pipelining: a plain first CUDA version.
"""

import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int TILE = 32;

template <typename scalar_t>
__global__ void matmul_kernel(const scalar_t* __restrict__ a, const scalar_t* __restrict__ b,
                              scalar_t* __restrict__ c, int M, int N, int K) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int ka = k0 + threadIdx.x;
        const int kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] =
            (row < M && ka < K) ? static_cast<float>(a[static_cast<int64_t>(row) * K + ka]) : 0.0f;
        bs[threadIdx.y][threadIdx.x] =
            (kb < K && col < N) ? static_cast<float>(b[static_cast<int64_t>(kb) * N + col]) : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) {
            acc = fmaf(as[threadIdx.y][kk], bs[kk][threadIdx.x], acc);
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        c[static_cast<int64_t>(row) * N + col] = static_cast<scalar_t>(acc);
    }
}

torch::Tensor matmul(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.dim() == 2 && b.dim() == 2, "2-D CUDA tensors");
    TORCH_CHECK(a.size(1) == b.size(0), "inner dimensions differ");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int M = ac.size(0), K = ac.size(1), N = bc.size(1);
    auto c = torch::empty({M, N}, ac.options());
    if (M == 0 || N == 0) return c;
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "matmul", [&] {
        matmul_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
            ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), M, N, K);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

_EXT = load_inline(
    name="gauntlet_matmul_baseline",
    cpp_sources="torch::Tensor matmul(torch::Tensor a, torch::Tensor b);",
    cuda_sources=_CUDA,
    functions=["matmul"],
    extra_cuda_cflags=["-O3"],
)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _EXT.matmul(a, b)
