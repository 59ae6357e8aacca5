"""The npu tasks: what each computes, its contract, configurations and roofline."""

from __future__ import annotations

import dataclasses

from .taskfiles import ParamValue, TaskDef

Config = dict[str, ParamValue]

#: Row kernels: C1 small and aligned ... C5 awkward sizes on small hardware.
ROW_VISIBLE: list[Config] = [
    {"name": "C1", "ROWS": 64, "COLS": 256, "dtype": "float32"},
    {"name": "C2", "ROWS": 100, "COLS": 300, "dtype": "bfloat16"},
    {"name": "C3", "ROWS": 32, "COLS": 1024, "dtype": "float32", "hw_vlen": 64},
    {"name": "C4", "ROWS": 128, "COLS": 96, "dtype": "bfloat16", "hw_vlen": 16, "hw_mlen": 16},
    {
        "name": "C5",
        "ROWS": 97,
        "COLS": 333,
        "dtype": "float32",
        "hw_vlen": 16,
        "hw_mlen": 16,
        "hw_vsram_words": 8192,
    },
]
ROW_HIDDEN: list[Config] = [
    {"name": "H1", "ROWS": 1, "COLS": 5, "dtype": "float32"},
    {
        "name": "H2",
        "ROWS": 77,
        "COLS": 515,
        "dtype": "bfloat16",
        "hw_vlen": 8,
        "hw_mlen": 8,
        "hw_vsram_words": 8192,
    },
]
ROW_DOMAIN = {
    "ROWS": "{ min = 1, max = 160 }",
    "COLS": "{ min = 1, max = 700 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_vlen": "{ values = [16, 32, 64] }",
}
ROW_REGIONS = ["x (ROWS, COLS): input", "y (ROWS, COLS): output"]
ROW_BASELINE = "one row at a time, each loaded, computed and stored before the next."
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


TASKS: dict[str, TaskDef] = {
    t.name: t
    for t in [
        _rows("relu", "ReLU", "Compute y = max(x, 0) elementwise.", "ROWS * COLS"),
        _rows(
            "silu",
            "SiLU",
            "Compute y = x * sigmoid(x) = x / (1 + exp(-x)) elementwise.",
            "4 * ROWS * COLS",
        ),
        _rows(
            "gelu",
            "GELU (tanh approximation)",
            "Compute y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) elementwise "
            "(GELU in its tanh form, PyTorch's approximate='tanh').",
            "8 * ROWS * COLS",
        ),
        _rows(
            "softmax",
            "Row softmax",
            "Compute the softmax of each row: y[i, j] = exp(x[i, j] - max_k x[i, k]) / "
            "sum_k exp(x[i, k] - max_k x[i, k]). Inputs include large values: subtract the "
            "row's maximum.",
            "5 * ROWS * COLS",
        ),
        _rows(
            "layernorm",
            "LayerNorm",
            "Normalize each row: y = (x - mean) / sqrt(var + 1e-5) * gamma + beta, with the "
            "mean and the biased variance of the row, gamma and beta of shape (COLS,).",
            "8 * ROWS * COLS",
            regions=[
                "x (ROWS, COLS): input",
                "gamma (COLS,): input",
                "beta (COLS,): input",
                "y (ROWS, COLS): output",
            ],
            bytes="(2 * ROWS * COLS + 2 * COLS) * itemsize",
        ),
        _rows(
            "rmsnorm",
            "RMSNorm",
            "Normalize each row by its root mean square: y = x / sqrt(mean(x^2) + 1e-5) * w, "
            "w of shape (COLS,).",
            "4 * ROWS * COLS",
            regions=["x (ROWS, COLS): input", "w (COLS,): input", "y (ROWS, COLS): output"],
            bytes="(2 * ROWS * COLS + COLS) * itemsize",
        ),
    ]
}


