"""Row-wise kernels: elementwise activations and row reductions (softmax, norms, RoPE).

A row kernel streams matrices of `rows x cols` elements row by row through VSRAM. In SRAM each
row takes `CPV` words (cols rounded up to VLEN, so rows stay aligned and padding lanes are
zeros from the load).

- The **baseline** stream is what a simple compiler emits: one row at a time, load, wait,
  compute, store, wait. Its row computations reduce strip by strip into a scalar register
  (`vredsum` then `fadd`), which stalls the front end on every strip.
- The **expert** stream moves blocks of `RB` rows, double-buffered: the load of block k+1 and
  the store of block k-1 run while the vector unit computes block k. Its reductions accumulate
  whole vectors and reduce once per row, and it fuses passes.

Register conventions (both streams): r1 = 1, r20..r28 stream bookkeeping, r23 = cols,
r24 = HBM row stride in bytes, r25 = CPV, a8.. input cursors, a12.. output cursors; compute
code may use r10..r19, r29..r31, f3..f31 and the temporaries T_0..T_3 (VLEN words each).
f0 = 0.0, f1 = 1.0, f2 = -1.0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .asm import Asm


@dataclass(frozen=True)
class Operand:
    """A matrix streamed row by row: `rows` rows of `cols` elements from a region."""

    region: str
    offset: str = "0"
    """Element offset of row 0 (e.g. `HALF` for the second half of each row)."""
    stride: str = ""
    """Elements from one row to the next (default: the kernel's cols)."""


@dataclass(frozen=True)
class Block:
    """What a compute callback works on: buffers (VSRAM symbols) and the rows in them."""

    ins: tuple[str, ...]
    outs: tuple[str, ...]
    rows: str
    """Register holding how many rows the block has."""


Compute = Callable[[Asm, Block], None]


@dataclass(frozen=True)
class RowKernel:
    """A row kernel: what it streams, what it loads once, and how it computes."""

    title: str
    rows: str
    cols: str
    ins: tuple[Operand, ...]
    outs: tuple[Operand, ...]
    baseline: Compute
    expert: Compute
    vectors: tuple[str, ...] = ()
    """Regions of `cols` elements loaded once (weights, biases): VSRAM symbols VEC_0, VEC_1, ..."""
    constants: dict[str, str] = field(default_factory=dict)
    """fp32 registers set once: register -> immediate expression."""
    setup: Sequence[str] = ()
    """`.equ` lines (name, value) the kernel needs besides the stream's own."""


def _common(a: Asm, k: RowKernel) -> None:
    a.equ("CPV", f"cdiv({k.cols}, VLEN) * VLEN")
    for t in range(4):
        a.equ(f"T_{t}", f"{t} * VLEN")
    for i in range(len(k.vectors)):
        a.equ(f"VEC_{i}", f"4 * VLEN + {i} * CPV")
    a.equ("BUFS", f"4 * VLEN + {len(k.vectors)} * CPV")
    for line in k.setup:
        name, value = line.split(",", 1)
        a.equ(name.strip(), value.strip())
    a.blank()
    a("li r1, 1", f"li r23, {k.cols}", "li r25, CPV", "fli f1, 1.0", "fli f2, -1.0")
    for reg, value in k.constants.items():
        a(f"fli {reg}, {value}")
    for i, name in enumerate(k.vectors):
        a.comment(f"{name} is used by every row: load it once")
        a(
            f"la a4, {name}",
            f"dldv [r0 + VEC_{i}], [a4], r1, r23, r0, r25, 7",
        )
    if k.vectors:
        a("dwait 7")
    for i, op in enumerate(k.ins):
        a(f"la a{8 + i}, {op.region} + ({op.offset}) * itemsize")
    for j, op in enumerate(k.outs):
        a(f"la a{12 + j}, {op.region} + ({op.offset}) * itemsize")


def _stride(k: RowKernel, op: Operand) -> str:
    return f"({op.stride or k.cols}) * itemsize"


def _strides_uniform(k: RowKernel) -> bool:
    return len({_stride(k, op) for op in (*k.ins, *k.outs)}) == 1


def baseline(k: RowKernel) -> str:
    """One row at a time: load, wait, compute, store, wait."""
    a = Asm(k.title, "baseline: one row at a time")
    _common(a, k)
    for i in range(len(k.ins)):
        a.equ(f"IN_{i}", f"BUFS + {i} * CPV")
    for j in range(len(k.outs)):
        a.equ(f"OUT_{j}", f"BUFS + {len(k.ins) + j} * CPV")
    block = Block(
        ins=tuple(f"IN_{i}" for i in range(len(k.ins))),
        outs=tuple(f"OUT_{j}" for j in range(len(k.outs))),
        rows="r1",
    )
    with a.loop(k.rows):
        for i, op in enumerate(k.ins):
            a(f"li r24, {_stride(k, op)}", f"dldv [r0 + IN_{i}], [a{8 + i}], r1, r23, r24, r25, 0")
        a("dwait 0")
        k.baseline(a, block)
        for j, op in enumerate(k.outs):
            a(
                f"li r24, {_stride(k, op)}",
                f"dstv [a{12 + j}], [r0 + OUT_{j}], r1, r23, r24, r25, 1",
            )
        a("dwait 1")
        for i, op in enumerate(k.ins):
            a(f"addai a{8 + i}, a{8 + i}, {_stride(k, op)}")
        for j, op in enumerate(k.outs):
            a(f"addai a{12 + j}, a{12 + j}, {_stride(k, op)}")
    return a.text()


def expert(k: RowKernel) -> str:
    """Blocks of RB rows, double-buffered: load k+1 and store k-1 while computing k."""
    a = Asm(k.title, "expert: double-buffered row blocks")
    _common(a, k)
    buffers = len(k.ins) + len(k.outs)
    a.comment("rows per block: a share of the rows (so blocks overlap) that fit twice; the")
    a.comment("share is a knob of the autotune agent (task.toml's [autotune])")
    a.equ("RB_SPLIT", "4")
    a.equ(
        "RB",
        f"max(1, min(cdiv({k.rows}, RB_SPLIT), (VSRAM_WORDS - BUFS) // (2 * {buffers} * CPV)))",
    )
    a.equ("NB", f"cdiv({k.rows}, RB)")
    for side, base in (("A", 0), ("B", 1)):
        for i in range(len(k.ins)):
            a.equ(f"IN_{i}_{side}", f"BUFS + ({base * buffers + i}) * RB * CPV")
        for j in range(len(k.outs)):
            a.equ(f"OUT_{j}_{side}", f"BUFS + ({base * buffers + len(k.ins) + j}) * RB * CPV")
    stride = _stride(k, k.ins[0])
    a(f"li r24, {stride}", f"li r20, {k.rows}", "li r21, RB")
    a.comment("first block")
    a("min r27, r20, r21")
    _transfer(a, k, "load", "A", "r27", 0)
    with a.loop("NB // 2"):
        _step(a, k, "A", "B")
        _step(a, k, "B", "A")
    with a.loop("NB % 2"):
        _step(a, k, "A", "B")
    a("dfence")
    return a.text()


def _transfer(a: Asm, k: RowKernel, kind: str, side: str, rows: str, tag: int) -> None:
    """Load (or store) a block of `rows` rows of every input (output); advance the cursors."""
    ops = k.ins if kind == "load" else k.outs
    names = [f"IN_{i}" if kind == "load" else f"OUT_{i}" for i in range(len(ops))]
    cursors = [f"a{(8 if kind == 'load' else 12) + i}" for i in range(len(ops))]
    uniform = _strides_uniform(k)
    for op, name, cursor in zip(ops, names, cursors, strict=True):
        if not uniform:
            a(f"li r24, {_stride(k, op)}")
        if kind == "load":
            a(f"dldv [r0 + {name}_{side}], [{cursor}], {rows}, r23, r24, r25, {tag}")
        else:
            a(f"dstv [{cursor}], [r0 + {name}_{side}], {rows}, r23, r24, r25, {tag}")
        if not uniform:
            a(f"mul r28, {rows}, r24", f"adda {cursor}, {cursor}, r28")
    if uniform:
        a(f"mul r28, {rows}, r24")
        for cursor in cursors:
            a(f"adda {cursor}, {cursor}, r28")


_LOAD_TAG = {"A": 0, "B": 1}
_STORE_TAG = {"A": 2, "B": 3}


def _step(a: Asm, k: RowKernel, cur: str, nxt: str) -> None:
    skip = a.label("computed")
    a.comment(f"block in buffers {cur}: prefetch the next block into {nxt} first")
    a("min r22, r20, r21", "sub r26, r20, r22", f"beq r26, r0, {skip}", "min r27, r26, r21")
    _transfer(a, k, "load", nxt, "r27", _LOAD_TAG[nxt])
    a.place(skip)
    a(f"dwait {_LOAD_TAG[cur]}", f"dwait {_STORE_TAG[cur]}")
    block = Block(
        ins=tuple(f"IN_{i}_{cur}" for i in range(len(k.ins))),
        outs=tuple(f"OUT_{j}_{cur}" for j in range(len(k.outs))),
        rows="r22",
    )
    k.expert(a, block)
    _transfer(a, k, "store", cur, "r22", _STORE_TAG[cur])
    a("mov r20, r26")


# -- loops inside a block -------------------------------------------------------------------------

Body = Callable[[list[str]], None]


def each_row(a: Asm, block: Block, starts: Sequence[str], body: Body) -> None:
    """Loop over the block's rows with one pointer register per buffer (r16..)."""
    regs = [f"r{16 + i}" for i in range(len(starts))]
    for reg, start in zip(regs, starts, strict=True):
        a(f"li {reg}, {start}")
    with a.loop(block.rows):
        body(regs)
        for reg in regs:
            a(f"addi {reg}, {reg}, CPV")


def each_strip(a: Asm, rows: Sequence[str], body: Body, cols: str = "r23") -> None:
    """Strip-mine one row of `cols` elements: VL = the rest, capped at VLEN (pointers r11..)."""
    regs = [f"r{11 + i}" for i in range(len(rows))]
    a(f"mov r10, {cols}", "addi r9, r10, VLEN - 1", "divi r9, r9, VLEN")
    for reg, row in zip(regs, rows, strict=True):
        a(f"mov {reg}, {row}" if _is_register(row) else f"li {reg}, {row}")
    with a.loop("r9"):
        a("setvl r10")
        body([f"[{r}]" for r in regs])
        for reg in regs:
            a(f"addi {reg}, {reg}, VLEN")
        a("addi r10, r10, -VLEN")


def _is_register(text: str) -> bool:
    return text.startswith("r") and text[1:].isdigit()


def flat(a: Asm, block: Block, starts: Sequence[str], body: Body) -> None:
    """Every word of the block's rows (padding included), VLEN at a time, without setvl."""
    regs = [f"r{11 + i}" for i in range(len(starts))]
    a(f"mul r10, {block.rows}, r25", "divi r10, r10, VLEN")
    for reg, start in zip(regs, starts, strict=True):
        a(f"li {reg}, {start}")
    with a.loop("r10"):
        body([f"[{r}]" for r in regs])
        for reg in regs:
            a(f"addi {reg}, {reg}, VLEN")


def row_reduce_scalar(a: Asm, row: str, op: str, into: str, init: str, cols: str = "r23") -> None:
    """Baseline reduction: reduce each strip to a scalar and combine on the front end."""
    combine = {"vredsum": "fadd", "vredmax": "fmax"}[op]
    a(f"fli {into}, {init}")

    def body(p: list[str]) -> None:
        a(f"{op} f3, {p[0]}", f"{combine} {into}, {into}, f3")

    each_strip(a, [row], body, cols)


def vector_accumulate(a: Asm, acc: str, init: str, cols: str = "r23") -> None:
    """Start a VLEN-lane accumulator (`vbcast`), VL = min(cols, VLEN) for every later use."""
    a(f"setvl {cols}", f"fli f4, {init}", f"vbcast [r0 + {acc}], f4")
