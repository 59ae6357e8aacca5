"""The rvv tasks: what each computes, its contract, configurations and roofline.

Configurations go from C1 (small, aligned, default hardware) to C5 (awkward sizes on a narrow
machine: short registers, few lanes, a slow memory); the `hw_*` parameters override rvv's
hardware (VLEN, LANES, MEM_LATENCY, LINE_BYTES), so one program must work for every VLEN.
"""

from __future__ import annotations

import dataclasses

from .taskfiles import ParamValue, TaskDef

Config = dict[str, ParamValue]

NARROW: Config = {"hw_vlen": 8, "hw_lanes": 4, "hw_mem_latency": 80}
WIDE: Config = {"hw_vlen": 64, "hw_lanes": 16}

ROW_VISIBLE: list[Config] = [
    {"name": "C1", "ROWS": 64, "COLS": 256, "dtype": "float32"},
    {"name": "C2", "ROWS": 100, "COLS": 300, "dtype": "bfloat16"},
    {"name": "C3", "ROWS": 32, "COLS": 1024, "dtype": "float32", **WIDE},
    {"name": "C4", "ROWS": 128, "COLS": 96, "dtype": "bfloat16", "hw_vlen": 16},
    {"name": "C5", "ROWS": 97, "COLS": 333, "dtype": "float32", **NARROW},
]
ROW_HIDDEN: list[Config] = [
    {"name": "H1", "ROWS": 1, "COLS": 5, "dtype": "float32"},
    {
        "name": "H2",
        "ROWS": 77,
        "COLS": 515,
        "dtype": "bfloat16",
        "hw_vlen": 8,
        "hw_line_bytes": 128,
    },
]
ROW_DOMAIN = {
    "ROWS": "{ min = 1, max = 160 }",
    "COLS": "{ min = 1, max = 700 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_vlen": "{ values = [16, 32, 64] }",
}
ROW_REGIONS = ["x (ROWS, COLS): input", "y (ROWS, COLS): output"]
ROW_BASELINE = (
    "one row at a time, strip-mined one register at a time (LMUL 1), each strip loaded, "
    "computed and stored before the next."
)
REDUCE_BASELINE = (
    "one row at a time, in several strip-mined passes over the row (LMUL 1), each strip "
    "reduced to a scalar."
)
ROW_BYTES = "2 * ROWS * COLS * itemsize"


def _rows(name: str, title: str, what: str, flops: str, **extra: object) -> TaskDef:
    fields: dict[str, object] = {
        "name": name,
        "title": title,
        "level": 1,
        "what": what,
        "regions": ROW_REGIONS,
        "baseline": ROW_BASELINE,
        "visible": ROW_VISIBLE,
        "hidden": ROW_HIDDEN,
        "domain": ROW_DOMAIN,
        "flops": flops,
        "bytes": ROW_BYTES,
    }
    fields.update(extra)
    return TaskDef(**fields)  # type: ignore[arg-type]


