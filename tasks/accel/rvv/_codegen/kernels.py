"""The rvv kernels: a compiler baseline and an expert program per task, as routines.

Baselines are what a simple vectorizing compiler emits: loops in source order, one vector
register per strip (LMUL 1), every load waited for before it is used, reductions per strip.
Experts use the machine: long register groups (LMUL 4 or 8) for fewer instructions, software
pipelining (the next strip or row loads into other registers while this one computes), rows kept
in registers between passes, vector accumulators reduced once, and register blocking in the
matrix products (one row of B serves four rows of A).

Register conventions: `p0`.. are the contract's regions (calling convention), `p8`.. working
pointers; `s20`.. loop counters, `s30` a strip's byte count, `s31` an assembly-time condition;
`f0` is 0.0 (never written), `f20` -inf, `f21` 1.0, `f22` 1 / COLS, `f23` EPS.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .asm import Asm

#: Added to the variance (LayerNorm) and the mean square (RMSNorm).
EPS = 1e-5
#: GELU, tanh form: 0.5 x (1 + tanh(K (x + 0.044715 x^3))).
GELU_K = math.sqrt(2.0 / math.pi)
GELU_K3 = GELU_K * 0.044715

#: dst <- f(srcs) with `tmp` free (dst may be tmp); registers as text.
Op = Callable[[Asm, str, list[str], str], None]


def constants(a: Asm, rows: bool = True) -> None:
    """The fp32 constants the kernels use (`rows`: also 1 / COLS, for row kernels)."""
    a("f.set f20, -inf", "f.set f21, 1.0", f"f.set f23, {EPS!r}")
    a("f.set f24, -1.0", "f.set f25, 0.5", f"f.set f26, {GELU_K!r}", f"f.set f27, {GELU_K3!r}")
    if rows:
        a("f.set f22, 1 / COLS")


def relu(a: Asm, d: str, s: list[str], t: str) -> None:
    """ReLU: max(x, 0)."""
    a(f"v.maxf {d}, {s[0]}, f0")


def silu(a: Asm, d: str, s: list[str], t: str) -> None:
    """SiLU, x / (1 + exp(-x)): exp overflow gives 1 / inf = 0, the right limit."""
    a(f"v.mulf {t}, {s[0]}, f24", f"v.exp {t}, {t}", f"v.addf {t}, {t}, f21")
    a(f"v.rcp {t}, {t}", f"v.mul {d}, {s[0]}, {t}")


def gelu(a: Asm, d: str, s: list[str], t: str) -> None:
    """0.5 x (1 + tanh(x (K + K3 x^2)))."""
    x = s[0]
    a(f"v.mul {t}, {x}, {x}", f"v.mulf {t}, {t}, f27", f"v.addf {t}, {t}, f26")
    a(f"v.mul {t}, {t}, {x}", f"v.tanh {t}, {t}", f"v.addf {t}, {t}, f21")
    a(f"v.mul {t}, {t}, {x}", f"v.mulf {d}, {t}, f25")


def swiglu(a: Asm, d: str, s: list[str], t: str) -> None:
    """silu(gate) * up."""
    silu(a, t, s[:1], t)
    a(f"v.mul {d}, {t}, {s[1]}")


def identity(a: Asm, d: str, s: list[str], t: str) -> None:
    """No activation: a copy."""
    a(f"v.mov {d}, {s[0]}")


ACTIVATIONS: dict[str, Op] = {"relu": relu, "gelu": gelu, "silu": silu, "none": identity}


def _group(lmul: int, index: int) -> str:
    return f"v{lmul * index}"


# -- elementwise ------------------------------------------------------------------------------


def elementwise_baseline(title: str, ins: int, op: Op) -> str:
    """One row at a time, one register per strip: load, compute, store, in order."""
    a = Asm(title, "baseline: row by row, LMUL 1")
    constants(a)
    pointers = [f"p{8 + i}" for i in range(ins)] + ["p12"]
    a(*(f"p.mov p{8 + i}, p{i}" for i in range(ins)), f"p.mov p12, p{ins}")
    with a.loop("s20", "ROWS"), a.strips("s21", "s22", "COLS", "m1", pointers):
        a(*(f"ld.v v{1 + i}, [p{8 + i}]" for i in range(ins)))
        op(a, "v9", [f"v{1 + i}" for i in range(ins)], "v9")
        a("st.v [p12], v9")
    return a.text()


def elementwise_expert(title: str, ins: int, op: Op) -> str:
    """All ROWS * COLS elements as one vector, long strips, two buffers in flight."""
    groups = ins + 1
    lmul = 8 if 2 * groups <= 4 else 4
    a = Asm(title, f"expert: flat, LMUL {lmul}, software-pipelined")
    constants(a)
    buffers = [[_group(lmul, b * groups + g) for g in range(groups)] for b in range(2)]
    a(*(f"p.mov p{8 + i}, p{i}" for i in range(ins)), f"p.mov p12, p{ins}")
    loads = [f"p{8 + i}" for i in range(ins)]

    def load(buffer: list[str], vl: str) -> None:
        a(f"v.cfg {vl}, s10, m{lmul}")
        a(*(f"ld.v {buffer[i]}, [{p}]" for i, p in enumerate(loads)))
        a(f"s.shlk s30, {vl}, SH", *(f"p.add {p}, {p}, s30" for p in loads))
        a(f"s.sub s10, s10, {vl}")

    def finish(buffer: list[str], vl: str) -> None:
        a(f"v.cfg s0, {vl}, m{lmul}")
        op(a, buffer[-1], buffer[:-1], buffer[-1])
        a(f"st.v [p12], {buffer[-1]}", f"s.shlk s30, {vl}, SH", "p.add p12, p12, s30")
        a(f"s.sub s11, s11, {vl}")

    _pipeline(a, "ROWS * COLS", buffers, load, finish)
    return a.text()


def _pipeline(
    a: Asm,
    total: str,
    buffers: list[list[str]],
    load: Callable[[list[str], str], None],
    finish: Callable[[list[str], str], None],
) -> None:
    """Two buffers: while one computes and stores, the other loads the next unit.

    `s10` counts what is left to load, `s11` what is left to finish; `s12` and `s13` hold each
    buffer's vector length (or unit count).
    """
    top, done = a.label("pipe"), a.label("piped")
    skip_b, skip_a = a.label("noload"), a.label("noload")
    a(f"s.set s10, {total}", f"s.set s11, {total}")
    load(buffers[0], "s12")
    a.place(top)
    a(f"j.eq s10, s0, {skip_b}")
    load(buffers[1], "s13")
    a.place(skip_b)
    finish(buffers[0], "s12")
    a(f"j.eq s11, s0, {done}", f"j.eq s10, s0, {skip_a}")
    load(buffers[0], "s12")
    a.place(skip_a)
    finish(buffers[1], "s13")
    a(f"j.ne s11, s0, {top}")
    a.place(done)


# -- row reductions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rows:
    """A row kernel: x (ROWS, COLS) with per-column vectors -> y (ROWS, COLS)."""

    title: str
    vectors: int
    """Per-column input vectors after x (gamma, beta; w)."""
    fast: Callable[[Asm, str, str, str, list[str]], None]
    """Compute one row held in registers: (x, work, scratch, column vectors) -> y in work."""
    passes: Callable[[Asm, str, list[str], str], None]
    """Strip-mined passes over one row at LMUL `lmul`: (lmul, column-vector pointers, COLS)."""
    fast_lmul: int


def row_baseline(
    a: Asm, rows: Rows, x: str, y: str, vectors: list[str], n: str = "ROWS", cols: str = "COLS"
) -> None:
    """Row by row, every pass strip-mined at LMUL 1 with a reduction per strip.

    `n` rows of `cols` elements (symbols; the block tasks run row kernels of several widths).
    """
    a(f"p.mov p8, {x}", f"p.mov p9, {y}")
    with a.loop("s20", n):
        rows.passes(a, "m1", vectors, cols)
        a(f"p.addk p8, p8, {cols} * itemsize", f"p.addk p9, p9, {cols} * itemsize")


def row_expert(
    a: Asm, rows: Rows, x: str, y: str, vectors: list[str], n: str = "ROWS", cols: str = "COLS"
) -> None:
    """Rows that fit in one register group stay there, two rows in flight; else long strips."""
    lmul = rows.fast_lmul
    big, end = a.label("long_rows"), a.label("rows_done")
    a(f"s.set s31, 1 if {cols} <= {lmul} * VLEN else 0", f"j.eq s31, s0, {big}")
    a(f"v.cfgk s0, {cols}, m{lmul}")
    # Column vectors live in the last groups for the whole run.
    held = [_group(lmul, 32 // lmul - 1 - i) for i in range(len(vectors))]
    a(*(f"ld.v {v}, [{p}]" for v, p in zip(held, vectors, strict=True)))
    a(f"p.mov p8, {x}", f"p.mov p9, {y}")
    # Buffers: x, work (and scratch at LMUL 4) per row in flight.
    per = 3 if lmul == 4 else 2
    buffers = [[_group(lmul, b * per + g) for g in range(per)] for b in range(2)]

    def load(buffer: list[str], unit: str) -> None:
        a(f"ld.v {buffer[0]}, [p8]", f"p.addk p8, p8, {cols} * itemsize", "s.addk s10, s10, -1")

    def finish(buffer: list[str], unit: str) -> None:
        rows.fast(a, buffer[0], buffer[1], buffer[-1], held)
        a(f"st.v [p9], {buffer[1]}", f"p.addk p9, p9, {cols} * itemsize", "s.addk s11, s11, -1")

    _pipeline(a, n, buffers, load, finish)
    a(f"j.go {end}")
    a.place(big)
    a(f"p.mov p8, {x}", f"p.mov p9, {y}")
    with a.loop("s20", n):
        rows.passes(a, "m8", vectors, cols)
        a(f"p.addk p8, p8, {cols} * itemsize", f"p.addk p9, p9, {cols} * itemsize")
    a.place(end)


def _softmax_fast(a: Asm, x: str, w: str, scratch: str, vectors: list[str]) -> None:
    a(f"v.rmax f1, {x}", f"v.subf {w}, {x}, f1", f"v.exp {w}, {w}", f"v.rsum f2, {w}")
    a("f.div f3, f21, f2", f"v.mulf {w}, {w}, f3")


def _softmax_passes(a: Asm, lmul: str, vectors: list[str], cols: str = "COLS") -> None:
    a("f.mov f1, f20", "p.mov p10, p8")
    with a.strips("s21", "s22", cols, lmul, ["p10"]):
        a("ld.v v1, [p10]", "v.rmax f2, v1", "f.max f1, f1, f2")
    a("f.set f3, 0.0", "p.mov p10, p8", "p.mov p11, p9")
    with a.strips("s21", "s22", cols, lmul, ["p10", "p11"]):
        a("ld.v v8, [p10]", "v.subf v8, v8, f1", "v.exp v8, v8", "v.rsum f2, v8")
        a("f.add f3, f3, f2", "st.v [p11], v8")
    a("f.div f4, f21, f3", "p.mov p11, p9")
    with a.strips("s21", "s22", cols, lmul, ["p11"]):
        a("ld.v v16, [p11]", "v.mulf v16, v16, f4", "st.v [p11], v16")


SOFTMAX = Rows("softmax over the rows of x (ROWS, COLS)", 0, _softmax_fast, _softmax_passes, 8)


def _rstd(a: Asm) -> None:
    """f3 <- 1 / sqrt(f2 / COLS + EPS)."""
    a("f.mul f2, f2, f22", "f.add f2, f2, f23", "f.sqrt f2, f2", "f.div f3, f21, f2")


def _layernorm_fast(a: Asm, x: str, w: str, q: str, vectors: list[str]) -> None:
    gamma, beta = vectors
    a(f"v.rsum f1, {x}", "f.mul f1, f1, f22", f"v.subf {w}, {x}, f1", f"v.mul {q}, {w}, {w}")
    a(f"v.rsum f2, {q}")
    _rstd(a)
    a(f"v.mulf {w}, {w}, f3", f"v.mul {w}, {w}, {gamma}", f"v.add {w}, {w}, {beta}")


def _layernorm_passes(a: Asm, lmul: str, vectors: list[str], cols: str = "COLS") -> None:
    gamma, beta = vectors
    a("f.set f1, 0.0", "p.mov p10, p8")
    with a.strips("s21", "s22", cols, lmul, ["p10"]):
        a("ld.v v8, [p10]", "v.rsum f2, v8", "f.add f1, f1, f2")
    a("f.mul f1, f1, f22", "f.set f2, 0.0", "p.mov p10, p8")
    with a.strips("s21", "s22", cols, lmul, ["p10"]):
        a("ld.v v8, [p10]", "v.subf v8, v8, f1", "v.mul v8, v8, v8", "v.rsum f4, v8")
        a("f.add f2, f2, f4")
    _rstd(a)
    a("p.mov p10, p8", "p.mov p11, p9", f"p.mov p12, {gamma}", f"p.mov p13, {beta}")
    with a.strips("s21", "s22", cols, lmul, ["p10", "p11", "p12", "p13"]):
        a("ld.v v8, [p10]", "ld.v v16, [p12]", "ld.v v24, [p13]")
        a("v.subf v8, v8, f1", "v.mulf v8, v8, f3", "v.mul v8, v8, v16", "v.add v8, v8, v24")
        a("st.v [p11], v8")


LAYERNORM = Rows(
    "LayerNorm over the rows of x (ROWS, COLS) with gamma, beta (COLS)",
    2,
    _layernorm_fast,
    _layernorm_passes,
    4,
)


def _rmsnorm_fast(a: Asm, x: str, w: str, q: str, vectors: list[str]) -> None:
    a(f"v.mul {w}, {x}, {x}", f"v.rsum f2, {w}")
    _rstd(a)
    a(f"v.mulf {w}, {x}, f3", f"v.mul {w}, {w}, {vectors[0]}")


def _rmsnorm_passes(a: Asm, lmul: str, vectors: list[str], cols: str = "COLS") -> None:
    a("f.set f2, 0.0", "p.mov p10, p8")
    with a.strips("s21", "s22", cols, lmul, ["p10"]):
        a("ld.v v8, [p10]", "v.mul v8, v8, v8", "v.rsum f4, v8", "f.add f2, f2, f4")
    _rstd(a)
    a("p.mov p10, p8", "p.mov p11, p9", f"p.mov p12, {vectors[0]}")
    with a.strips("s21", "s22", cols, lmul, ["p10", "p11", "p12"]):
        a("ld.v v8, [p10]", "ld.v v16, [p12]", "v.mulf v8, v8, f3", "v.mul v8, v8, v16")
        a("st.v [p11], v8")


RMSNORM = Rows(
    "RMSNorm over the rows of x (ROWS, COLS) with weight w (COLS)",
    1,
    _rmsnorm_fast,
    _rmsnorm_passes,
    4,
)


# -- matrix products --------------------------------------------------------------------------


@dataclass(frozen=True)
class Gemm:
    """C (M, N) = act(A (M, K) @ B (K, N) [+ bias (N)]), regions in pointer registers."""

    a: str
    b: str
    c: str
    bias: str | None = None
    m: str = "M"
    k: str = "K"
    n: str = "N"
    activation: str = "none"
    a_size: str = "itemsize"
    """Bytes per element of A (the FFN's hidden activations are fp32 whatever the dtype)."""
    c_size: str = "itemsize"
    """Bytes per element of C."""
    lda: str | None = None
    """Row stride of A in elements (default K); B's (default N) and C's (default N) below."""
    ldb: str | None = None
    ldc: str | None = None
    residual: str | None = None
    """Byte offset from C of a matrix (C's layout) the product is added to (a residual)."""
    gate: str | None = None
    """Byte offset from C of a matrix (C's layout) the activated result is multiplied by."""

    @property
    def sa(self) -> str:
        return self.lda or self.k

    @property
    def sb(self) -> str:
        return self.ldb or self.n

    @property
    def sc(self) -> str:
        return self.ldc or self.n


def gemm_baseline(a: Asm, g: Gemm) -> None:
    """Row by row, strips of one register, the k loop with a scalar load of A each step."""
    act = ACTIVATIONS[g.activation]
    a(f"p.mov p8, {g.a}", f"p.mov p9, {g.c}")
    with a.loop("s20", g.m):
        a(f"p.mov p10, {g.b}", "p.mov p11, p9")
        strip_pointers = ["p10", "p11"]
        if g.bias:
            a(f"p.mov p14, {g.bias}")
            strip_pointers.append("p14")
        with a.strips("s21", "s22", g.n, "m1", strip_pointers, wide=_wide(g)):
            if g.residual:
                a(f"ld.v v8, [p11 + {g.residual}]", "p.mov p12, p8", "p.mov p13, p10")
            else:
                a(
                    "ld.v v8, [p14]" if g.bias else "v.splat v8, f0",
                    "p.mov p12, p8",
                    "p.mov p13, p10",
                )
            with a.loop("s23", g.k):
                a("ld.f f1, [p12]", "ld.v v1, [p13]", "v.fmaf v8, v1, f1")
                a(f"p.addk p12, p12, {g.a_size}", f"p.addk p13, p13, {g.sb} * itemsize")
            if g.activation == "none":
                out = "v8"
            else:
                act(a, "v9", ["v8"], "v9")
                out = "v9"
            if g.gate:
                a(f"ld.v v10, [p11 + {g.gate}]", f"v.mul v9, {out}, v10")
                out = "v9"
            a(f"st.v [p11], {out}")
        a(f"p.addk p8, p8, {g.sa} * {g.a_size}", f"p.addk p9, p9, {g.sc} * {g.c_size}")


def _wide(g: Gemm) -> list[str]:
    """C's strip pointer when C is fp32 whatever the dtype (it advances VL * 4 bytes)."""
    return ["p11"] if g.c_size == "4" else []


def gemm_expert(a: Asm, g: Gemm) -> None:
    """Four rows of A per block share each strip of B (LMUL 4), k unrolled by two.

    While one strip of B multiplies, the next loads into the other buffer.
    """
    act = ACTIVATIONS[g.activation]
    a(f"p.mov p8, {g.a}", f"p.mov p9, {g.c}")
    for rows, count in ((4, f"{g.m} // 4"), (1, f"{g.m} % 4")):
        accs = [f"v{8 + 4 * r}" for r in range(rows)]
        with a.loop("s20", count):
            a(f"p.mov p10, {g.b}", "p.mov p11, p9")
            strip_pointers = ["p10", "p11"]
            if g.bias:
                a(f"p.mov p14, {g.bias}")
                strip_pointers.append("p14")
            with a.strips("s21", "s22", g.n, "m4", strip_pointers, wide=_wide(g)):
                for r, acc in enumerate(accs):
                    if g.residual:
                        a(f"ld.v {acc}, [p11 + {g.residual} + {r} * {g.sc} * {g.c_size}]")
                    else:
                        a(f"ld.v {acc}, [p14]" if g.bias else f"v.splat {acc}, f0")
                a("p.mov p12, p8", "p.mov p13, p10")

                def step(buffer: str, fregs: list[str], ahead: int) -> None:
                    a(f"ld.v {buffer}, [p13 + {ahead} * {g.sb} * itemsize]")
                    a(
                        *(
                            f"ld.f {f}, [p12 + ({r} * {g.sa} + {ahead}) * {g.a_size}]"
                            for r, f in enumerate(fregs)
                        )
                    )

                def fma(buffer: str, fregs: list[str], accs: list[str] = accs) -> None:
                    a(*(f"v.fmaf {acc}, {buffer}, {f}" for acc, f in zip(accs, fregs, strict=True)))

                first = [f"f{1 + r}" for r in range(rows)]
                second = [f"f{5 + r}" for r in range(rows)]
                with a.loop("s23", f"{g.k} // 2"):
                    step("v0", first, 0)
                    step("v4", second, 1)
                    fma("v0", first)
                    fma("v4", second)
                    a(f"p.addk p12, p12, 2 * {g.a_size}", f"p.addk p13, p13, 2 * {g.sb} * itemsize")
                with a.when(f"{g.k} % 2"):
                    step("v0", first, 0)
                    fma("v0", first)
                for r, acc in enumerate(accs):
                    out = acc
                    if g.activation != "none":
                        act(a, "v28", [acc], "v28")
                        out = "v28"
                    if g.gate:
                        a(f"ld.v v24, [p11 + {g.gate} + {r} * {g.sc} * {g.c_size}]")
                        a(f"v.mul v28, {out}, v24")
                        out = "v28"
                    a(f"st.v [p11 + {r} * {g.sc} * {g.c_size}], {out}")
            a(f"p.addk p8, p8, {rows} * {g.sa} * {g.a_size}")
            a(f"p.addk p9, p9, {rows} * {g.sc} * {g.c_size}")


def gemv_baseline(
    a: Asm, w: str, x: str, y: str, m: str, k: str, scale: str = "", ld: str = ""
) -> None:
    """y[i] = dot(W[i], x) row by row: per strip a multiply and a reduction to a scalar."""
    a(f"p.mov p8, {w}", f"p.mov p9, {y}")
    with a.loop("s20", m):
        a("f.set f1, 0.0", "p.mov p10, p8", f"p.mov p11, {x}")
        with a.strips("s21", "s22", k, "m1", ["p10", "p11"]):
            a("ld.v v1, [p10]", "ld.v v2, [p11]", "v.mul v3, v1, v2", "v.rsum f2, v3")
            a("f.add f1, f1, f2")
        if scale:
            a(f"f.mul f1, f1, {scale}")
        a("st.f [p9], f1", f"p.addk p8, p8, {ld or k} * itemsize", "p.addk p9, p9, itemsize")


def gemv_expert(
    a: Asm, w: str, x: str, y: str, m: str, k: str, scale: str = "", ld: str = ""
) -> None:
    """Four rows per block share each strip of x; vector accumulators, one reduction per row."""
    a(f"p.mov p8, {w}", f"p.mov p9, {y}")
    for rows, count in ((4, f"{m} // 4"), (1, f"{m} % 4")):
        accs = [f"v{10 + 2 * r}" for r in range(rows)]
        ws = [f"v{2 + 2 * r}" for r in range(rows)]
        with a.loop("s20", count):
            a("v.cfgk s0, 2 * VLEN, m2", *(f"v.splat {acc}, f0" for acc in accs))
            a(*(f"p.addk p{10 + r}, p8, {r} * {ld or k} * itemsize" for r in range(rows)))
            a(f"p.mov p14, {x}")
            pointers = [f"p{10 + r}" for r in range(rows)] + ["p14"]
            with a.strips("s21", "s22", k, "m2", pointers):
                a("ld.v v0, [p14]", *(f"ld.v {v}, [p{10 + r}]" for r, v in enumerate(ws)))
                a(*(f"v.fma {acc}, {v}, v0" for acc, v in zip(accs, ws, strict=True)))
            a(f"v.cfgk s0, {k}, m2")
            for r, acc in enumerate(accs):
                a(f"v.rsum f{1 + r}, {acc}")
                if scale:
                    a(f"f.mul f{1 + r}, f{1 + r}, {scale}")
                a(f"st.f [p9 + {r} * itemsize], f{1 + r}")
            a(f"p.addk p8, p8, {rows} * {ld or k} * itemsize", f"p.addk p9, p9, {rows} * itemsize")
