"""The tile tasks: what each computes, its contract, configurations and roofline.

Configurations go from C1 (small, aligned, the default 4 x 4 array) to C5 (awkward sizes on a
different array: other grid shapes, short vectors, a slow external memory); the `hw_*`
parameters override the tile platform's hardware, so one program must work for every grid.
"""

from __future__ import annotations

from .taskfiles import ParamValue, TaskDef

Config = dict[str, ParamValue]

SMALL: Config = {"hw_grid_rows": 2, "hw_grid_cols": 3, "hw_vlen": 16, "hw_lanes": 8}
SLOW: Config = {"hw_grid_rows": 3, "hw_grid_cols": 2, "hw_ext_bytes_per_cycle": 16}
NARROW: Config = {"hw_grid_rows": 1, "hw_grid_cols": 4, "hw_vlen": 8, "hw_lanes": 4}
#: Hidden configs reach both ends of the grid domain: 1 x 1, 4 x 3 and 1 x 4.
SINGLE: Config = {"hw_grid_rows": 1, "hw_grid_cols": 1}
TALL: Config = {"hw_grid_rows": 4, "hw_grid_cols": 3}
WIDE: Config = {"hw_grid_rows": 1, "hw_grid_cols": 4}
GRID_DOMAIN = {
    "hw_grid_rows": "{ values = [1, 2, 4] }",
    "hw_grid_cols": "{ values = [1, 3, 4] }",
}