MM_TOLERANCE = {"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)}
MM_DISTRIBUTIONS = ["normal", "uniform"]
MM_VISIBLE: list[Config] = [
    {"name": "C1", "M": 64, "N": 64, "K": 64, "dtype": "float32"},
    {"name": "C2", "M": 33, "N": 70, "K": 50, "dtype": "bfloat16"},
    {"name": "C3", "M": 16, "N": 256, "K": 128, "dtype": "float32", **WIDE},
    {"name": "C4", "M": 48, "N": 96, "K": 32, "dtype": "bfloat16", "hw_vlen": 16},
    {"name": "C5", "M": 37, "N": 45, "K": 29, "dtype": "float32", **NARROW},
]
MM_HIDDEN: list[Config] = [
    {"name": "H1", "M": 1, "N": 1, "K": 1, "dtype": "float32"},
    {"name": "H2", "M": 5, "N": 130, "K": 7, "dtype": "bfloat16", "hw_vlen": 8},
]
MM_DOMAIN = {
    "M": "{ min = 1, max = 64 }",
    "N": "{ min = 1, max = 128 }",
    "K": "{ min = 1, max = 96 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_vlen": "{ values = [16, 32, 64] }",
}
MM_BASELINE = (
    "for every row of the output and every strip of one register (LMUL 1), it walks k, loading "
    "one element of the left operand and one strip of the right operand, and multiply-adds."
)


def _mm(name: str, title: str, what: str, regions: list[str], **extra: object) -> TaskDef:
    fields: dict[str, object] = {
        "name": name,
        "title": title,
        "level": 1,
        "what": what,
        "regions": regions,
        "baseline": MM_BASELINE,
        "visible": MM_VISIBLE,
        "hidden": MM_HIDDEN,
        "domain": MM_DOMAIN,
        "flops": "2 * M * N * K",
        "bytes": "(M * K + K * N + M * N) * itemsize",
        "distributions": MM_DISTRIBUTIONS,
        "tolerance": MM_TOLERANCE,
    }
    fields.update(extra)
    return TaskDef(**fields)  # type: ignore[arg-type]


TASKS: dict[str, TaskDef] = {
    "relu": _rows("relu", "ReLU", "Compute y = max(x, 0) elementwise.", "ROWS * COLS"),
    "silu": _rows(
        "silu",
        "SiLU",
        "Compute y = x * sigmoid(x) = x / (1 + exp(-x)) elementwise.",
        "4 * ROWS * COLS",
    ),
    "gelu": _rows(
        "gelu",
        "GELU (tanh form)",
        "Compute y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) elementwise.",
        "9 * ROWS * COLS",
    ),
    "swiglu": _rows(
        "swiglu",
        "SwiGLU",
        "Compute y = silu(g) * u elementwise, silu(g) = g / (1 + exp(-g)).",
        "5 * ROWS * COLS",
        level=2,
        regions=["g (ROWS, COLS): input", "u (ROWS, COLS): input", "y (ROWS, COLS): output"],
        bytes="3 * ROWS * COLS * itemsize",
    ),
    "softmax": _rows(
        "softmax",
        "Row softmax",
        "Compute the softmax of each row: y[i, j] = exp(x[i, j] - max_k x[i, k]) / sum_k "
        "exp(x[i, k] - max_k x[i, k]). Inputs include large values: subtract the row's maximum.",
        "5 * ROWS * COLS",
        baseline=REDUCE_BASELINE,
        tolerance={"float32": (1e-5, 1e-5), "bfloat16": (1e-3, 1.6e-2)},
    ),
    "layernorm": _rows(
        "layernorm",
        "LayerNorm",
        "Normalize each row and apply the affine map: y = (x - mean) / sqrt(var + 1e-5) * gamma "
        "+ beta, with the row's mean and biased variance.",
        "8 * ROWS * COLS",
        baseline=REDUCE_BASELINE,
        regions=[
            "x (ROWS, COLS): input",
            "gamma (COLS): input",
            "beta (COLS): input",
            "y (ROWS, COLS): output",
        ],
        bytes="(2 * ROWS * COLS + 2 * COLS) * itemsize",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)},
    ),
    "rmsnorm": _rows(
        "rmsnorm",
        "RMSNorm",
        "Compute y = x / sqrt(mean(x^2) + 1e-5) * w per row.",
        "4 * ROWS * COLS",
        baseline=REDUCE_BASELINE,
        regions=["x (ROWS, COLS): input", "w (COLS): input", "y (ROWS, COLS): output"],
        bytes="(2 * ROWS * COLS + COLS) * itemsize",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)},
    ),
    "gemv": _mm(
        "gemv",
        "GEMV",
        "Compute y = w @ x for a matrix w (M, K) and a vector x (K).",
        ["w (M, K): input", "x (K): input", "y (M): output"],
        baseline="row by row, one register per strip of the row, each strip multiplied by x and "
        "reduced to a scalar.",
        visible=[
            {"name": "C1", "M": 128, "K": 256, "dtype": "float32"},
            {"name": "C2", "M": 100, "K": 300, "dtype": "bfloat16"},
            {"name": "C3", "M": 64, "K": 1024, "dtype": "float32", **WIDE},
            {"name": "C4", "M": 256, "K": 96, "dtype": "bfloat16", "hw_vlen": 16},
            {"name": "C5", "M": 97, "K": 333, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "M": 1, "K": 1, "dtype": "float32"},
            {"name": "H2", "M": 77, "K": 515, "dtype": "bfloat16", "hw_vlen": 8},
        ],
        domain={
            "M": "{ min = 1, max = 256 }",
            "K": "{ min = 1, max = 700 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="2 * M * K",
        bytes="(M * K + K + M) * itemsize",
    ),
    "gemm": _mm(
        "gemm",
        "GEMM",
        "Compute c = a @ b.",
        ["a (M, K): input", "b (K, N): input", "c (M, N): output"],
    ),
    "linear": _mm(
        "linear",
        "Linear layer",
        "Compute y = x @ w + b, the bias b added to every row.",
        ["x (M, K): input", "w (K, N): input", "b (N): input", "y (M, N): output"],
        bytes="(M * K + K * N + N + M * N) * itemsize",
    ),
    "batched_matmul": _mm(
        "batched_matmul",
        "Batched matmul",
        "Compute c[i] = a[i] @ b[i] for every i < BATCH.",
        ["a (BATCH, M, K): input", "b (BATCH, K, N): input", "c (BATCH, M, N): output"],
        visible=[
            {"name": "C1", "BATCH": 4, "M": 32, "N": 32, "K": 32, "dtype": "float32"},
            {"name": "C2", "BATCH": 3, "M": 17, "N": 50, "K": 40, "dtype": "bfloat16"},
            {"name": "C3", "BATCH": 2, "M": 16, "N": 128, "K": 64, "dtype": "float32", **WIDE},
            {
                "name": "C4",
                "BATCH": 8,
                "M": 16,
                "N": 48,
                "K": 16,
                "dtype": "bfloat16",
                "hw_vlen": 16,
            },
            {"name": "C5", "BATCH": 5, "M": 13, "N": 35, "K": 21, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "BATCH": 1, "M": 1, "N": 1, "K": 1, "dtype": "float32"},
            {"name": "H2", "BATCH": 3, "M": 5, "N": 67, "K": 9, "dtype": "bfloat16", "hw_vlen": 8},
        ],
        domain={
            "BATCH": "{ min = 1, max = 8 }",
            "M": "{ min = 1, max = 32 }",
            "N": "{ min = 1, max = 96 }",
            "K": "{ min = 1, max = 48 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="2 * BATCH * M * N * K",
        bytes="BATCH * (M * K + K * N + M * N) * itemsize",
    ),
    "ffn": _mm(
        "ffn",
        "Feed-forward block",
        "Compute y = gelu(x @ w1 + b1) @ w2 + b2, with GELU in its tanh form "
        "0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h^3))). The scratch region h may "
        "hold the hidden activations; it is float32 whatever the dtype.",
        [
            "x (M, D): input",
            "w1 (D, F): input",
            "b1 (F): input",
            "w2 (F, D): input",
            "b2 (D): input",
            "y (M, D): output",
            "h (M, F): scratch, always float32",
        ],
        level=2,
        baseline="two linear layers one after the other, each as the GEMM baseline: for every "
        "row and every one-register strip it walks k with a scalar load and a multiply-add.",
        visible=[
            {"name": "C1", "M": 32, "D": 64, "F": 128, "dtype": "float32"},
            {"name": "C2", "M": 17, "D": 48, "F": 96, "dtype": "bfloat16"},
            {"name": "C3", "M": 16, "D": 64, "F": 256, "dtype": "float32", **WIDE},
            {"name": "C4", "M": 24, "D": 32, "F": 64, "dtype": "bfloat16", "hw_vlen": 16},
            {"name": "C5", "M": 13, "D": 40, "F": 72, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "M": 1, "D": 1, "F": 1, "dtype": "float32"},
            {"name": "H2", "M": 6, "D": 33, "F": 70, "dtype": "bfloat16", "hw_vlen": 8},
        ],
        domain={
            "M": "{ min = 1, max = 32 }",
            "D": "{ min = 1, max = 64 }",
            "F": "{ min = 1, max = 128 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="4 * M * D * F",
        bytes="(2 * M * D + 2 * D * F + D + F) * itemsize",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2)},
    ),
    "attention": _mm(
        "attention",
        "Scaled dot-product attention",
        "Compute o = softmax(q @ k^T / sqrt(D)) @ v for one head: q (M, D) queries, k and v "
        "(N, D) keys and values, the softmax along each row. The scratch region s may hold the "
        "scores.",
        [
            "q (M, D): input",
            "k (N, D): input",
            "v (N, D): input",
            "o (M, D): output",
            "s (M, N): scratch",
        ],
        level=2,
        baseline="scores query by query as dot products (one register per strip, reduced per "
        "strip), then a multi-pass softmax of each row, then the GEMM baseline for the values.",
        visible=[
            {"name": "C1", "M": 32, "N": 64, "D": 64, "dtype": "float32"},
            {"name": "C2", "M": 17, "N": 50, "D": 40, "dtype": "bfloat16"},
            {"name": "C3", "M": 16, "N": 128, "D": 64, "dtype": "float32", **WIDE},
            {"name": "C4", "M": 32, "N": 48, "D": 32, "dtype": "bfloat16", "hw_vlen": 16},
            {"name": "C5", "M": 13, "N": 37, "D": 24, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "M": 1, "N": 1, "D": 1, "dtype": "float32"},
            {"name": "H2", "M": 7, "N": 70, "D": 16, "dtype": "bfloat16", "hw_vlen": 8},
        ],
        domain={
            "M": "{ min = 1, max = 32 }",
            "N": "{ min = 1, max = 128 }",
            "D": "{ min = 1, max = 64 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="4 * M * N * D + 5 * M * N",
        bytes="(2 * M * D + 2 * N * D) * itemsize",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2)},
    ),
    "mha": _mm(
        "mha",
        "Multi-head attention",
        "Compute, for every head h, o[h] = softmax(q[h] @ k[h]^T / sqrt(D)) @ v[h], the "
        "softmax along each row (H heads, each with its own keys and values). The scratch "
        "region s may hold one head's scores.",
        [
            "q (H, M, D): input",
            "k (H, N, D): input",
            "v (H, N, D): input",
            "o (H, M, D): output",
            "s (M, N): scratch",
        ],
        level=2,
        baseline="head by head, the single-head attention baseline: scores query by query as "
        "dot products (one register per strip, reduced per strip), a multi-pass softmax of "
        "each row, then the GEMM baseline for the values.",
        visible=[
            {"name": "C1", "H": 4, "M": 16, "N": 32, "D": 32, "dtype": "float32"},
            {"name": "C2", "H": 3, "M": 9, "N": 25, "D": 20, "dtype": "bfloat16"},
            {
                "name": "C3",
                "H": 2,
                "M": 8,
                "N": 64,
                "D": 64,
                "dtype": "float32",
                "hw_vlen": 64,
                "hw_lanes": 16,
            },
            {"name": "C4", "H": 4, "M": 16, "N": 24, "D": 16, "dtype": "bfloat16", "hw_vlen": 16},
            {
                "name": "C5",
                "H": 3,
                "M": 7,
                "N": 19,
                "D": 12,
                "dtype": "float32",
                "hw_vlen": 8,
                "hw_lanes": 4,
                "hw_mem_latency": 80,
            },
        ],
        hidden=[
            {"name": "H1", "H": 1, "M": 1, "N": 1, "D": 1, "dtype": "float32"},
            {"name": "H2", "H": 2, "M": 5, "N": 40, "D": 8, "dtype": "bfloat16", "hw_vlen": 8},
        ],
        domain={
            "H": "{ min = 1, max = 4 }",
            "M": "{ min = 1, max = 16 }",
            "N": "{ min = 1, max = 64 }",
            "D": "{ min = 1, max = 32 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="H * (4 * M * N * D + 5 * M * N)",
        bytes="(H * 2 * M * D + H * 2 * N * D) * itemsize",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2)},
    ),
    "gqa": _mm(
        "gqa",
        "Grouped-query attention",
        "Compute, for every query head h, o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g], the "
        "softmax along each row, with g = h // (H // G): G key/value heads, each shared by H "
        "// G consecutive query heads (G divides H). The scratch region s may hold one head's "
        "scores.",
        [
            "q (H, M, D): input",
            "k (G, N, D): input",
            "v (G, N, D): input",
            "o (H, M, D): output",
            "s (M, N): scratch",
        ],
        level=2,
        baseline="head by head, the single-head attention baseline: scores query by query as "
        "dot products (one register per strip, reduced per strip), a multi-pass softmax of "
        "each row, then the GEMM baseline for the values.",
        visible=[
            {"name": "C1", "H": 4, "G": 2, "M": 16, "N": 32, "D": 32, "dtype": "float32"},
            {"name": "C2", "H": 6, "G": 3, "M": 9, "N": 25, "D": 20, "dtype": "bfloat16"},
            {
                "name": "C3",
                "H": 4,
                "G": 1,
                "M": 8,
                "N": 64,
                "D": 64,
                "dtype": "float32",
                "hw_vlen": 64,
                "hw_lanes": 16,
            },
            {
                "name": "C4",
                "H": 4,
                "G": 4,
                "M": 16,
                "N": 24,
                "D": 16,
                "dtype": "bfloat16",
                "hw_vlen": 16,
            },
            {
                "name": "C5",
                "H": 6,
                "G": 2,
                "M": 7,
                "N": 19,
                "D": 12,
                "dtype": "float32",
                "hw_vlen": 8,
                "hw_lanes": 4,
                "hw_mem_latency": 80,
            },
        ],
        hidden=[
            {"name": "H1", "H": 1, "G": 1, "M": 1, "N": 1, "D": 1, "dtype": "float32"},
            {
                "name": "H2",
                "H": 4,
                "G": 2,
                "M": 5,
                "N": 40,
                "D": 8,
                "dtype": "bfloat16",
                "hw_vlen": 8,
            },
        ],
        domain={
            "H": "{ values = [2, 4] }",
            "G": "{ values = [1, 2] }",
            "M": "{ min = 1, max = 16 }",
            "N": "{ min = 1, max = 64 }",
            "D": "{ min = 1, max = 32 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="H * (4 * M * N * D + 5 * M * N)",
        bytes="(H * 2 * M * D + G * 2 * N * D) * itemsize",
        constraint="H % G == 0",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2)},
    ),
    "mqa": _mm(
        "mqa",
        "Multi-query attention",
        "Compute, for every query head h, o[h] = softmax(q[h] @ k[0]^T / sqrt(D)) @ v[0], the "
        "softmax along each row: the H query heads share one key/value head. The scratch "
        "region s may hold one head's scores.",
        [
            "q (H, M, D): input",
            "k (1, N, D): input",
            "v (1, N, D): input",
            "o (H, M, D): output",
            "s (M, N): scratch",
        ],
        level=2,
        baseline="head by head, the single-head attention baseline: scores query by query as "
        "dot products (one register per strip, reduced per strip), a multi-pass softmax of "
        "each row, then the GEMM baseline for the values.",
        visible=[
            {"name": "C1", "H": 4, "M": 16, "N": 32, "D": 32, "dtype": "float32"},
            {"name": "C2", "H": 3, "M": 9, "N": 25, "D": 20, "dtype": "bfloat16"},
            {
                "name": "C3",
                "H": 2,
                "M": 8,
                "N": 64,
                "D": 64,
                "dtype": "float32",
                "hw_vlen": 64,
                "hw_lanes": 16,
            },
            {"name": "C4", "H": 4, "M": 16, "N": 24, "D": 16, "dtype": "bfloat16", "hw_vlen": 16},
            {
                "name": "C5",
                "H": 3,
                "M": 7,
                "N": 19,
                "D": 12,
                "dtype": "float32",
                "hw_vlen": 8,
                "hw_lanes": 4,
                "hw_mem_latency": 80,
            },
        ],
        hidden=[
            {"name": "H1", "H": 1, "M": 1, "N": 1, "D": 1, "dtype": "float32"},
            {"name": "H2", "H": 2, "M": 5, "N": 40, "D": 8, "dtype": "bfloat16", "hw_vlen": 8},
        ],
        domain={
            "H": "{ min = 1, max = 4 }",
            "M": "{ min = 1, max = 16 }",
            "N": "{ min = 1, max = 64 }",
            "D": "{ min = 1, max = 32 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            "hw_vlen": "{ values = [16, 32, 64] }",
        },
        flops="H * (4 * M * N * D + 5 * M * N)",
        bytes="(H * 2 * M * D + 1 * 2 * N * D) * itemsize",
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 2e-2)},
    ),
}