MM_TOLERANCE = {"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)}
MM_DISTRIBUTIONS = ["normal", "uniform"]
MM_VISIBLE: list[Config] = [
    {"name": "C1", "M": 64, "N": 64, "K": 64, "dtype": "float32"},
    {"name": "C2", "M": 96, "N": 80, "K": 128, "dtype": "bfloat16"},
    {"name": "C3", "M": 128, "N": 128, "K": 128, "dtype": "float32"},
    {"name": "C4", "M": 50, "N": 70, "K": 90, "dtype": "bfloat16", "hw_mlen": 16},
    {
        "name": "C5",
        "M": 100,
        "N": 72,
        "K": 130,
        "dtype": "float32",
        "hw_mlen": 16,
        "hw_vlen": 16,
        "hw_vsram_words": 16384,
        "hw_msram_words": 8192,
    },
]
MM_HIDDEN: list[Config] = [
    {"name": "H1", "M": 1, "N": 1, "K": 1, "dtype": "float32"},
    {"name": "H2", "M": 33, "N": 17, "K": 65, "dtype": "bfloat16", "hw_mlen": 8, "hw_vlen": 8},
]
MM_DOMAIN = {
    "M": "{ min = 1, max = 128 }",
    "N": "{ min = 1, max = 128 }",
    "K": "{ min = 1, max = 256 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_mlen": "{ values = [16, 32] }",
}
MM_BASELINE = (
    "for every output tile and every k tile it loads both operand tiles, waits, multiplies, "
    "then stores the tile and waits."
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


BMM_VISIBLE: list[Config] = [
    {"name": "C1", "BATCH": 4, "M": 32, "N": 32, "K": 32, "dtype": "float32"},
    {"name": "C2", "BATCH": 3, "M": 48, "N": 40, "K": 64, "dtype": "bfloat16"},
    {"name": "C3", "BATCH": 2, "M": 64, "N": 64, "K": 128, "dtype": "float32"},
    {"name": "C4", "BATCH": 5, "M": 20, "N": 30, "K": 40, "dtype": "bfloat16", "hw_mlen": 16},
    {
        "name": "C5",
        "BATCH": 3,
        "M": 50,
        "N": 36,
        "K": 70,
        "dtype": "float32",
        "hw_mlen": 16,
        "hw_vlen": 16,
        "hw_vsram_words": 16384,
        "hw_msram_words": 8192,
    },
]
GEMV_VISIBLE: list[Config] = [
    {"name": "C1", "M": 128, "K": 128, "dtype": "float32"},
    {"name": "C2", "M": 200, "K": 300, "dtype": "bfloat16"},
    {"name": "C3", "M": 256, "K": 512, "dtype": "float32"},
    {"name": "C4", "M": 77, "K": 190, "dtype": "bfloat16", "hw_mlen": 16},
    {
        "name": "C5",
        "M": 333,
        "K": 250,
        "dtype": "float32",
        "hw_mlen": 16,
        "hw_vlen": 16,
        "hw_vsram_words": 16384,
        "hw_msram_words": 8192,
    },
]

TASKS.update(
    {
        t.name: t
        for t in [
            _mm(
                "gemm",
                "GEMM",
                "Compute the matrix product y = x @ w.",
                ["x (M, K): input", "w (K, N): input", "y (M, N): output"],
            ),
            _mm(
                "linear",
                "Linear layer",
                "Compute the linear layer y = x @ w^T + b, with the weight w stored (N, K) as "
                "in PyTorch's nn.Linear and the bias b added to every row.",
                ["x (M, K): input", "w (N, K): input", "b (N,): input", "y (M, N): output"],
                bytes="(M * K + K * N + N + M * N) * itemsize",
            ),
            _mm(
                "bmm",
                "Batched matmul",
                "Compute BATCH independent matrix products y[i] = x[i] @ w[i].",
                [
                    "x (BATCH, M, K): input",
                    "w (BATCH, K, N): input",
                    "y (BATCH, M, N): output",
                ],
                visible=BMM_VISIBLE,
                hidden=[
                    {"name": "H1", "BATCH": 1, "M": 1, "N": 1, "K": 1, "dtype": "float32"},
                    {
                        "name": "H2",
                        "BATCH": 7,
                        "M": 9,
                        "N": 13,
                        "K": 17,
                        "dtype": "bfloat16",
                        "hw_mlen": 8,
                        "hw_vlen": 8,
                    },
                ],
                domain={
                    "BATCH": "{ min = 1, max = 6 }",
                    "M": "{ min = 1, max = 64 }",
                    "N": "{ min = 1, max = 64 }",
                    "K": "{ min = 1, max = 128 }",
                    "dtype": '{ values = ["float32", "bfloat16"] }',
                    "hw_mlen": "{ values = [16, 32] }",
                },
                flops="2 * BATCH * M * N * K",
                bytes="BATCH * (M * K + K * N + M * N) * itemsize",
            ),
            _mm(
                "gemv",
                "GEMV",
                "Compute the matrix-vector product y = w @ x.",
                ["w (M, K): input", "x (K,): input", "y (M,): output"],
                baseline=(
                    "for every tile of w it loads the tile, waits and multiplies; each tile of "
                    "y is stored and waited for."
                ),
                visible=GEMV_VISIBLE,
                hidden=[
                    {"name": "H1", "M": 1, "K": 1, "dtype": "float32"},
                    {
                        "name": "H2",
                        "M": 45,
                        "K": 77,
                        "dtype": "bfloat16",
                        "hw_mlen": 8,
                        "hw_vlen": 8,
                    },
                ],
                domain={
                    "M": "{ min = 1, max = 400 }",
                    "K": "{ min = 1, max = 512 }",
                    "dtype": '{ values = ["float32", "bfloat16"] }',
                    "hw_mlen": "{ values = [16, 32] }",
                },
                flops="2 * M * K",
                bytes="(M * K + K + M) * itemsize",
            ),
        ]
    }
)


CONV_VISIBLE: list[Config] = [
    {"name": "C1", "H": 10, "W": 34, "CI": 16, "CO": 32, "KH": 3, "KW": 3, "dtype": "float32"},
    {"name": "C2", "H": 12, "W": 20, "CI": 24, "CO": 40, "KH": 3, "KW": 3, "dtype": "bfloat16"},
    {"name": "C3", "H": 6, "W": 66, "CI": 32, "CO": 64, "KH": 3, "KW": 3, "dtype": "float32"},
    {
        "name": "C4",
        "H": 11,
        "W": 13,
        "CI": 8,
        "CO": 20,
        "KH": 5,
        "KW": 5,
        "dtype": "bfloat16",
        "hw_mlen": 16,
    },
    {
        "name": "C5",
        "H": 9,
        "W": 23,
        "CI": 12,
        "CO": 36,
        "KH": 3,
        "KW": 2,
        "dtype": "float32",
        "hw_mlen": 16,
        "hw_vlen": 16,
        "hw_vsram_words": 16384,
        "hw_msram_words": 8192,
    },
]
CONV_HIDDEN: list[Config] = [
    {"name": "H1", "H": 1, "W": 1, "CI": 1, "CO": 1, "KH": 1, "KW": 1, "dtype": "float32"},
    {
        "name": "H2",
        "H": 7,
        "W": 13,
        "CI": 5,
        "CO": 7,
        "KH": 3,
        "KW": 2,
        "dtype": "bfloat16",
        "hw_mlen": 8,
        "hw_vlen": 8,
    },
]
CONV_DOMAIN = {
    "H": "{ min = 3, max = 12 }",
    "W": "{ min = 3, max = 40 }",
    "CI": "{ min = 1, max = 32 }",
    "CO": "{ min = 1, max = 48 }",
    "KH": "{ min = 1, max = 3 }",
    "KW": "{ min = 1, max = 3 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_mlen": "{ values = [16, 32] }",
}
CONV_OUT = "(H - KH + 1) * (W - KW + 1)"

TASKS["conv2d"] = _mm(
    "conv2d",
    "Conv2d (NHWC)",
    "Compute the 2-d convolution (cross-correlation, stride 1, no padding) of the image x "
    "(H, W, CI), channels last, with the filters w (KH, KW, CI, CO): y[oh, ow, o] = "
    "sum_{kh, kw, c} x[oh + kh, ow + kw, c] * w[kh, kw, c, o], with OH = H - KH + 1 and "
    "OW = W - KW + 1 (define them with .equ). No im2col buffer is given: gather the windows "
    "with strided DMA.",
    ["x (H, W, CI): input", "w (KH, KW, CI, CO): input", "y (OH, OW, CO): output"],
    baseline=(
        "per output row, per output tile and per kernel row it gathers the window tiles with "
        "strided DMA, loads the filter tiles, waits and multiplies, tile by tile; then stores "
        "the tile and waits."
    ),
    visible=CONV_VISIBLE,
    hidden=CONV_HIDDEN,
    domain=CONV_DOMAIN,
    constraint="KH <= H and KW <= W",
    flops=f"2 * {CONV_OUT} * CO * KH * KW * CI",
    bytes=f"(H * W * CI + KH * KW * CI * CO + {CONV_OUT} * CO) * itemsize",
)

DW_VISIBLE: list[Config] = [
    {"name": "C1", "H": 10, "W": 34, "C": 32, "KH": 3, "KW": 3, "dtype": "float32"},
    {"name": "C2", "H": 12, "W": 20, "C": 48, "KH": 3, "KW": 3, "dtype": "bfloat16"},
    {"name": "C3", "H": 8, "W": 40, "C": 128, "KH": 3, "KW": 3, "dtype": "float32", "hw_vlen": 64},
    {
        "name": "C4",
        "H": 9,
        "W": 16,
        "C": 24,
        "KH": 5,
        "KW": 5,
        "dtype": "bfloat16",
        "hw_vlen": 16,
        "hw_mlen": 16,
    },
    {
        "name": "C5",
        "H": 11,
        "W": 17,
        "C": 37,
        "KH": 3,
        "KW": 2,
        "dtype": "float32",
        "hw_vlen": 16,
        "hw_mlen": 16,
        "hw_vsram_words": 8192,
    },
]
DW_HIDDEN: list[Config] = [
    {"name": "H1", "H": 1, "W": 1, "C": 1, "KH": 1, "KW": 1, "dtype": "float32"},
    {
        "name": "H2",
        "H": 7,
        "W": 13,
        "C": 5,
        "KH": 3,
        "KW": 2,
        "dtype": "bfloat16",
        "hw_vlen": 8,
        "hw_mlen": 8,
        "hw_vsram_words": 8192,
    },
]

TASKS["depthwise_conv"] = TaskDef(
    name="depthwise_conv",
    title="Depthwise conv2d (NHWC)",
    level=1,
    what="Compute the depthwise 2-d convolution (stride 1, no padding) of the image x (H, W, C), "
    "channels last, with one KH x KW filter per channel w (KH, KW, C): y[oh, ow, c] = "
    "sum_{kh, kw} x[oh + kh, ow + kw, c] * w[kh, kw, c], with OH = H - KH + 1 and "
    "OW = W - KW + 1 (define them with .equ). Gather the windows with strided DMA.",
    regions=["x (H, W, C): input", "w (KH, KW, C): input", "y (OH, OW, C): output"],
    baseline="per output row and per tap it gathers the tap's window with strided DMA, waits, "
    "then multiplies and adds pixel by pixel; each output row is stored and waited for.",
    visible=DW_VISIBLE,
    hidden=DW_HIDDEN,
    domain={
        "H": "{ min = 3, max = 12 }",
        "W": "{ min = 3, max = 40 }",
        "C": "{ min = 1, max = 96 }",
        "KH": "{ min = 1, max = 3 }",
        "KW": "{ min = 1, max = 3 }",
        "dtype": '{ values = ["float32", "bfloat16"] }',
        "hw_vlen": "{ values = [16, 32, 64] }",
    },
    constraint="KH <= H and KW <= W",
    flops=f"2 * {CONV_OUT} * C * KH * KW",
    bytes=f"(H * W * C + KH * KW * C + {CONV_OUT} * C) * itemsize",
    distributions=MM_DISTRIBUTIONS,
    tolerance=MM_TOLERANCE,
)

TASKS["rope"] = TaskDef(
    name="rope",
    title="Rotary position embedding (RoPE)",
    level=2,
    what="Apply the rotary position embedding in its rotate-half form (GPT-NeoX, LLaMA) to "
    "each row of x (ROWS, COLS), COLS even: with x1 = x[:, :COLS/2], x2 = x[:, COLS/2:] and the "
    "tables cos, sin (ROWS, COLS/2), y = [x1 * cos - x2 * sin, x2 * cos + x1 * sin].",
    regions=[
        "x (ROWS, COLS): input",
        "cos (ROWS, COLS / 2): input",
        "sin (ROWS, COLS / 2): input",
        "y (ROWS, COLS): output",
    ],
    baseline="one row at a time (both halves and both tables loaded, computed strip by strip "
    "and stored before the next row).",
    visible=[
        {"name": "C1", "ROWS": 64, "COLS": 128, "dtype": "float32"},
        {"name": "C2", "ROWS": 100, "COLS": 96, "dtype": "bfloat16"},
        {"name": "C3", "ROWS": 32, "COLS": 256, "dtype": "float32", "hw_vlen": 64},
        {"name": "C4", "ROWS": 128, "COLS": 64, "dtype": "bfloat16", "hw_vlen": 16, "hw_mlen": 16},
        {
            "name": "C5",
            "ROWS": 97,
            "COLS": 80,
            "dtype": "float32",
            "hw_vlen": 16,
            "hw_mlen": 16,
            "hw_vsram_words": 8192,
        },
    ],
    hidden=[
        {"name": "H1", "ROWS": 1, "COLS": 2, "dtype": "float32"},
        {
            "name": "H2",
            "ROWS": 77,
            "COLS": 38,
            "dtype": "bfloat16",
            "hw_vlen": 8,
            "hw_mlen": 8,
            "hw_vsram_words": 8192,
        },
    ],
    domain={
        "ROWS": "{ min = 1, max = 160 }",
        "COLS": "{ min = 2, max = 512 }",
        "dtype": '{ values = ["float32", "bfloat16"] }',
        "hw_vlen": "{ values = [16, 32, 64] }",
    },
    constraint="COLS % 2 == 0",
    flops="3 * ROWS * COLS",
    bytes="3 * ROWS * COLS * itemsize",
    distributions=MM_DISTRIBUTIONS,
)

MLP_VISIBLE: list[Config] = [
    {"name": "C1", "M": 64, "D": 64, "F": 128, "dtype": "float32"},
    {"name": "C2", "M": 96, "D": 80, "F": 160, "dtype": "bfloat16"},
    {"name": "C3", "M": 128, "D": 128, "F": 256, "dtype": "float32"},
    {"name": "C4", "M": 50, "D": 40, "F": 90, "dtype": "bfloat16", "hw_mlen": 16},
    {
        "name": "C5",
        "M": 100,
        "D": 72,
        "F": 130,
        "dtype": "float32",
        "hw_mlen": 16,
        "hw_vlen": 16,
        "hw_vsram_words": 16384,
        "hw_msram_words": 8192,
    },
]
MLP_HIDDEN: list[Config] = [
    {"name": "H1", "M": 1, "D": 1, "F": 1, "dtype": "float32"},
    {"name": "H2", "M": 33, "D": 17, "F": 65, "dtype": "bfloat16", "hw_mlen": 8, "hw_vlen": 8},
]
MLP_DOMAIN = {
    "M": "{ min = 1, max = 128 }",
    "D": "{ min = 1, max = 128 }",
    "F": "{ min = 1, max = 256 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_mlen": "{ values = [16, 32] }",
}


def _mlp(name: str, title: str, what: str, regions: list[str], **extra: object) -> TaskDef:
    fields: dict[str, object] = {
        "level": 2,
        "visible": MLP_VISIBLE,
        "hidden": MLP_HIDDEN,
        "domain": MLP_DOMAIN,
    }
    fields.update(extra)
    return _mm(name, title, what, regions, **fields)


TASKS["ffn"] = _mlp(
    "ffn",
    "Feed-forward network (GELU MLP)",
    "Compute the transformer feed-forward block y = gelu(x @ w1 + b1) @ w2 + b2, GELU in its "
    "tanh form (PyTorch's approximate='tanh'). The float32 scratch region h (M, F) may hold the "
    "hidden activations.",
    [
        "x (M, D): input",
        "w1 (D, F): input",
        "b1 (F,): input",
        "w2 (F, D): input",
        "b2 (D,): input",
        "y (M, D): output",
        "h (M, F): scratch, float32",
    ],
    baseline=(
        "two tile-by-tile products (load both operand tiles, wait, multiply; store the tile "
        "and wait), the first adding b1 and applying GELU on each tile before storing it to h."
    ),
    flops="4 * M * D * F + 8 * M * F",
    bytes="(M * D + 2 * D * F + F + D + M * D) * itemsize",
)
TASKS["swiglu"] = _mlp(
    "swiglu",
    "SwiGLU gated projection",
    "Compute the SwiGLU gate of a LLaMA-style MLP, y = silu(x @ wg) * (x @ wu), with "
    "silu(g) = g / (1 + exp(-g)). The scratch region u (M, F), in the config's dtype, may "
    "hold x @ wu.",
    [
        "x (M, D): input",
        "wg (D, F): input",
        "wu (D, F): input",
        "y (M, F): output",
        "u (M, F): scratch",
    ],
    baseline=(
        "u = x @ wu then x @ wg, both tile by tile (load both operand tiles, wait, multiply; "
        "store the tile and wait), each tile of the second gated with the tile of u before it "
        "is stored."
    ),
    flops="4 * M * D * F + 6 * M * F",
    bytes="(M * D + 2 * D * F + M * F) * itemsize",
)

ATTN_RULE = (
    "The float32 scratch region s (M, N) may hold one head's scores. Inputs are unscaled: "
    "subtract each row's maximum before exp."
)
ATTN_BASELINE = (
    "per head, the GEMM baseline writes the scaled scores to s, a row-at-a-time softmax "
    "rewrites s (strip-by-strip scalar reductions), and the GEMM baseline multiplies s by the "
    "values."
)
ATTN_DOMAIN = {
    "M": "{ min = 1, max = 96 }",
    "N": "{ min = 1, max = 160 }",
    "D": "{ min = 1, max = 96 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_mlen": "{ values = [16, 32] }",
}
SMALL_HW: Config = {
    "hw_mlen": 16,
    "hw_vlen": 16,
    "hw_vsram_words": 16384,
    "hw_msram_words": 8192,
}


def _attn(name: str, title: str, what: str, regions: list[str], **extra: object) -> TaskDef:
    heads = "H * " if name in ("mha", "gqa", "mqa") else ""
    kv = {"mha": "H * ", "gqa": "G * "}.get(name, "")
    fields: dict[str, object] = {
        "name": name,
        "title": title,
        "level": 2,
        "what": f"{what} {ATTN_RULE}",
        "regions": regions,
        "baseline": ATTN_BASELINE,
        "domain": ATTN_DOMAIN,
        "flops": f"{heads}(4 * M * N * D + 5 * M * N)",
        "bytes": f"({heads}2 * M * D + {kv}2 * N * D) * itemsize",
        "distributions": MM_DISTRIBUTIONS,
        "tolerance": MM_TOLERANCE,
    }
    fields.update(extra)
    return TaskDef(**fields)  # type: ignore[arg-type]


def _heads(rows: list[tuple[int, ...]], keys: tuple[str, ...]) -> list[Config]:
    dtypes = ["float32", "bfloat16", "float32", "bfloat16", "float32"]
    hw: list[Config] = [{}, {}, {}, {"hw_mlen": 16}, SMALL_HW]
    return [
        {"name": f"C{i + 1}", **dict(zip(keys, row, strict=True)), "dtype": dtypes[i], **hw[i]}
        for i, row in enumerate(rows)
    ]


TASKS["attention"] = _attn(
    "attention",
    "Scaled dot-product attention",
    "Compute o = softmax(q @ k^T / sqrt(D)) @ v for one head: q (M, D) queries, k and v (N, D) "
    "keys and values, the softmax along each row.",
    [
        "q (M, D): input",
        "k (N, D): input",
        "v (N, D): input",
        "o (M, D): output",
        "s (M, N): scratch, float32",
    ],
    visible=_heads(
        [(64, 64, 64), (96, 80, 64), (128, 256, 64), (50, 70, 40), (100, 72, 48)],
        ("M", "N", "D"),
    ),
    hidden=[
        {"name": "H1", "M": 1, "N": 1, "D": 1, "dtype": "float32"},
        {"name": "H2", "M": 33, "N": 17, "D": 20, "dtype": "bfloat16", "hw_mlen": 8, "hw_vlen": 8},
    ],
)
HEAD_DOMAIN = {
    "H": "{ min = 1, max = 6 }",
    "M": "{ min = 1, max = 64 }",
    "N": "{ min = 1, max = 96 }",
    "D": "{ min = 1, max = 64 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    "hw_mlen": "{ values = [16, 32] }",
}
HEAD_SHAPES = [(4, 32, 32, 32), (3, 48, 40, 64), (2, 64, 128, 64), (5, 20, 30, 24), (3, 50, 36, 40)]
TASKS["mha"] = _attn(
    "mha",
    "Multi-head attention",
    "Compute multi-head attention o[h] = softmax(q[h] @ k[h]^T / sqrt(D)) @ v[h] for H heads.",
    [
        "q (H, M, D): input",
        "k (H, N, D): input",
        "v (H, N, D): input",
        "o (H, M, D): output",
        "s (M, N): scratch, float32",
    ],
    visible=_heads(HEAD_SHAPES, ("H", "M", "N", "D")),
    hidden=[
        {"name": "H1", "H": 1, "M": 1, "N": 1, "D": 1, "dtype": "float32"},
        {
            "name": "H2",
            "H": 3,
            "M": 9,
            "N": 13,
            "D": 17,
            "dtype": "bfloat16",
            "hw_mlen": 8,
            "hw_vlen": 8,
        },
    ],
    domain=HEAD_DOMAIN,
)
TASKS["gqa"] = _attn(
    "gqa",
    "Grouped-query attention",
    "Compute grouped-query attention: H query heads share G key/value heads (H a multiple of "
    "G), o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g] with g = h // (H // G).",
    [
        "q (H, M, D): input",
        "k (G, N, D): input",
        "v (G, N, D): input",
        "o (H, M, D): output",
        "s (M, N): scratch, float32",
    ],
    visible=_heads(
        [
            (4, 2, 32, 32, 32),
            (6, 3, 48, 40, 64),
            (8, 2, 32, 128, 64),
            (6, 2, 20, 30, 24),
            (4, 2, 50, 36, 40),
        ],
        ("H", "G", "M", "N", "D"),
    ),
    hidden=[
        {"name": "H1", "H": 1, "G": 1, "M": 1, "N": 1, "D": 1, "dtype": "float32"},
        {
            "name": "H2",
            "H": 4,
            "G": 2,
            "M": 9,
            "N": 13,
            "D": 17,
            "dtype": "bfloat16",
            "hw_mlen": 8,
            "hw_vlen": 8,
        },
    ],
    domain={**HEAD_DOMAIN, "G": "{ min = 1, max = 3 }"},
    constraint="H % G == 0",
)
TASKS["mqa"] = _attn(
    "mqa",
    "Multi-query attention",
    "Compute multi-query attention: H query heads share one key/value head, "
    "o[h] = softmax(q[h] @ k^T / sqrt(D)) @ v.",
    [
        "q (H, M, D): input",
        "k (N, D): input",
        "v (N, D): input",
        "o (H, M, D): output",
        "s (M, N): scratch, float32",
    ],
    visible=_heads(HEAD_SHAPES, ("H", "M", "N", "D")),
    hidden=[
        {"name": "H1", "H": 1, "M": 1, "N": 1, "D": 1, "dtype": "float32"},
        {
            "name": "H2",
            "H": 3,
            "M": 9,
            "N": 13,
            "D": 17,
            "dtype": "bfloat16",
            "hw_mlen": 8,
            "hw_vlen": 8,
        },
    ],
    domain=HEAD_DOMAIN,
)

BLOCK_SIZES = "(H - 2 * KH + 2) * (W - 2 * KW + 2)"
TASKS["conv_block"] = _mm(
    "conv_block",
    "Conv block (conv, bias, ReLU, twice)",
    "Compute a convolutional block of two valid, stride-1 NHWC convolutions, each followed "
    "by its bias and ReLU: h = relu(conv(x, w1) + b1), y = relu(conv(h, w2) + b2), where "
    "conv(x, w)[oh, ow, o] = sum_{kh, kw, c} x[oh + kh, ow + kw, c] * w[kh, kw, c, o]. So "
    "HM = H - KH + 1, WM = W - KW + 1, OH = HM - KH + 1, OW = WM - KW + 1 (define them with "
    ".equ). The float32 scratch region h (H1, W1, CM) may hold the intermediate activations.",
    [
        "x (H, W, CI): input",
        "w1 (KH, KW, CI, CM): input",
        "b1 (CM,): input",
        "w2 (KH, KW, CM, CO): input",
        "b2 (CO,): input",
        "y (OH, OW, CO): output",
        "h (HM, WM, CM): scratch, float32",
    ],
    level=3,
    baseline=(
        "two convolutions, each per output row, per output tile and per kernel row gathering "
        "window tiles with strided DMA, loading filter tiles, waiting and multiplying tile by "
        "tile; bias and ReLU on each output tile before it is stored and waited for."
    ),
    visible=[
        {
            "name": "C1",
            "H": 10,
            "W": 34,
            "CI": 16,
            "CM": 32,
            "CO": 32,
            "KH": 3,
            "KW": 3,
            "dtype": "float32",
        },
        {
            "name": "C2",
            "H": 12,
            "W": 20,
            "CI": 24,
            "CM": 40,
            "CO": 24,
            "KH": 3,
            "KW": 3,
            "dtype": "bfloat16",
        },
        {
            "name": "C3",
            "H": 8,
            "W": 66,
            "CI": 32,
            "CM": 64,
            "CO": 32,
            "KH": 3,
            "KW": 3,
            "dtype": "float32",
        },
        {
            "name": "C4",
            "H": 11,
            "W": 13,
            "CI": 8,
            "CM": 20,
            "CO": 12,
            "KH": 3,
            "KW": 3,
            "dtype": "bfloat16",
            "hw_mlen": 16,
        },
        {
            "name": "C5",
            "H": 9,
            "W": 23,
            "CI": 12,
            "CM": 24,
            "CO": 36,
            "KH": 3,
            "KW": 2,
            "dtype": "float32",
            **SMALL_HW,
        },
    ],
    hidden=[
        {
            "name": "H1",
            "H": 1,
            "W": 1,
            "CI": 1,
            "CM": 1,
            "CO": 1,
            "KH": 1,
            "KW": 1,
            "dtype": "float32",
        },
        {
            "name": "H2",
            "H": 7,
            "W": 13,
            "CI": 5,
            "CM": 6,
            "CO": 7,
            "KH": 3,
            "KW": 2,
            "dtype": "bfloat16",
            "hw_mlen": 8,
            "hw_vlen": 8,
        },
    ],
    domain={
        "H": "{ min = 5, max = 12 }",
        "W": "{ min = 5, max = 40 }",
        "CI": "{ min = 1, max = 32 }",
        "CM": "{ min = 1, max = 32 }",
        "CO": "{ min = 1, max = 48 }",
        "KH": "{ min = 1, max = 3 }",
        "KW": "{ min = 1, max = 3 }",
        "dtype": '{ values = ["float32", "bfloat16"] }',
        "hw_mlen": "{ values = [16, 32] }",
    },
    constraint="2 * KH <= H + 1 and 2 * KW <= W + 1",
    flops=(
        f"2 * (H - KH + 1) * (W - KW + 1) * CM * KH * KW * CI"
        f" + 2 * {BLOCK_SIZES} * CO * KH * KW * CM"
    ),
    bytes=f"(H * W * CI + KH * KW * (CI * CM + CM * CO) + CM + CO + {BLOCK_SIZES} * CO) * itemsize",
)

TASKS["flash_attention"] = _attn(
    "flash_attention",
    "FlashAttention-style tiled attention",
    "Compute o = softmax(q @ k^T / sqrt(D)) @ v for one head with long key sequences: q (M, D) "
    "queries, k and v (N, D) keys and values, the softmax along each row. Keys and values do "
    "not fit on chip (the configs shrink MSRAM): tile them and keep running row maxima and sums "
    "(online softmax).",
    [
        "q (M, D): input",
        "k (N, D): input",
        "v (N, D): input",
        "o (M, D): output",
        "s (M, N): scratch, float32",
    ],
    visible=[
        {"name": "C1", "M": 64, "N": 512, "D": 64, "dtype": "float32", "hw_msram_words": 16384},
        {"name": "C2", "M": 96, "N": 384, "D": 64, "dtype": "bfloat16", "hw_msram_words": 16384},
        {"name": "C3", "M": 64, "N": 1024, "D": 64, "dtype": "float32"},
        {
            "name": "C4",
            "M": 50,
            "N": 300,
            "D": 40,
            "dtype": "bfloat16",
            "hw_mlen": 16,
            "hw_msram_words": 4096,
        },
        {"name": "C5", "M": 100, "N": 520, "D": 48, "dtype": "float32", **SMALL_HW},
    ],
    hidden=[
        {"name": "H1", "M": 1, "N": 1, "D": 1, "dtype": "float32"},
        {
            "name": "H2",
            "M": 33,
            "N": 170,
            "D": 20,
            "dtype": "bfloat16",
            "hw_mlen": 8,
            "hw_vlen": 8,
            "hw_msram_words": 1024,
        },
    ],
    domain={
        "M": "{ min = 1, max = 96 }",
        "N": "{ min = 1, max = 1024 }",
        "D": "{ min = 1, max = 64 }",
        "dtype": '{ values = ["float32", "bfloat16"] }',
        "hw_mlen": "{ values = [16, 32] }",
        "hw_msram_words": "{ values = [8192, 16384] }",
    },
)

TASKS["llama_block"] = TaskDef(
    name="llama_block",
    title="LLaMA-style decoder block",
    level=3,
    what="Compute a LLaMA-style pre-norm decoder block on one sequence of S tokens with H "
    "heads of D dimensions (model dimension DM = H * D; define it with .equ), float32: "
    "h = rmsnorm(x) * g1 with rmsnorm(x) = x / sqrt(mean(x^2) + 1e-5) per row; q = h @ wq, "
    "k = h @ wk, v = h @ wv; RoPE on q and k, per head in its rotate-half form (head columns "
    "[x1, x2] -> [x1 * cos - x2 * sin, x2 * cos + x1 * sin], the tables given for every head); "
    "causal attention per head (token i attends to tokens j <= i, scores scaled by 1/sqrt(D)), "
    "a (S, DM) the heads side by side; x2 = x + a @ wo; h = rmsnorm(x2) * g2; "
    "y = x2 + (silu(h @ wg) * (h @ wu)) @ wd with silu(g) = g / (1 + exp(-g)). The scratch "
    "regions may hold the intermediates (their names suggest which).",
    regions=[
        "x (S, DM): input",
        "g1 (DM,): input",
        "wq (DM, DM): input",
        "wk (DM, DM): input",
        "wv (DM, DM): input",
        "wo (DM, DM): input",
        "g2 (DM,): input",
        "wg (DM, F): input",
        "wu (DM, F): input",
        "wd (F, DM): input",
        "cos (S, H, D / 2): input",
        "sin (S, H, D / 2): input",
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
    baseline="the baselines of its parts in order (row streams one row at a time, products "
    "tile by tile, attention through the scores scratch).",
    visible=[
        {"name": "C1", "S": 64, "H": 2, "D": 32, "F": 128, "dtype": "float32"},
        {"name": "C2", "S": 48, "H": 4, "D": 16, "F": 96, "dtype": "float32"},
        {"name": "C3", "S": 96, "H": 2, "D": 64, "F": 256, "dtype": "float32"},
        {"name": "C4", "S": 40, "H": 3, "D": 16, "F": 80, "dtype": "float32", "hw_mlen": 16},
        {"name": "C5", "S": 50, "H": 2, "D": 24, "F": 72, "dtype": "float32", **SMALL_HW},
    ],
    hidden=[
        {"name": "H1", "S": 1, "H": 1, "D": 2, "F": 1, "dtype": "float32"},
        {
            "name": "H2",
            "S": 20,
            "H": 2,
            "D": 10,
            "F": 30,
            "dtype": "float32",
            "hw_mlen": 8,
            "hw_vlen": 8,
        },
    ],
    domain={
        "S": "{ min = 1, max = 64 }",
        "H": "{ min = 1, max = 4 }",
        "D": "{ min = 2, max = 32 }",
        "F": "{ min = 1, max = 128 }",
        "dtype": '{ values = ["float32"] }',
        "hw_mlen": "{ values = [16, 32] }",
    },
    constraint="D % 2 == 0",
    flops="2 * S * H * D * (4 * H * D + 3 * F) + 4 * S * S * H * D",
    bytes="(2 * S * H * D + 4 * (H * D) ** 2 + 3 * H * D * F + S * H * D) * itemsize",
    distributions=MM_DISTRIBUTIONS,
    tolerance={"float32": (2e-4, 2e-4)},
)

TASKS["t5_block"] = TaskDef(
    name="t5_block",
    title="T5-style decoder block",
    level=3,
    what="Compute a T5-style pre-norm decoder block on S tokens attending to an encoder output "
    "enc (T, DM), H heads of D dimensions (model dimension DM = H * D; define it with .equ), "
    "float32, no biases, T5's unscaled attention scores (no relative position bias): with "
    "rmsnorm(x) = x / sqrt(mean(x^2) + 1e-5) per row and attention(q, k, v) per head "
    "softmax(q_h @ k_h^T) @ v_h (head h: columns h * D .. h * D + D; the q, k, v weights are "
    "given (DM, H, D), laid out as (DM, DM)): h = rmsnorm(x) * g1, x2 = x + causal "
    "attention(h @ wq1, h @ wk1, h @ wv1) @ wo1 (token i attends to tokens j <= i); "
    "h = rmsnorm(x2) * g2, x3 = x2 + attention(h @ wq2, enc @ wk2, enc @ wv2) @ wo2; "
    "h = rmsnorm(x3) * g3, y = x3 + relu(h @ wi) @ wf. The scratch regions may hold the "
    "intermediates (their names suggest which).",
    regions=[
        "x (S, DM): input",
        "enc (T, DM): input",
        "g1 (DM,): input",
        "wq1 (DM, H, D): input",
        "wk1 (DM, H, D): input",
        "wv1 (DM, H, D): input",
        "wo1 (DM, DM): input",
        "g2 (DM,): input",
        "wq2 (DM, H, D): input",
        "wk2 (DM, H, D): input",
        "wv2 (DM, H, D): input",
        "wo2 (DM, DM): input",
        "g3 (DM,): input",
        "wi (DM, F): input",
        "wf (F, DM): input",
        "y (S, DM): output",
        "hn, q, k, v, a, x2, x3 (S, DM): scratch (in this order)",
        "kc, vc (T, DM): scratch",
        "hf (S, F): scratch",
        "ss (S, S): scratch",
        "sc (S, T): scratch",
    ],
    baseline="the baselines of its parts in order (row streams one row at a time, products "
    "tile by tile, attention through the scores scratch).",
    visible=[
        {"name": "C1", "S": 32, "T": 48, "H": 2, "D": 32, "F": 128, "dtype": "float32"},
        {"name": "C2", "S": 48, "T": 40, "H": 4, "D": 16, "F": 96, "dtype": "float32"},
        {"name": "C3", "S": 64, "T": 96, "H": 2, "D": 64, "F": 256, "dtype": "float32"},
        {
            "name": "C4",
            "S": 40,
            "T": 24,
            "H": 3,
            "D": 16,
            "F": 80,
            "dtype": "float32",
            "hw_mlen": 16,
        },
        {"name": "C5", "S": 50, "T": 37, "H": 2, "D": 24, "F": 72, "dtype": "float32", **SMALL_HW},
    ],
    hidden=[
        {"name": "H1", "S": 1, "T": 1, "H": 1, "D": 1, "F": 1, "dtype": "float32"},
        {
            "name": "H2",
            "S": 20,
            "T": 13,
            "H": 2,
            "D": 10,
            "F": 30,
            "dtype": "float32",
            "hw_mlen": 8,
            "hw_vlen": 8,
        },
    ],
    domain={
        "S": "{ min = 1, max = 64 }",
        "T": "{ min = 1, max = 64 }",
        "H": "{ min = 1, max = 4 }",
        "D": "{ min = 1, max = 32 }",
        "F": "{ min = 1, max = 128 }",
        "dtype": '{ values = ["float32"] }',
        "hw_mlen": "{ values = [16, 32] }",
    },
    flops="2 * (H * D) * (6 * S * H * D + 2 * T * H * D + 2 * S * F) + 4 * H * D * S * (S + T)",
    bytes="(2 * S * H * D + T * H * D + 8 * (H * D) ** 2 + 2 * H * D * F) * itemsize",
    distributions=MM_DISTRIBUTIONS,
    tolerance={"float32": (2e-4, 2e-4)},
)


#: Fixed hidden configs at the ends of each task's hidden domain: its largest and smallest
#: sizes and every hardware choice (`gauntlet tasks check` requires the fixed hidden configs
#: to reach them; see docs/tasks.md), each no costlier than the task's largest visible config.
REACH_HIDDEN: dict[str, list[Config]] = {
    "attention": [
        {"name": "H3", "M": 96, "N": 160, "D": 96, "dtype": "float32", "hw_mlen": 32},
    ],
    "bmm": [
        {"name": "H3", "BATCH": 1, "M": 64, "N": 64, "K": 128, "dtype": "float32", "hw_mlen": 32},
    ],
    "conv2d": [
        {
            "name": "H3",
            "H": 12,
            "W": 40,
            "CI": 32,
            "CO": 48,
            "KH": 1,
            "KW": 3,
            "dtype": "float32",
            "hw_mlen": 32,
        },
    ],
    "conv_block": [
        {
            "name": "H3",
            "H": 12,
            "W": 40,
            "CI": 32,
            "CM": 32,
            "CO": 48,
            "KH": 1,
            "KW": 3,
            "dtype": "float32",
            "hw_mlen": 32,
        },
    ],
    "depthwise_conv": [
        {
            "name": "H3",
            "H": 12,
            "W": 40,
            "C": 1,
            "KH": 1,
            "KW": 3,
            "dtype": "float32",
            "hw_vlen": 64,
        },
        {
            "name": "H4",
            "H": 3,
            "W": 3,
            "C": 96,
            "KH": 1,
            "KW": 1,
            "dtype": "float32",
            "hw_vlen": 16,
        },
    ],
    "ffn": [
        {"name": "H3", "M": 128, "D": 128, "F": 256, "dtype": "float32", "hw_mlen": 32},
    ],
    "flash_attention": [
        {
            "name": "H3",
            "M": 96,
            "N": 1024,
            "D": 1,
            "dtype": "float32",
            "hw_msram_words": 16384,
            "hw_mlen": 32,
        },
        {
            "name": "H4",
            "M": 1,
            "N": 1,
            "D": 64,
            "dtype": "float32",
            "hw_msram_words": 8192,
            "hw_mlen": 16,
        },
    ],
    "gelu": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "gemm": [
        {"name": "H3", "M": 128, "N": 128, "K": 1, "dtype": "float32", "hw_mlen": 32},
        {"name": "H4", "M": 1, "N": 1, "K": 256, "dtype": "float32", "hw_mlen": 16},
    ],
    "gemv": [
        {"name": "H3", "M": 400, "K": 1, "dtype": "float32", "hw_mlen": 32},
        {"name": "H4", "M": 1, "K": 512, "dtype": "float32", "hw_mlen": 16},
    ],
    "gqa": [
        {"name": "H3", "H": 6, "G": 3, "M": 64, "N": 96, "D": 1, "dtype": "float32", "hw_mlen": 32},
        {"name": "H4", "H": 1, "G": 1, "M": 1, "N": 1, "D": 64, "dtype": "float32", "hw_mlen": 16},
    ],
    "layernorm": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "linear": [
        {"name": "H3", "M": 128, "N": 128, "K": 1, "dtype": "float32", "hw_mlen": 32},
        {"name": "H4", "M": 1, "N": 1, "K": 256, "dtype": "float32", "hw_mlen": 16},
    ],
    "llama_block": [
        {"name": "H3", "S": 64, "H": 4, "D": 32, "F": 128, "dtype": "float32", "hw_mlen": 32},
    ],
    "mha": [
        {"name": "H3", "H": 6, "M": 64, "N": 96, "D": 1, "dtype": "float32", "hw_mlen": 32},
        {"name": "H4", "H": 1, "M": 1, "N": 1, "D": 64, "dtype": "float32", "hw_mlen": 16},
    ],
    "mqa": [
        {"name": "H3", "H": 6, "M": 64, "N": 96, "D": 1, "dtype": "float32", "hw_mlen": 32},
        {"name": "H4", "H": 1, "M": 1, "N": 1, "D": 64, "dtype": "float32", "hw_mlen": 16},
    ],
    "relu": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "rmsnorm": [
        {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 700, "dtype": "float32", "hw_vlen": 16},
    ],
    "rope": [
        {"name": "H3", "ROWS": 160, "COLS": 2, "dtype": "float32", "hw_vlen": 64},
        {"name": "H4", "ROWS": 1, "COLS": 512, "dtype": "float32", "hw_vlen": 16},
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
        {"name": "H3", "M": 128, "D": 128, "F": 256, "dtype": "float32", "hw_mlen": 32},
    ],
    "t5_block": [
        {
            "name": "H3",
            "S": 64,
            "T": 64,
            "H": 4,
            "D": 32,
            "F": 128,
            "dtype": "float32",
            "hw_mlen": 32,
        },
    ],
}
for _name, _extra in REACH_HIDDEN.items():
    TASKS[_name] = dataclasses.replace(TASKS[_name], hidden=[*TASKS[_name].hidden, *_extra])
