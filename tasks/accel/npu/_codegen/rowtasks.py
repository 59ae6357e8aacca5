"""Row kernels: ReLU, SiLU, GELU, softmax, LayerNorm, RMSNorm (level 1), RoPE (level 2).

Each task is a `RowKernel` over x (ROWS, COLS) -> y (ROWS, COLS); the baseline and expert
computations differ as described in `rows.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .asm import Asm
from .rows import (
    Block,
    Operand,
    RowKernel,
    each_row,
    each_strip,
    flat,
    row_reduce_scalar,
    vector_accumulate,
)

#: d <- f(s) on VL lanes, with t a VLEN-word temporary (operands as text).
Pointwise = Callable[[Asm, str, str, str], None]

#: GELU's tanh form as a sigmoid: gelu(x) = x * sigmoid(x * (G1 + G3 * x^2)).
GELU_K = math.sqrt(2.0 / math.pi)
GELU_G1 = 2.0 * GELU_K
GELU_G3 = 2.0 * GELU_K * 0.044715


def relu(a: Asm, d: str, s: str, t: str) -> None:
    """max(x, 0): f0 reads 0.0."""
    a(f"vmaxs {d}, {s}, f0")


def silu(a: Asm, d: str, s: str, t: str) -> None:
    """X * sigmoid(x) = x / (1 + exp(-x)); exp overflow gives 1/inf = 0, the right limit."""
    a(f"vmuls {t}, {s}, f2", f"vexp {t}, {t}", f"vadds {t}, {t}, f1")
    a(f"vrecip {t}, {t}", f"vmul {d}, {s}, {t}")


def gelu(a: Asm, d: str, s: str, t: str) -> None:
    """X * sigmoid(2k(x + 0.044715 x^3)), with f5 = -G3 and f6 = -G1 (so exp gets -u)."""
    a(f"vmul {t}, {s}, {s}", f"vmuls {t}, {t}, f5", f"vadds {t}, {t}, f6", f"vmul {t}, {t}, {s}")
    a(f"vexp {t}, {t}", f"vadds {t}, {t}, f1", f"vrecip {t}, {t}", f"vmul {d}, {s}, {t}")


GELU_CONSTANTS = {"f5": f"-{GELU_G3!r}", "f6": f"-{GELU_G1!r}"}


def pointwise_kernel(title: str, op: Pointwise, constants: dict[str, str]) -> RowKernel:
    """Y = op(x) elementwise."""

    def base(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            each_strip(a, p, lambda s: op(a, s[1], s[0], "[r0 + T_0]"))

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    def fast(a: Asm, block: Block) -> None:
        # Padding lanes hold zeros from the load: computing them is harmless and saves setvl.
        flat(a, block, [block.ins[0], block.outs[0]], lambda s: op(a, s[1], s[0], "[r0 + T_0]"))

    return RowKernel(
        title=title,
        rows="ROWS",
        cols="COLS",
        ins=(Operand("x"),),
        outs=(Operand("y"),),
        baseline=base,
        expert=fast,
        constants=constants,
    )


def softmax_kernel() -> RowKernel:
    """Y = softmax(x) along each row, max-subtracted."""

    def base(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            src, dst = p
            row_reduce_scalar(a, src, "vredmax", "f10", "-inf")
            each_strip(
                a, [src, dst], lambda s: a(f"vsubs {s[1]}, {s[0]}, f10", f"vexp {s[1]}, {s[1]}")
            )
            row_reduce_scalar(a, dst, "vredsum", "f11", "0.0")
            a("fdiv f12, f1, f11")
            each_strip(a, [dst], lambda s: a(f"vmuls {s[0]}, {s[0]}, f12"))

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    def fast(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            src, dst = p
            vector_accumulate(a, "T_0", "-inf")
            each_strip(a, [src], lambda s: a(f"vmax [r0 + T_0], [r0 + T_0], {s[0]}"))
            a("setvl r23", "vredmax f10, [r0 + T_0]")
            vector_accumulate(a, "T_1", "0.0")
            each_strip(
                a,
                [src, dst],
                lambda s: a(
                    f"vsubs {s[1]}, {s[0]}, f10",
                    f"vexp {s[1]}, {s[1]}",
                    f"vadd [r0 + T_1], [r0 + T_1], {s[1]}",
                ),
            )
            a("setvl r23", "vredsum f11, [r0 + T_1]", "fdiv f12, f1, f11")
            each_strip(a, [dst], lambda s: a(f"vmuls {s[0]}, {s[0]}, f12"))

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    return RowKernel(
        title="softmax over the rows of x (ROWS, COLS)",
        rows="ROWS",
        cols="COLS",
        ins=(Operand("x"),),
        outs=(Operand("y"),),
        baseline=base,
        expert=fast,
    )


def layernorm_kernel() -> RowKernel:
    """Y = (x - mean) / sqrt(var + EPS) * gamma + beta per row (biased variance)."""
    consts = {"f7": "1e-5", "f8": "1 / COLS"}

    def normalize(a: Asm, dst: str) -> None:
        each_strip(
            a,
            [dst, "VEC_0", "VEC_1"],
            lambda s: a(
                f"vmuls {s[0]}, {s[0]}, f12",
                f"vmul {s[0]}, {s[0]}, {s[1]}",
                f"vadd {s[0]}, {s[0]}, {s[2]}",
            ),
        )

    def base(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            src, dst = p
            row_reduce_scalar(a, src, "vredsum", "f10", "0.0")
            a("fmul f10, f10, f8")
            each_strip(a, [src, dst], lambda s: a(f"vsubs {s[1]}, {s[0]}, f10"))
            a("fli f11, 0.0")
            each_strip(
                a,
                [dst],
                lambda s: a(
                    f"vmul [r0 + T_0], {s[0]}, {s[0]}",
                    "vredsum f3, [r0 + T_0]",
                    "fadd f11, f11, f3",
                ),
            )
            a("fmul f11, f11, f8", "fadd f11, f11, f7", "fsqrt f11, f11", "fdiv f12, f1, f11")
            normalize(a, dst)

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    def fast(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            src, dst = p
            vector_accumulate(a, "T_0", "0.0")
            each_strip(a, [src], lambda s: a(f"vadd [r0 + T_0], [r0 + T_0], {s[0]}"))
            a("setvl r23", "vredsum f10, [r0 + T_0]", "fmul f10, f10, f8")
            vector_accumulate(a, "T_1", "0.0")
            each_strip(
                a,
                [src, dst],
                lambda s: a(f"vsubs {s[1]}, {s[0]}, f10", f"vfma [r0 + T_1], {s[1]}, {s[1]}"),
            )
            a("setvl r23", "vredsum f11, [r0 + T_1]")
            a("fmul f11, f11, f8", "fadd f11, f11, f7", "fsqrt f11, f11", "fdiv f12, f1, f11")
            normalize(a, dst)

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    return RowKernel(
        title="LayerNorm over the rows of x (ROWS, COLS) with gamma, beta (COLS)",
        rows="ROWS",
        cols="COLS",
        ins=(Operand("x"),),
        outs=(Operand("y"),),
        vectors=("gamma", "beta"),
        baseline=base,
        expert=fast,
        constants=consts,
    )


def rmsnorm_kernel(
    x: str = "x", w: str = "w", y: str = "y", rows: str = "ROWS", cols: str = "COLS"
) -> RowKernel:
    """Y = x / sqrt(mean(x^2) + EPS) * w per row."""
    consts = {"f7": "1e-5", "f8": f"1 / ({cols})"}

    def scale(a: Asm, src: str, dst: str) -> None:
        each_strip(
            a,
            [src, dst, "VEC_0"],
            lambda s: a(f"vmuls {s[1]}, {s[0]}, f12", f"vmul {s[1]}, {s[1]}, {s[2]}"),
        )

    def rstd(a: Asm) -> None:
        a("fmul f11, f11, f8", "fadd f11, f11, f7", "fsqrt f11, f11", "fdiv f12, f1, f11")

    def base(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            src, dst = p
            a("fli f11, 0.0")
            each_strip(
                a,
                [src],
                lambda s: a(
                    f"vmul [r0 + T_0], {s[0]}, {s[0]}",
                    "vredsum f3, [r0 + T_0]",
                    "fadd f11, f11, f3",
                ),
            )
            rstd(a)
            scale(a, src, dst)

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    def fast(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            src, dst = p
            vector_accumulate(a, "T_0", "0.0")
            each_strip(a, [src], lambda s: a(f"vfma [r0 + T_0], {s[0]}, {s[0]}"))
            a("setvl r23", "vredsum f11, [r0 + T_0]")
            rstd(a)
            scale(a, src, dst)

        each_row(a, block, [block.ins[0], block.outs[0]], row)

    return RowKernel(
        title="RMSNorm over the rows of x (ROWS, COLS) with weight w (COLS)",
        rows=rows,
        cols=cols,
        ins=(Operand(x),),
        outs=(Operand(y),),
        vectors=(w,),
        baseline=base,
        expert=fast,
        constants=consts,
    )


def rope_kernel(
    x: str = "x",
    cos: str = "cos",
    sin: str = "sin",
    y: str = "y",
    rows: str = "ROWS",
    cols: str = "COLS",
) -> RowKernel:
    """Rotate-half RoPE: y = [x1 cos - x2 sin, x2 cos + x1 sin] for x = [x1, x2] per row."""
    half = f"{cols} // 2"

    def base(a: Asm, block: Block) -> None:
        def row(p: list[str]) -> None:
            def strip(s: list[str]) -> None:
                x1, x2, c, sn, y1, y2 = s
                t = "[r0 + T_0]"
                a(f"vmul {y1}, {x1}, {c}", f"vmul {t}, {x2}, {sn}", f"vsub {y1}, {y1}, {t}")
                a(f"vmul {y2}, {x2}, {c}", f"vmul {t}, {x1}, {sn}", f"vadd {y2}, {y2}, {t}")

            each_strip(a, p, strip)

        each_row(a, block, [*block.ins, *block.outs], row)

    def fast(a: Asm, block: Block) -> None:
        def body(s: list[str]) -> None:
            x1, x2, c, sn, y1, y2 = s
            t = "[r0 + T_0]"
            a(f"vmul {y1}, {x1}, {c}", f"vmul {t}, {x2}, {sn}", f"vsub {y1}, {y1}, {t}")
            a(f"vmul {y2}, {x1}, {sn}", f"vfma {y2}, {x2}, {c}")

        flat(a, block, [*block.ins, *block.outs], body)

    return RowKernel(
        title="rotary embedding of x (ROWS, COLS) with cos, sin (ROWS, COLS / 2)",
        rows=rows,
        cols=half,
        ins=(
            Operand(x, stride=cols),
            Operand(x, offset=half, stride=cols),
            Operand(cos),
            Operand(sin),
        ),
        outs=(Operand(y, stride=cols), Operand(y, offset=half, stride=cols)),
        baseline=base,
        expert=fast,
    )


KERNELS: dict[str, Callable[[], RowKernel]] = {
    "rope": lambda: rope_kernel(),
    "relu": lambda: pointwise_kernel("ReLU of x (ROWS, COLS)", relu, {}),
    "silu": lambda: pointwise_kernel("SiLU of x (ROWS, COLS)", silu, {}),
    "gelu": lambda: pointwise_kernel("GELU (tanh form) of x (ROWS, COLS)", gelu, GELU_CONSTANTS),
    "softmax": softmax_kernel,
    "layernorm": layernorm_kernel,
    "rmsnorm": lambda: rmsnorm_kernel(),
}