TASKS["llama_block"] = TaskDef(
    name="llama_block",
    title="LLaMA-style decoder block",
    level=3,
    what="Compute a LLaMA-style pre-norm decoder block on one sequence of S tokens with H heads "
    "of D dimensions (model dimension DM = H * D; define it with .equ), float32: h = rmsnorm(x) "
    "* g1 with rmsnorm(x) = x / sqrt(mean(x^2) + 1e-5) per row; q = h @ wq, k = h @ wk, v = h "
    "@ wv (wq, wk, wv are (DM, DM) matrices whose columns are grouped by head, head h the "
    "columns h * D .. h * D + D - 1); attention per head, every token attending to every token "
    "(no mask, no position embedding): a[:, head] = softmax(q_h @ k_h^T / sqrt(D)) @ v_h, the "
    "heads side by side in a (S, DM); x2 = x + a @ wo; h = rmsnorm(x2) * g2; y = x2 + (silu(h "
    "@ wg) * (h @ wu)) @ wd with silu(g) = g / (1 + exp(-g)). There are more regions than "
    "pointer registers: load the others by name (p.set). The scratch regions may hold the "
    "intermediates (their names suggest which).",
    regions=[
        "x (S, DM): input",
        "g1 (DM): input",
        "wq (DM, H, D): input",
        "wk (DM, H, D): input",
        "wv (DM, H, D): input",
        "wo (DM, DM): input",
        "g2 (DM): input",
        "wg (DM, F): input",
        "wu (DM, F): input",
        "wd (F, DM): input",
        "y (S, DM): output",
        "hn (S, DM): scratch",
        "q (S, DM): scratch",
        "k (S, DM): scratch",
        "v (S, DM): scratch",
        "a (S, DM): scratch",
        "x2 (S, DM): scratch",
        "u (S, F): scratch",
        "gt (S, F): scratch",
        "s (S, S): scratch",
    ],
    baseline="the baselines of its parts in order, through the scratch regions: the multi-pass "
    "RMSNorm row by row, every product as the GEMM baseline (a scalar load of the left operand "
    "and a multiply-add per k, one register per strip), the attention of each head as the "
    "attention baseline (scores query by query as dot products, a multi-pass softmax, the "
    "values as a GEMM), the residuals and the gate folded into the products.",
    visible=[
        {"name": "C1", "S": 32, "H": 2, "D": 16, "F": 64, "dtype": "float32"},
        {"name": "C2", "S": 24, "H": 4, "D": 8, "F": 96, "dtype": "float32"},
        {"name": "C3", "S": 16, "H": 2, "D": 32, "F": 128, "dtype": "float32", **WIDE},
        {"name": "C4", "S": 20, "H": 3, "D": 12, "F": 48, "dtype": "float32", "hw_vlen": 16},
        {"name": "C5", "S": 13, "H": 2, "D": 10, "F": 40, "dtype": "float32", **NARROW},
    ],
    hidden=[
        {"name": "H1", "S": 1, "H": 1, "D": 1, "F": 1, "dtype": "float32"},
        {
            "name": "H2",
            "S": 7,
            "H": 3,
            "D": 6,
            "F": 26,
            "dtype": "float32",
            "hw_vlen": 8,
            "hw_line_bytes": 128,
        },
    ],
    domain={
        "S": "{ min = 1, max = 32 }",
        "H": "{ min = 1, max = 4 }",
        "D": "{ min = 1, max = 16 }",
        "F": "{ min = 1, max = 96 }",
        "dtype": '{ values = ["float32"] }',
        "hw_vlen": "{ values = [16, 32, 64] }",
    },
    flops="2 * S * H * D * (4 * H * D + 3 * F) + 4 * S * S * H * D",
    bytes="(2 * S * H * D + 4 * (H * D) ** 2 + 3 * H * D * F) * itemsize",
    distributions=MM_DISTRIBUTIONS,
    tolerance={"float32": (2e-4, 2e-4)},
)