ROW_VISIBLE: list[Config] = [
    {"name": "C1", "ROWS": 64, "COLS": 256, "dtype": "float32"},
    {"name": "C2", "ROWS": 100, "COLS": 300, "dtype": "bfloat16"},
    {"name": "C3", "ROWS": 32, "COLS": 1024, "dtype": "float32", **SLOW},
    {"name": "C4", "ROWS": 128, "COLS": 96, "dtype": "bfloat16", **SMALL},
    {"name": "C5", "ROWS": 97, "COLS": 333, "dtype": "float32", **NARROW},
]
ROW_HIDDEN: list[Config] = [
    {"name": "H1", "ROWS": 1, "COLS": 5, "dtype": "float32", **SINGLE},
    {
        "name": "H2",
        "ROWS": 159,
        "COLS": 1023,
        "dtype": "bfloat16",
        **{"hw_grid_rows": 4, "hw_grid_cols": 3},
    },
    {"name": "H3", "ROWS": 160, "COLS": 1, "dtype": "float32", **NARROW},
    {"name": "H4", "ROWS": 7, "COLS": 1024, "dtype": "float32", "hw_grid_rows": 2},
]
ROW_DOMAIN = {
    "ROWS": "{ min = 1, max = 160 }",
    "COLS": "{ min = 1, max = 1024 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    **GRID_DOMAIN,
}
ROW_REGIONS = ["x (ROWS, COLS): input", "y (ROWS, COLS): output"]
ROW_BASELINE = (
    "the whole job on tile 0 (the other tiles halt), one row at a time: load, wait, compute, "
    "store, wait."
)
ROW_BYTES = "2 * ROWS * COLS * itemsize"
ROW_TOLERANCE = {"float32": (1e-5, 1e-5), "bfloat16": (1e-3, 1.6e-2)}


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
    {"name": "C3", "M": 16, "N": 128, "K": 256, "dtype": "float32", **SLOW},
    {"name": "C4", "M": 48, "N": 96, "K": 32, "dtype": "bfloat16", "hw_mlen": 4, **SMALL},
    {"name": "C5", "M": 37, "N": 45, "K": 29, "dtype": "float32", **NARROW},
]
MM_HIDDEN: list[Config] = [
    {"name": "H1", "M": 1, "N": 1, "K": 1, "dtype": "float32", **SINGLE},
    {"name": "H2", "M": 127, "N": 119, "K": 511, "dtype": "bfloat16", **TALL},
    {"name": "H3", "M": 128, "N": 128, "K": 512, "dtype": "float32", **WIDE},
]
MM_DOMAIN = {
    "M": "{ min = 1, max = 128 }",
    "N": "{ min = 1, max = 128 }",
    "K": "{ min = 1, max = 512 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    **GRID_DOMAIN,
}
MM_BASELINE = (
    "every output panel (MLEN x MLEN) on tile 0, the other tiles halt: load its A panel, wait, "
    "load its B panel, wait, multiply, store, wait."
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


#: The MLP tasks' shapes (ffn, mlp_block): M tokens, model width D, hidden width F.
FFN_VISIBLE: list[Config] = [
    {"name": "C1", "M": 32, "D": 64, "F": 128, "dtype": "float32"},
    {"name": "C2", "M": 33, "D": 40, "F": 70, "dtype": "bfloat16"},
    {"name": "C3", "M": 16, "D": 128, "F": 256, "dtype": "float32", **SLOW},
    {"name": "C4", "M": 48, "D": 32, "F": 96, "dtype": "bfloat16", **SMALL},
    {"name": "C5", "M": 37, "D": 29, "F": 45, "dtype": "float32", **NARROW},
]
FFN_HIDDEN: list[Config] = [
    {"name": "H1", "M": 1, "D": 1, "F": 1, "dtype": "float32", **SINGLE},
    {"name": "H2", "M": 63, "D": 127, "F": 255, "dtype": "bfloat16", **TALL},
    {"name": "H3", "M": 64, "D": 128, "F": 256, "dtype": "float32", **WIDE},
]
FFN_DOMAIN = {
    "M": "{ min = 1, max = 64 }",
    "D": "{ min = 1, max = 128 }",
    "F": "{ min = 1, max = 256 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    **GRID_DOMAIN,
}

AT_VISIBLE: list[Config] = [
    {"name": "C1", "M": 64, "N": 64, "D": 32, "dtype": "float32"},
    {"name": "C2", "M": 37, "N": 45, "D": 20, "dtype": "bfloat16"},
    {"name": "C3", "M": 128, "N": 128, "D": 32, "dtype": "float32", **SLOW},
    {"name": "C4", "M": 16, "N": 96, "D": 16, "dtype": "bfloat16", **SMALL},
    {"name": "C5", "M": 50, "N": 33, "D": 24, "dtype": "float32", **NARROW},
]
AT_HIDDEN: list[Config] = [
    {"name": "H1", "M": 1, "N": 1, "D": 1, "dtype": "float32", **SINGLE},
    {"name": "H2", "M": 127, "N": 127, "D": 31, "dtype": "bfloat16", **TALL},
    {"name": "H3", "M": 128, "N": 128, "D": 32, "dtype": "float32", **WIDE},
]
AT_DOMAIN = {
    "M": "{ min = 1, max = 128 }",
    "N": "{ min = 1, max = 128 }",
    "D": "{ min = 1, max = 32 }",
    "dtype": '{ values = ["float32", "bfloat16"] }',
    **GRID_DOMAIN,
}
AT_BASELINE = (
    "every block of MLEN query rows on tile 0, the other tiles halt: for each K panel load, "
    "wait, multiply into S; a row softmax; for each V panel load, wait, multiply, store, wait."
)
AT_TOLERANCE = {"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)}

TASK_LIST: list[TaskDef] = [
    _rows("relu", "ReLU", "Compute y = max(x, 0) elementwise.", "ROWS * COLS"),
    _rows(
        "silu",
        "SiLU",
        "Compute y = x * sigmoid(x) = x / (1 + exp(-x)) elementwise.",
        "5 * ROWS * COLS",
    ),
    _rows(
        "gelu",
        "GELU",
        "Compute GELU in its tanh form elementwise: y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * "
        "(x + 0.044715 * x^3))).",
        "9 * ROWS * COLS",
    ),
    _rows(
        "softmax",
        "row softmax",
        "Compute the softmax of each row of x: y[i, j] = exp(x[i, j] - max_j x[i]) / sum_j "
        "exp(x[i, j] - max_j x[i]).",
        "5 * ROWS * COLS",
    ),
    _rows(
        "layernorm",
        "LayerNorm",
        "Normalize each row of x to zero mean and unit variance (biased variance, eps = 1e-5), "
        "then scale by gamma and shift by beta: y = (x - mean) / sqrt(var + 1e-5) * gamma + beta.",
        "8 * ROWS * COLS",
        regions=[
            "x (ROWS, COLS): input",
            "gamma (COLS): input",
            "beta (COLS): input",
            "y (ROWS, COLS): output",
        ],
        bytes="2 * ROWS * COLS * itemsize + 2 * COLS * itemsize",
    ),
    _rows(
        "rmsnorm",
        "RMSNorm",
        "Scale each row of x by the reciprocal of its root mean square (eps = 1e-5) and by "
        "w: y = x / sqrt(mean(x^2) + 1e-5) * w.",
        "4 * ROWS * COLS",
        regions=["x (ROWS, COLS): input", "w (COLS): input", "y (ROWS, COLS): output"],
        bytes="2 * ROWS * COLS * itemsize + COLS * itemsize",
    ),
    _rows(
        "swiglu",
        "SwiGLU gate",
        "Compute the SwiGLU gate elementwise: y = silu(g) * u = g / (1 + exp(-g)) * u.",
        "6 * ROWS * COLS",
        level=2,
        regions=["g (ROWS, COLS): input", "u (ROWS, COLS): input", "y (ROWS, COLS): output"],
        bytes="3 * ROWS * COLS * itemsize",
    ),
    _rows(
        "colsum",
        "column sums",
        "Sum the rows of x: y[j] = sum_i x[i, j]. Tiles that each sum a share of the rows "
        "must combine their partial sums: pass them between neighbours.",
        "ROWS * COLS",
        regions=["x (ROWS, COLS): input", "y (COLS): output"],
        bytes="(ROWS * COLS + COLS) * itemsize",
        baseline="the whole job on tile 0 (the other tiles halt), one row at a time: load, "
        "wait, add into the sums; then store them.",
        visible=[
            {"name": "C1", "ROWS": 256, "COLS": 256, "dtype": "float32"},
            {"name": "C2", "ROWS": 600, "COLS": 64, "dtype": "bfloat16"},
            {"name": "C3", "ROWS": 64, "COLS": 512, "dtype": "float32", **SLOW},
            {"name": "C4", "ROWS": 333, "COLS": 96, "dtype": "bfloat16", **SMALL},
            {"name": "C5", "ROWS": 97, "COLS": 333, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "ROWS": 1, "COLS": 1, "dtype": "float32"},
            {"name": "H2", "ROWS": 599, "COLS": 511, "dtype": "bfloat16", **TALL},
            {"name": "H3", "ROWS": 600, "COLS": 7, "dtype": "float32", **WIDE},
            {"name": "H4", "ROWS": 5, "COLS": 512, "dtype": "float32", "hw_grid_cols": 1},
        ],
        domain={
            "ROWS": "{ min = 1, max = 600 }",
            "COLS": "{ min = 1, max = 512 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            **GRID_DOMAIN,
        },
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)},
    ),
    _rows(
        "colmax",
        "column maxima",
        "Compute the maximum of each column of x: y[j] = max_i x[i, j]. Tiles that each "
        "reduce a share of the rows must combine their partial maxima: pass them between "
        "neighbours.",
        "ROWS * COLS",
        regions=["x (ROWS, COLS): input", "y (COLS): output"],
        bytes="(ROWS * COLS + COLS) * itemsize",
        baseline="the whole job on tile 0 (the other tiles halt), one row at a time: load, "
        "wait, fold into the maxima; then store them.",
        visible=[
            {"name": "C1", "ROWS": 256, "COLS": 256, "dtype": "float32"},
            {"name": "C2", "ROWS": 600, "COLS": 64, "dtype": "bfloat16"},
            {"name": "C3", "ROWS": 64, "COLS": 512, "dtype": "float32", **SLOW},
            {"name": "C4", "ROWS": 333, "COLS": 96, "dtype": "bfloat16", **SMALL},
            {"name": "C5", "ROWS": 97, "COLS": 333, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "ROWS": 1, "COLS": 1, "dtype": "float32"},
            {"name": "H2", "ROWS": 599, "COLS": 511, "dtype": "bfloat16", **TALL},
            {"name": "H3", "ROWS": 600, "COLS": 7, "dtype": "float32", **WIDE},
            {"name": "H4", "ROWS": 5, "COLS": 512, "dtype": "float32", "hw_grid_cols": 1},
        ],
        domain={
            "ROWS": "{ min = 1, max = 600 }",
            "COLS": "{ min = 1, max = 512 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            **GRID_DOMAIN,
        },
        tolerance={"float32": (1e-6, 1e-6), "bfloat16": (1e-3, 1e-3)},
    ),
    _rows(
        "gemv_t",
        "transposed GEMV",
        "Compute y = x @ w: y[j] = sum_i x[i] * w[i, j]. Tiles that each take a share of "
        "the rows of w must combine their partial sums: pass them between neighbours.",
        "2 * K * N",
        regions=["w (K, N): input", "x (K): input", "y (N): output"],
        bytes="(K * N + K + N) * itemsize",
        baseline="the whole job on tile 0 (the other tiles halt), one row at a time: load, "
        "wait, add x[i] times it into the sums; then store them.",
        visible=[
            {"name": "C1", "K": 256, "N": 256, "dtype": "float32"},
            {"name": "C2", "K": 600, "N": 64, "dtype": "bfloat16"},
            {"name": "C3", "K": 64, "N": 512, "dtype": "float32", **SLOW},
            {"name": "C4", "K": 333, "N": 96, "dtype": "bfloat16", **SMALL},
            {"name": "C5", "K": 97, "N": 333, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "K": 1, "N": 1, "dtype": "float32"},
            {"name": "H2", "K": 599, "N": 511, "dtype": "bfloat16", **TALL},
            {"name": "H3", "K": 600, "N": 7, "dtype": "float32", **WIDE},
            {"name": "H4", "K": 5, "N": 512, "dtype": "float32", "hw_grid_cols": 1},
        ],
        domain={
            "K": "{ min = 1, max = 600 }",
            "N": "{ min = 1, max = 512 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            **GRID_DOMAIN,
        },
        tolerance=MM_TOLERANCE,
        distributions=MM_DISTRIBUTIONS,
    ),
    _rows(
        "cumsum",
        "cumulative sum",
        "Compute the cumulative sum down the rows: y[i, j] = sum over k <= i of x[k, j]. Tiles "
        "that each own a chunk of rows need the total of the chunks before theirs: pass it "
        "between neighbours.",
        "ROWS * COLS",
        baseline="the whole job on tile 0 (the other tiles halt), one row at a time: load, "
        "wait, add the running sum, store, wait.",
        visible=[
            {"name": "C1", "ROWS": 512, "COLS": 256, "dtype": "float32"},
            {"name": "C2", "ROWS": 600, "COLS": 64, "dtype": "bfloat16"},
            {"name": "C3", "ROWS": 64, "COLS": 512, "dtype": "float32", **SLOW},
            {"name": "C4", "ROWS": 333, "COLS": 96, "dtype": "bfloat16", **SMALL},
            {"name": "C5", "ROWS": 97, "COLS": 333, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "ROWS": 1, "COLS": 1, "dtype": "float32", **SINGLE},
            {"name": "H2", "ROWS": 599, "COLS": 511, "dtype": "bfloat16", **TALL},
            {"name": "H3", "ROWS": 600, "COLS": 7, "dtype": "float32", **WIDE},
            {"name": "H4", "ROWS": 5, "COLS": 512, "dtype": "float32"},
        ],
        domain={
            "ROWS": "{ min = 1, max = 600 }",
            "COLS": "{ min = 1, max = 512 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            **GRID_DOMAIN,
        },
        tolerance={"float32": (1e-4, 1e-4), "bfloat16": (1e-2, 1.6e-2)},
    ),
    _mm(
        "gemv",
        "GEMV",
        "Compute the matrix-vector product y = w @ x.",
        ["w (M, K): input", "x (K): input", "y (M): output"],
        baseline="every panel of MLEN rows on tile 0, the other tiles halt: load x, then for "
        "each panel load, wait, multiply (mvac), store, wait.",
        flops="2 * M * K",
        bytes="(M * K + K + M) * itemsize",
        visible=[
            {"name": "C1", "M": 256, "K": 256, "dtype": "float32"},
            {"name": "C2", "M": 300, "K": 500, "dtype": "bfloat16"},
            {"name": "C3", "M": 64, "K": 768, "dtype": "float32", **SLOW},
            {"name": "C4", "M": 96, "K": 64, "dtype": "bfloat16", **SMALL},
            {"name": "C5", "M": 97, "K": 333, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "M": 1, "K": 1, "dtype": "float32", **SINGLE},
            {"name": "H2", "M": 511, "K": 767, "dtype": "bfloat16", **TALL},
            {"name": "H3", "M": 512, "K": 768, "dtype": "float32", **WIDE},
        ],
        domain={
            "M": "{ min = 1, max = 512 }",
            "K": "{ min = 1, max = 768 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            **GRID_DOMAIN,
        },
    ),
    _mm(
        "gemm",
        "GEMM",
        "Compute the matrix product c = a @ b.",
        ["a (M, K): input", "b (K, N): input", "c (M, N): output"],
    ),
    _mm(
        "linear",
        "linear layer",
        "Compute y = x @ w + b (b broadcast over the rows).",
        ["x (M, K): input", "w (K, N): input", "b (N): input", "y (M, N): output"],
        bytes="(M * K + K * N + N + M * N) * itemsize",
    ),
    _mm(
        "batched_matmul",
        "batched matmul",
        "Compute c[i] = a[i] @ b[i] for every batch i.",
        ["a (BATCH, M, K): input", "b (BATCH, K, N): input", "c (BATCH, M, N): output"],
        flops="2 * BATCH * M * N * K",
        bytes="BATCH * (M * K + K * N + M * N) * itemsize",
        visible=[{**c, "BATCH": b} for c, b in zip(MM_VISIBLE, (2, 3, 1, 4, 2), strict=True)],
        hidden=[{**c, "BATCH": b} for c, b in zip(MM_HIDDEN, (1, 3, 4), strict=True)],
        domain={"BATCH": "{ min = 1, max = 4 }", **MM_DOMAIN},
    ),
    _mm(
        "ffn",
        "feed-forward block",
        "Compute the feed-forward block y = gelu(x @ w1 + b1) @ w2 + b2, with GELU in its tanh "
        "form. The scratch region h (M, F), always float32, may hold the hidden activations.",
        [
            "x (M, D): input",
            "w1 (D, F): input",
            "b1 (F): input",
            "w2 (F, D): input",
            "b2 (D): input",
            "y (M, D): output",
            "h (M, F): scratch, float32",
        ],
        level=2,
        baseline="both products on tile 0 (the other tiles halt), every output panel loading "
        "its A and B panels and waiting for each transfer.",
        flops="4 * M * D * F",
        bytes="(2 * M * D + 2 * D * F + D + F) * itemsize + 8 * M * F",
        visible=FFN_VISIBLE,
        hidden=FFN_HIDDEN,
        domain=FFN_DOMAIN,
    ),
    _mm(
        "mlp_block",
        "pre-norm MLP block",
        "Compute a pre-norm transformer MLP block with its residual: n = x / sqrt(mean(x^2 "
        "over the row) + 1e-5) * g (RMSNorm); h = gelu(n @ w1), GELU in its tanh form; y = x + "
        "h @ w2. The scratch regions n (M, D) and h (M, F), always float32, may hold the "
        "intermediates.",
        [
            "x (M, D): input",
            "g (D): input",
            "w1 (D, F): input",
            "w2 (F, D): input",
            "y (M, D): output",
            "n (M, D): scratch, float32",
            "h (M, F): scratch, float32",
        ],
        level=3,
        baseline="the three stages on tile 0 (the other tiles halt): the norm one row at a "
        "time, then both products with every output panel loading its A and B panels and "
        "waiting for each transfer.",
        flops="4 * M * D * F + 9 * M * F + 5 * M * D",
        bytes="(2 * M * D + 2 * D * F + D) * itemsize + 8 * M * (D + F)",
        visible=FFN_VISIBLE,
        hidden=FFN_HIDDEN,
        domain=FFN_DOMAIN,
    ),
    TaskDef(
        name="attention",
        title="scaled dot-product attention",
        level=2,
        what="Compute o = softmax(q @ k^T / sqrt(D)) @ v, the softmax over each row.",
        regions=["q (M, D): input", "k (N, D): input", "v (N, D): input", "o (M, D): output"],
        baseline=AT_BASELINE,
        visible=AT_VISIBLE,
        hidden=AT_HIDDEN,
        domain=AT_DOMAIN,
        flops="4 * M * N * D + 5 * M * N",
        bytes="(2 * M * D + 2 * N * D) * itemsize",
        distributions=MM_DISTRIBUTIONS,
        tolerance=AT_TOLERANCE,
    ),
    TaskDef(
        name="gqa",
        title="grouped-query attention",
        level=2,
        what="Compute o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g] for every head h, with "
        "g = h // (H // G): G groups of key and value heads shared by H // G query heads each "
        "(G = H is multi-head, G = 1 multi-query attention).",
        regions=[
            "q (H, M, D): input",
            "k (G, N, D): input",
            "v (G, N, D): input",
            "o (H, M, D): output",
        ],
        baseline=AT_BASELINE.replace("every block", "every head's every block"),
        visible=[
            {**AT_VISIBLE[0], "H": 4, "G": 4},
            {**AT_VISIBLE[1], "H": 4, "G": 2},
            {**AT_VISIBLE[2], "H": 2, "G": 1},
            {**AT_VISIBLE[3], "H": 6, "G": 3},
            {**AT_VISIBLE[4], "H": 3, "G": 1},
        ],
        hidden=[
            {**AT_HIDDEN[0], "H": 1, "G": 1},
            {**AT_HIDDEN[1], "H": 3, "G": 1},
            {**AT_HIDDEN[2], "H": 4, "G": 4},
        ],
        domain={"H": "{ min = 1, max = 4 }", "G": "{ min = 1, max = 4 }", **AT_DOMAIN},
        constraint="H % G == 0",
        flops="H * (4 * M * N * D + 5 * M * N)",
        bytes="(2 * H * M * D + 2 * G * N * D) * itemsize",
        distributions=MM_DISTRIBUTIONS,
        tolerance=AT_TOLERANCE,
    ),
    TaskDef(
        name="stencil",
        title="1-D stencil steps",
        level=2,
        what="Apply STEPS diffusion steps to x: step s replaces every x[i] by x[i] + w[s] / 4 "
        "* (x[i - 1] - 2 * x[i] + x[i + 1]), with x[-1] = x[N] = 0 (w[s] in [0, 1]). Tiles "
        "that each own a chunk must swap boundary words with the tiles owning the "
        "neighbouring chunks every step: place neighbouring chunks on neighbouring tiles.",
        regions=["x (N): input", "w (STEPS): input", "y (N): output"],
        baseline="the whole vector on tile 0 (the other tiles halt): load it, step it STEPS "
        "times in local memory, store it.",
        visible=[
            {"name": "C1", "N": 4096, "STEPS": 32, "dtype": "float32"},
            {"name": "C2", "N": 3000, "STEPS": 20, "dtype": "bfloat16"},
            {"name": "C3", "N": 2048, "STEPS": 64, "dtype": "float32", **SLOW},
            {"name": "C4", "N": 1536, "STEPS": 16, "dtype": "bfloat16", **SMALL},
            {"name": "C5", "N": 3333, "STEPS": 25, "dtype": "float32", **NARROW},
        ],
        hidden=[
            {"name": "H1", "N": 1, "STEPS": 1, "dtype": "float32", **SINGLE},
            {"name": "H2", "N": 4095, "STEPS": 63, "dtype": "bfloat16", **TALL},
            {"name": "H3", "N": 4096, "STEPS": 64, "dtype": "float32", **WIDE},
            {"name": "H4", "N": 7, "STEPS": 5, "dtype": "float32"},
        ],
        domain={
            "N": "{ min = 1, max = 4096 }",
            "STEPS": "{ min = 1, max = 64 }",
            "dtype": '{ values = ["float32", "bfloat16"] }',
            **GRID_DOMAIN,
        },
        flops="5 * N * STEPS",
        bytes="(2 * N + STEPS) * itemsize",
        tolerance={"float32": (1e-5, 1e-5), "bfloat16": (1e-3, 1.6e-2)},
    ),
]

TASKS: dict[str, TaskDef] = {t.name: t for t in TASK_LIST}