#: Fixed hidden configs at the ends of each task's hidden domain: its largest and smallest
#: sizes and every hardware choice (`gauntlet tasks check` requires the fixed hidden configs
#: to reach them; see docs/tasks.md), each no costlier than the task's largest visible config.
REACH_HIDDEN: dict[str, list[Config]] = {
    "attention": [
        {"name": "H3", "M": 32, "N": 128, "D": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "M": 1, "N": 1, "D": 64, "dtype": "float32", "hw_vlen": 16},
    ],
    "batched_matmul": [
        {"name": "H3", "BATCH": 8, "M": 32, "N": 1, "K": 48, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "BATCH": 1, "M": 1, "N": 96, "K": 1, "dtype": "float32", "hw_vlen": 16},
    ],
    "ffn": [
        {"name": "H3", "M": 32, "D": 64, "F": 128, "dtype": "float32", "hw_vlen": 64},
    ],
    "gelu": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "gemm": [
        {"name": "H3", "M": 64, "N": 1, "K": 96, "dtype": "float32", "hw_vlen": 64},
    ],
    "gemv": [
        {"name": "H3", "M": 256, "K": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "M": 1, "K": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "gqa": [
        {
            "name": "H3",
            "H": 2,
            "G": 1,
            "M": 16,
            "N": 64,
            "D": 32,
            "dtype": "float32",
            "hw_vlen": 64,
        },
    ],
    "layernorm": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "linear": [
        {"name": "H3", "M": 64, "N": 1, "K": 96, "dtype": "float32", "hw_vlen": 64},
    ],
    "llama_block": [
        {"name": "H3", "S": 32, "H": 4, "D": 16, "F": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "S": 1, "H": 1, "D": 1, "F": 96, "dtype": "float32", "hw_vlen": 16},
    ],
    "mha": [
        {"name": "H3", "H": 4, "M": 16, "N": 64, "D": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "H": 1, "M": 1, "N": 1, "D": 32, "dtype": "float32", "hw_vlen": 16},
    ],
    "mqa": [
        {"name": "H3", "H": 4, "M": 16, "N": 64, "D": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "H": 1, "M": 1, "N": 1, "D": 32, "dtype": "float32", "hw_vlen": 16},
    ],
    "relu": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "rmsnorm": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "silu": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "softmax": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "swiglu": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
}
for _name, _extra in REACH_HIDDEN.items():
    TASKS[_name] = dataclasses.replace(TASKS[_name], hidden=[*TASKS[_name].hidden, *_extra])
