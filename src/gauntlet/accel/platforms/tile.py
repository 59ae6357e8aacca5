"""The `tile` platform: a spatial array of compute tiles with local memories and a mesh.

A GRID_ROWS x GRID_COLS array of tiles, each with a scalar front end, a vector unit of VLEN
elements (LANES per cycle), a matrix unit multiplying MLEN-row panels, a small local memory
(LMEM) and two engines: a DMA engine to the external memory shared by the whole array (through
its column's shim link), and a stream engine that sends words into another tile's local memory
over the mesh of neighbour links, posting one of that tile's semaphores. Every tile runs the same
program with its place in registers; semaphores (`wait`, `signal`) order the tiles, and the
simulator reports deadlocks and unordered accesses as faults naming the tile and instruction.

The instruction table (`_instructions`) is the single definition of the ISA: the assembler, the
disassembler, the simulator and the manual are all derived from it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gauntlet.accel import control, semantics
from gauntlet.accel.array import Post, TileMachine
from gauntlet.accel.assembler import Decoded
from gauntlet.accel.isa import (
    ISA,
    FImm,
    Group,
    Imm,
    Instruction,
    Label,
    Mem,
    Reg,
    RegisterFile,
    Step,
    formula_function,
)
from gauntlet.accel.isa import Field as F
from gauntlet.accel.machine import Machine, Transfer, bursts_touched, strided
from gauntlet.accel.platform import Platform, Space, Unit, platform

F64 = np.float64
INT_MIN, INT_MAX = semantics.INT_MIN, semantics.INT_MAX

#: Cycles a transfer holds the external memory (shared by every column).
EXT_COST = "cdiv(bursts * burst_bytes, ext_bytes_per_cycle)"


class TileParams(BaseModel):
    """Hardware parameters of the tile array; defaults in `tile.toml`, overridable per config."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    grid_rows: int = Field(ge=1, le=8)
    """Rows of tiles; row 0 is nearest the external memory."""
    grid_cols: int = Field(ge=1, le=8)
    """Columns of tiles; each column has its own shim link to the external memory."""
    lmem_words: int = Field(ge=256, le=1 << 20)
    """Local memory of each tile, in fp32 words."""
    vlen: int = Field(ge=4, le=1024)
    """The most elements one vector instruction processes (a power of two)."""
    lanes: int = Field(ge=1, le=1024)
    """Elements the vector unit processes per cycle (at most VLEN)."""
    mlen: int = Field(ge=2, le=64)
    """Rows and columns of the matrix unit's output panel (MLEN x MLEN)."""
    macs_per_cycle: int = Field(ge=1)
    """Multiply-accumulates the matrix unit retires per cycle."""
    queue_depth: int = Field(ge=1, le=64)
    """Instructions the vector and matrix units each queue before the front end stalls."""
    dma_queue_depth: int = Field(ge=1, le=64)
    """Transfers the DMA and stream engines each queue before the front end stalls."""
    dma_tags: int = Field(ge=1, le=64)
    """Completion groups of a tile's DMA transfers and sends (`dwait` waits for one)."""
    dma_outstanding: int = Field(ge=1, le=1024)
    """Transfers and sends a tile may have issued and not waited for; one more first waits for
    the oldest (and retires it)."""
    semaphores: int = Field(ge=1, le=64)
    """Semaphores of each tile (`wait`, `signal`, and the posts of incoming sends)."""
    loop_depth: int = Field(ge=1, le=16)
    """Deepest nesting of hardware loops."""
    ext_bytes: int = Field(ge=1 << 20)
    """External memory capacity in bytes; the memory contract must fit below it."""
    ext_bytes_per_cycle: int = Field(ge=1)
    """Bandwidth of the external memory, shared by every tile of the array."""
    shim_bytes_per_cycle: int = Field(ge=1)
    """Bandwidth of each column's link to the external memory, shared by that column's tiles."""
    ext_latency: int = Field(ge=0)
    """Cycles from the end of a transfer until its data has landed, before the hops up the
    column."""
    dma_setup: int = Field(ge=0)
    """Cycles the DMA engine spends on each transfer's descriptor."""
    burst_bytes: int = Field(ge=4)
    """External-memory access granularity: each row of a transfer moves every burst it
    touches, whole."""
    link_bytes_per_cycle: int = Field(ge=1)
    """Bandwidth of each mesh link between neighbouring tiles."""
    hop_latency: int = Field(ge=0)
    """Cycles a word or a post takes per mesh hop (and per row up from the shim)."""
    stream_setup: int = Field(ge=0)
    """Cycles the stream engine spends on each send's descriptor."""
    clock_ghz: float = Field(gt=0)
    """Clock frequency, to convert cycles to time."""
    branch_penalty: int = Field(ge=0)
    """Extra front-end cycles after a taken branch."""
    special_cycles: int = Field(ge=1)
    """Cycles per group of LANES elements of exp, tanh, reciprocal and rsqrt."""
    reduce_cycles: int = Field(ge=0)
    """Cycles a reduction adds to its adder tree."""

    @model_validator(mode="after")
    def _sizes(self) -> TileParams:
        for name in ("vlen", "lanes"):
            value = getattr(self, name)
            if value & (value - 1):
                raise ValueError(f"{name}={value} must be a power of two")
        if self.lanes > self.vlen:
            raise ValueError(f"lanes={self.lanes} must be at most vlen={self.vlen}")
        return self


# -- register files ----------------------------------------------------------------------------


def _register_files() -> dict[str, RegisterFile]:
    return {
        "r": RegisterFile("r", "r", 32, "int", "integer registers", bits=32, zero=0),
        "f": RegisterFile("f", "f", 32, "float", "fp32 registers"),
        "a": RegisterFile(
            "a", "a", 16, "address", "external-memory address registers", bits=48, signed=False
        ),
    }


# -- semantics ---------------------------------------------------------------------------------
# Data semantics receive the operands in field order: views of local memory (written in place),
# values of scalar registers read, immediates; a written scalar register is the return value.
# Every fp32 result is rounded once: numpy's fp32 arithmetic is IEEE; fma, the transcendentals
# and the matrix products are computed in float64 and rounded once.


def _fma(d: np.ndarray, a: np.ndarray, b: Any) -> None:
    d[...] = a.astype(F64) * b + d


def _in_double(function: Any) -> Callable[..., None]:
    def apply(d: np.ndarray, a: np.ndarray) -> None:
        d[...] = function(a.astype(F64))

    apply.__name__ = f"v_{function.__name__}"
    return apply


def _rsqrt(a: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(a)  # type: ignore[no-any-return]


def _recip(a: np.ndarray) -> np.ndarray:
    return 1.0 / a


def _mac(d: np.ndarray, a: np.ndarray, b: np.ndarray, k: int) -> None:
    d[...] = d.astype(F64) + a.astype(F64) @ b.astype(F64)


def _mact(d: np.ndarray, a: np.ndarray, b: np.ndarray, k: int) -> None:
    d[...] = d.astype(F64) + a.astype(F64) @ b.astype(F64).T


def _mvac(d: np.ndarray, b: np.ndarray, a: np.ndarray, k: int) -> None:
    d[...] = d.astype(F64) + b.astype(F64) @ a.astype(F64)


# -- binders: memory and stream instructions ---------------------------------------------------


def _formula(m: Machine, formula: str, args: tuple[str, ...]) -> Callable[..., int]:
    """A cost or latency formula compiled once per platform (every tile binds the same ones)."""
    cache: dict[tuple[str, tuple[str, ...]], Callable[..., int]]
    cache = m.platform.derived.setdefault("tile_formulas", {})
    function = cache.get((formula, args))
    if function is None:
        function = cache[formula, args] = formula_function(formula, m.env, args)
    return function


def _tile(m: Machine) -> TileMachine:
    if not isinstance(m, TileMachine):
        raise TypeError("tile instructions run on the tiles of an array (simulate the program)")
    return m


def _start(m: Machine, unit: int, ranges: tuple[tuple[int, int, int, bool], ...]) -> int:
    """When an engine can start the next transfer: its queue, its timeline, the other units."""
    t = m.t
    queue = m.queues[unit]
    if queue[0] > t:
        t = m.queue_stall(queue[0], t)
        m.t = t
    start = max(t, m.free[unit])
    if any(m.horizon[u] > start for u in m.compute_units):
        start = m.deps(unit, start, ranges)
    return start


def _finish(m: TileMachine, unit: int, wanted: int, start: int, occupancy: int) -> int:
    """Account an engine's transfer that starts at `start` (booked from `wanted`)."""
    m.array_stalls[1] += start - wanted
    end = start + occupancy
    m.free[unit] = end
    m.busy[unit] += occupancy
    m.counts[unit] += 1
    m.queues[unit].append(start)
    return end


def _dma_shape(m: Machine, rows: int, cols: int, sstride: int) -> None:
    if rows <= 0 or cols <= 0:
        m.fault("invalid_operand", f"DMA of {rows} rows x {cols} columns; both must be >= 1")
    if cols > sstride:
        m.fault(
            "invalid_operand",
            f"DMA row of {cols} elements is longer than its local row stride {sstride}",
        )


def _bind_dma(store: bool) -> Callable[[Machine, Decoded], Step]:
    def binder(m: Machine, d: Decoded) -> Step:
        tm = _tile(m)
        if store:
            (areg, aoff), (sreg, soff), rows_r, cols_r, hs_r, ss_r, tag = d.operands
        else:
            (sreg, soff), (areg, aoff), rows_r, cols_r, hs_r, ss_r, tag = d.operands
        regs, addr = m.regs["r"], m.regs["a"]
        lmem = m.sram["lmem"]
        written = np.frombuffer(lmem.written, dtype=np.uint8)
        unit = m.platform.unit_index("dma")
        occupancy = _formula(m, d.instruction.cost, ("bursts",))
        ext = _formula(m, EXT_COST, ("bursts",))
        latency = _formula(m, d.instruction.latency, ("row",))(tm.row)
        burst = int(m.params["burst_bytes"])
        array = tm.array
        shim = array.shims[tm.col]
        nxt = d.pc + 1

        def step() -> int:
            tm.slot()
            rows, cols, hstride, sstride = regs[rows_r], regs[cols_r], regs[hs_r], regs[ss_r]
            _dma_shape(m, rows, cols, sstride)
            local = regs[sreg] + soff
            hbm = addr[areg] + aoff
            if store:
                end = local + (rows - 1) * sstride + cols
                if local < 0 or end > lmem.words:
                    m.bad_sram(lmem.sid, local, end - local)
                source = strided(lmem.data, local, rows, cols, sstride)
                if not strided(written, local, rows, cols, sstride).all():
                    m.uninit_sram(lmem.sid, local, end - local)
                if m.pending:
                    m.check_pending(lmem.sid, local, end, False)
                region, view, offset = m.hbm_view(hbm, rows, cols, hstride, True)
                ranges: tuple[tuple[int, int, int, bool], ...] = ((lmem.sid, local, end, False),)
            else:
                end = local + rows * sstride
                m.check_sram(lmem.sid, local, rows * sstride, True)
                region, view, offset = m.hbm_view(hbm, rows, cols, hstride, False)
                ranges = ((lmem.sid, local, end, True),)
            bursts = bursts_touched(hbm, rows, cols * region.itemsize, hstride, burst)
            wanted = _start(m, unit, ranges)
            busy = occupancy(bursts)
            start = array.book([(shim, busy), (array.external, ext(bursts))], wanted)
            done = _finish(tm, unit, wanted, start, busy) + latency
            if done > m.tag_done[tag]:
                m.tag_done[tag] = done
            moved = rows * cols * region.itemsize
            if store:
                view[...] = source
                counters = m.hbm_mark(region, offset, rows, cols, hstride // region.itemsize)
                tm.add_pending(Transfer(tag, done, ranges, (counters, region)))
                m.dma_bytes_written += moved
            else:
                block = lmem.data[local:end].reshape(rows, sstride)
                block[:, :cols] = view
                if cols < sstride:
                    block[:, cols:] = 0.0
                m.mark_sram(lmem.sid, local, end - local)
                tm.add_pending(Transfer(tag, done, ranges, None))
                m.dma_bytes_read += moved
            m.t += 1
            return nxt

        return step

    return binder


def _bind_dwait(m: Machine, d: Decoded) -> Step:
    (tag,) = d.operands
    nxt = d.pc + 1

    def step() -> int:
        m.wait_dma(tag)
        m.t += 1
        return nxt

    return step


def _receiver(tm: TileMachine, index: int, what: str) -> TileMachine:
    tiles = tm.array.tiles
    if not 0 <= index < len(tiles) or index == tm.tile:
        tm.fault(
            "invalid_operand",
            f"{tm.name()}: {what} to tile {index}; tiles are 0..{len(tiles) - 1} and not itself",
        )
    return tiles[index]


def _bind_send(m: Machine, d: Decoded) -> Step:
    tm = _tile(m)
    (sreg, soff), n_r, tile_r, (dreg, doff), sem, tag = d.operands
    regs = m.regs["r"]
    lmem = m.sram["lmem"]
    unit = m.platform.unit_index("stream")
    occupancy = _formula(m, d.instruction.cost, ("n",))
    latency = _formula(m, d.instruction.latency, ("hops",))
    array = tm.array
    nxt = d.pc + 1

    def step() -> int:
        tm.slot()
        n = regs[n_r]
        if n <= 0:
            m.fault("invalid_operand", f"{tm.name()}: send of {n} words; it must be >= 1")
        dest = _receiver(tm, regs[tile_r], "send")
        src = regs[sreg] + soff
        dst = regs[dreg] + doff
        m.check_sram(lmem.sid, src, n, False)
        if dst < 0 or dst + n > lmem.words:
            m.fault(
                "sram_overflow",
                f"{tm.name()}: send into {dest.name()} lmem[{dst}, {dst + n}), outside its "
                f"{lmem.words}-word local memory",
            )
        for transfer in dest.pending:
            for _, lo, hi, _ in transfer.ranges:
                if transfer.tag < 0 and lo < dst + n and dst < hi:
                    m.fault(
                        "stream_race",
                        f"{tm.name()}: send into {dest.name()} lmem[{dst}, {dst + n}) while an "
                        f"earlier send into lmem[{lo}, {hi}) is not waited for there",
                    )
        if dest.held[dst : dst + n].any():
            m.fault(
                "stream_race",
                f"{tm.name()}: send into {dest.name()} lmem[{dst}, {dst + n}), which holds data "
                "an earlier send delivered and that tile has not released (rel)",
            )
        ranges = ((lmem.sid, src, src + n, False),)
        wanted = _start(m, unit, ranges)
        busy = occupancy(n)
        path = array.route(tm.tile, dest.tile)
        start = array.book([(link, busy) for link in array.mesh(path)], wanted)
        freed = int(dest.released[dst : dst + n].max())
        if start < freed:
            m.fault(
                "stream_race",
                f"{tm.name()}: send into {dest.name()} lmem[{dst}, {dst + n}) starts at cycle "
                f"{start}, before that tile released those words (cycle {freed}); wait for a "
                "signal from it first",
            )
        end = _finish(tm, unit, wanted, start, busy)
        if end > m.tag_done[tag]:
            m.tag_done[tag] = end
        tm.add_pending(Transfer(tag, end, ranges, None))
        dest.sram["lmem"].data[dst : dst + n] = lmem.data[src : src + n]
        dest.mark_sram(lmem.sid, dst, n)
        incoming = Transfer(-1 - sem, end, ((lmem.sid, dst, dst + n, True),), None)
        dest.add_pending(incoming)
        dest.incoming += 1
        dest.posts[sem].append(Post(end + latency(len(path)), tm.tile, incoming))
        array.wake(dest.tile)
        m.t += 1
        return nxt

    return step


def _bind_signal(m: Machine, d: Decoded) -> Step:
    tm = _tile(m)
    tile_r, sem = d.operands
    regs = m.regs["r"]
    latency = _formula(m, d.instruction.latency, ("hops",))
    array = tm.array
    nxt = d.pc + 1

    def step() -> int:
        dest = _receiver(tm, regs[tile_r], "signal")
        hops = len(array.route(tm.tile, dest.tile))
        dest.posts[sem].append(Post(m.t + 1 + latency(hops), tm.tile, None))
        array.wake(dest.tile)
        m.t += 1
        return nxt

    return step


def _bind_wait(m: Machine, d: Decoded) -> Step:
    tm = _tile(m)
    sem, count = d.operands
    nxt = d.pc + 1

    def step() -> int:
        tm.take(sem, count)
        m.t += 1
        return nxt

    return step


def _bind_rel(m: Machine, d: Decoded) -> Step:
    tm = _tile(m)
    (areg, aoff), n_r = d.operands
    regs = m.regs["r"]
    words = m.sram["lmem"].words
    nxt = d.pc + 1

    def step() -> int:
        n = regs[n_r]
        lo = regs[areg] + aoff
        if n <= 0 or lo < 0 or lo + n > words:
            m.fault("invalid_operand", f"{tm.name()}: rel of lmem[{lo}, {lo + n})")
        tm.release(lo, lo + n)
        m.t += 1
        return nxt

    return step


# -- the instruction table -----------------------------------------------------------------------

GROUPS = (
    Group(
        "scalar",
        "Scalar",
        "Integer, fp32 and address arithmetic, executed by the tile's front end in one cycle each.",
    ),
    Group("control", "Control", "Branches, hardware loops and the end of the tile's program."),
    Group(
        "memory",
        "External memory (DMA)",
        "Strided transfers between the external memory and the tile's local memory, through "
        "the column's shim link, and the wait that completes them.",
    ),
    Group(
        "stream",
        "Streams and semaphores",
        "Sends from this tile's local memory into another tile's, over the mesh, each posting "
        "a semaphore of the receiver; signals (posts without data); waits; releases.",
    ),
    Group(
        "vector",
        "Vector",
        "Elementwise, special-function and reduction instructions on VL consecutive local "
        "words (VL <= VLEN, set by `setvl`).",
    ),
    Group(
        "matrix",
        "Matrix",
        "Panel products accumulated in place in local memory: MLEN x MLEN outputs over an "
        "inner dimension k.",
    ),
)


def _instructions(p: TileParams, rf: dict[str, RegisterFile]) -> tuple[Instruction, ...]:
    r, f, a = rf["r"], rf["f"], rf["a"]
    lmem = Mem("lmem", r, offset_range=(-p.lmem_words, p.lmem_words))
    ext = Mem("ext", a, align=2, offset_range=(INT_MIN, INT_MAX), unit="bytes")
    imm32 = Imm(INT_MIN, INT_MAX)
    tag = Imm(0, p.dma_tags - 1)
    sem = Imm(0, p.semaphores - 1)

    def rd(name: str = "rd") -> F:
        return F(name, Reg(r), "write")

    def rs(name: str, doc: str = "") -> F:
        return F(name, Reg(r), "read", doc=doc)

    def fd(name: str = "fd") -> F:
        return F(name, Reg(f), "write")

    def fs(name: str) -> F:
        return F(name, Reg(f), "read")

    vec = ("vl",)

    def vd(name: str = "vd", access: Any = "write") -> F:
        return F(name, lmem, access, vec)

    def va(name: str = "va") -> F:
        return F(name, lmem, "read", vec)

    table: list[Instruction] = []

    def add(**kwargs: Any) -> None:
        table.append(Instruction(**kwargs))

    def scalar(**kwargs: Any) -> None:
        add(group="scalar", unit="scalar", cost="1", **kwargs)

    # Scalar integer.
    scalar(
        mnemonic="li",
        fields=(rd(), F("imm", imm32)),
        summary="load an integer immediate",
        operation="rd <- imm",
        example="li r4, M * K",
        semantics=lambda imm: imm,
    )
    scalar(
        mnemonic="mov",
        fields=(rd(), rs("rs")),
        summary="copy an integer register",
        operation="rd <- rs",
        example="mov r5, r4",
        semantics=lambda x: x,
    )
    binary_int: tuple[tuple[str, str, Callable[[int, int], int], str], ...] = (
        ("add", "add", operator.add, "rd <- ra + rb"),
        ("sub", "subtract", operator.sub, "rd <- ra - rb"),
        ("mul", "multiply", operator.mul, "rd <- ra * rb"),
        ("min", "minimum", min, "rd <- min(ra, rb)"),
        ("max", "maximum", max, "rd <- max(ra, rb)"),
    )
    for mnemonic, verb, function, operation in binary_int:
        scalar(
            mnemonic=mnemonic,
            fields=(rd(), rs("ra"), rs("rb")),
            summary=f"integer {verb}",
            operation=operation + " (wraps to 32 bits)",
            example=f"{mnemonic} r6, r4, r5",
            semantics=function,
        )
    immediate_int: tuple[tuple[str, str, Callable[[int, int], int], Imm, str], ...] = (
        ("addi", "add an immediate", operator.add, imm32, "rd <- ra + imm"),
        ("muli", "multiply by an immediate", operator.mul, imm32, "rd <- ra * imm"),
        (
            "divi",
            "divide by a positive immediate, rounding down",
            operator.floordiv,
            Imm(1, INT_MAX),
            "rd <- floor(ra / imm)",
        ),
        (
            "remi",
            "remainder of division by a positive immediate",
            operator.mod,
            Imm(1, INT_MAX),
            "rd <- ra - imm * floor(ra / imm)",
        ),
        ("mini", "minimum with an immediate", min, imm32, "rd <- min(ra, imm)"),
        ("maxi", "maximum with an immediate", max, imm32, "rd <- max(ra, imm)"),
    )
    for mnemonic, verb, function, kind, operation in immediate_int:
        scalar(
            mnemonic=mnemonic,
            fields=(rd(), rs("ra"), F("imm", kind)),
            summary=f"integer {verb}",
            operation=operation + " (wraps to 32 bits)",
            example=f"{mnemonic} r6, r4, 4",
            semantics=function,
        )
    # Scalar fp32.
    scalar(
        mnemonic="fli",
        fields=(fd(), F("imm", FImm())),
        summary="load an fp32 immediate",
        operation="fd <- fp32(imm)",
        example="fli f1, -inf",
        semantics=lambda x: x,
    )
    binary_float: tuple[tuple[str, str, Callable[[float, float], float], str], ...] = (
        ("fadd", "add", operator.add, "fd <- fa + fb"),
        ("fsub", "subtract", operator.sub, "fd <- fa - fb"),
        ("fmul", "multiply", operator.mul, "fd <- fa * fb"),
        ("fdiv", "divide", semantics.fdiv, "fd <- fa / fb (IEEE: x/0 is +-inf, 0/0 is NaN)"),
        ("fmax", "maximum", semantics.fmax, "fd <- max(fa, fb) (NaN if either is NaN)"),
    )
    for mnemonic, verb, float_function, operation in binary_float:
        scalar(
            mnemonic=mnemonic,
            fields=(fd(), fs("fa"), fs("fb")),
            summary=f"fp32 {verb}",
            operation=operation + ", rounded to fp32",
            example=f"{mnemonic} f3, f1, f2",
            semantics=float_function,
        )
    scalar(
        mnemonic="fsqrt",
        fields=(fd(), fs("fa")),
        summary="fp32 square root",
        operation="fd <- sqrt(fa), rounded to fp32 (NaN if fa < 0)",
        example="fsqrt f2, f1",
        semantics=semantics.fsqrt,
    )
    scalar(
        mnemonic="itof",
        fields=(fd(), rs("rs")),
        summary="convert an integer to fp32",
        operation="fd <- fp32(rs)",
        example="itof f1, r4",
        semantics=float,
    )
    # Address registers.
    scalar(
        mnemonic="mova",
        fields=(F("ad", Reg(a), "write"), F("as", Reg(a), "read")),
        summary="copy an address register",
        operation="ad <- as",
        example="mova a5, a0",
        semantics=lambda x: x,
    )
    scalar(
        mnemonic="adda",
        fields=(F("ad", Reg(a), "write"), F("as", Reg(a), "read"), rs("rb")),
        summary="add an integer register to an address",
        operation="ad <- as + rb",
        example="adda a5, a0, r4",
        semantics=operator.add,
    )
    scalar(
        mnemonic="addai",
        fields=(F("ad", Reg(a), "write"), F("as", Reg(a), "read"), F("imm", imm32)),
        summary="add an immediate to an address",
        operation="ad <- as + imm",
        example="addai a0, a0, K * itemsize",
        semantics=operator.add,
    )
    add(
        mnemonic="setvl",
        fields=(rs("rs"),),
        group="vector",
        unit="scalar",
        cost="1",
        summary="set the vector length from a register",
        operation="VL <- min(rs, VLEN); fault if rs < 1",
        example="setvl r4",
        description="Later vector instructions process VL elements. A remaining count can be "
        "passed directly: VL becomes VLEN while more remain.",
        binder=control.bind_setvl,
    )
    add(
        mnemonic="setvli",
        fields=(F("n", Imm(1, p.vlen)),),
        group="vector",
        unit="scalar",
        cost="1",
        summary="set the vector length",
        operation="VL <- n",
        example="setvli 16",
        binder=control.bind_setvli,
    )
    # Control.
    target = F("target", Label())
    add(
        mnemonic="b",
        fields=(target,),
        group="control",
        unit="scalar",
        cost="1 + branch_penalty",
        summary="branch",
        operation="pc <- target",
        example="done:\n    b done",
        binder=control.bind_branch("r", None),
    )
    branches: tuple[tuple[str, str, Callable[[int, int], bool]], ...] = (
        ("beq", "==", operator.eq),
        ("bne", "!=", operator.ne),
        ("blt", "<", operator.lt),
        ("bge", ">=", operator.ge),
    )
    for mnemonic, symbol, compare in branches:
        add(
            mnemonic=mnemonic,
            fields=(rs("ra"), rs("rb"), target),
            group="control",
            unit="scalar",
            cost="1 + taken * branch_penalty",
            summary=f"branch if ra {symbol} rb",
            operation=f"if ra {symbol} rb: pc <- target",
            description="taken is 1 when the branch is taken, else 0.",
            example=f"top:\n    addi r4, r4, 1\n    {mnemonic} r4, r5, top",
            binder=control.bind_branch("r", compare),
        )
    loop_doc = (
        "Runs the instructions up to the matching `endloop` count times (not at all when count "
        "< 1). The loop-back is free of the taken-branch penalty. Loops nest up to loop_depth "
        "deep; branches may not enter or leave a loop body."
    )
    add(
        mnemonic="loop",
        fields=(rs("count", "iterations"),),
        group="control",
        unit="scalar",
        cost="1",
        summary="start a hardware loop of count (register) iterations",
        operation="repeat count times: body up to endloop",
        description=loop_doc,
        example="loop r5\n    addi r4, r4, 1\nendloop",
        binder=control.bind_loop,
        block="open",
    )
    add(
        mnemonic="loopi",
        fields=(F("count", Imm(0, INT_MAX), doc="iterations"),),
        group="control",
        unit="scalar",
        cost="1",
        summary="start a hardware loop of count (immediate) iterations",
        operation="repeat count times: body up to endloop",
        description=loop_doc,
        example="loopi 4\n    addi r4, r4, MLEN\nendloop",
        binder=control.bind_loop,
        block="open",
    )
    add(
        mnemonic="endloop",
        fields=(),
        group="control",
        unit="scalar",
        cost="1",
        summary="end of a hardware loop body",
        operation="if --count > 0: pc <- loop body",
        example="loopi 4\n    nop\nendloop",
        binder=control.bind_endloop,
        block="close",
    )
    add(
        mnemonic="halt",
        fields=(),
        group="control",
        unit="scalar",
        cost="1",
        summary="end the tile's program",
        operation="stop this tile; its queued instructions and transfers drain",
        description="Running past the last instruction also ends the tile's program. Other "
        "tiles go on; a post to a halted tile is never taken.",
        example="halt",
        binder=control.bind_halt,
    )
    add(
        mnemonic="nop",
        fields=(),
        group="control",
        unit="scalar",
        cost="1",
        summary="do nothing for a cycle",
        operation="nothing",
        example="nop",
        semantics=lambda: None,
    )
    # External memory.
    dma_cost = "dma_setup + cdiv(bursts * burst_bytes, shim_bytes_per_cycle)"
    dma_latency = "ext_latency + (row + 1) * hop_latency"
    shape_fields = (
        rs("rows", "rows to transfer"),
        rs("cols", "elements per row"),
        rs("estride", "bytes from one external row to the next"),
        rs("lstride", "words from one local row to the next (>= cols)"),
        F("tag", tag, doc="completion group that dwait waits for"),
    )
    dma_doc = (
        " The transfer runs in the background on the tile's DMA engine: wait for its tag "
        "before touching the local words. Cost: `bursts` counts the BURST_BYTES-byte bursts "
        "of external memory the rows touch, whole (a row that starts inside a burst moves one "
        "more). The transfer holds its column's shim link for that many cycles and the "
        "external memory for cdiv(bursts * BURST_BYTES, EXT_BYTES_PER_CYCLE): tiles whose "
        "transfers overlap in time queue for the free slots (`link_contention`). Its data "
        "lands ext_latency cycles later plus hop_latency per row up from the shim (tile row "
        "`row` is row + 1 hops away)."
    )
    add(
        mnemonic="dld",
        fields=(F("dst", lmem, "write"), F("src", ext, "read"), *shape_fields),
        group="memory",
        unit="dma",
        cost=dma_cost,
        latency=dma_latency,
        summary="DMA a strided block from external memory into local memory",
        operation="LMEM[dst + i*lstride + j] <- fp32(EXT[src + i*estride + j*itemsize]) for "
        "i < rows, j < cols; 0 for cols <= j < lstride",
        description="Converts the region's element type to fp32 exactly." + dma_doc,
        example="dld [r8], [a0], r4, r5, r6, r7, 0",
        binder=_bind_dma(store=False),
    )
    add(
        mnemonic="dst",
        fields=(F("dst", ext, "write"), F("src", lmem, "read"), *shape_fields),
        group="memory",
        unit="dma",
        cost=dma_cost,
        latency=dma_latency,
        summary="DMA a strided block from local memory to external memory",
        operation="EXT[dst + i*estride + j*itemsize] <- round(LMEM[src + i*lstride + j]) for "
        "i < rows, j < cols",
        description="Rounds to the region's element type (bf16: to nearest even). Only output "
        "and scratch regions are writable." + dma_doc,
        example="dst [a1], [r8], r4, r5, r6, r7, 1",
        binder=_bind_dma(store=True),
    )
    add(
        mnemonic="dwait",
        fields=(F("tag", tag),),
        group="memory",
        unit="scalar",
        cost="1",
        summary="wait for the DMA transfers and sends of a tag",
        operation="stall until every transfer and send issued with tag has finished; retire them",
        example="dwait 0",
        binder=_bind_dwait,
    )
    # Streams and semaphores.
    add(
        mnemonic="send",
        fields=(
            F("src", lmem, "read", doc="first local word to send"),
            rs("n", "words"),
            rs("tile", "index of the receiving tile (row * GRID_COLS + column)"),
            F("dst", lmem, "write", doc="first word in the receiver's local memory"),
            F("sem", sem, doc="the receiver's semaphore the send posts on arrival"),
            F("tag", tag, doc="completion group of the send on this tile (dwait)"),
        ),
        group="stream",
        unit="stream",
        cost="stream_setup + cdiv(n * 4, link_bytes_per_cycle)",
        latency="hops * hop_latency",
        summary="send local words into another tile's local memory",
        operation="LMEM_tile[dst + i] <- LMEM[src + i] for i < n; post tile's semaphore sem",
        description="The words travel on the mesh along the row, then the column (`hops` links, "
        "each held for the whole transfer: sends crossing a link queue behind each other). "
        "The receiver may touch them only after a `wait` on sem takes this send's post "
        "(else `stream_race`), and may not be sent into again until it releases them "
        "(`rel`) before the new send starts: the sender learns that from a `signal`. This "
        "tile may overwrite src only after `dwait tag`.",
        example="send [r8], r4, r9, [r10 + 64], 0, 2",
        binder=_bind_send,
    )
    add(
        mnemonic="wait",
        fields=(F("sem", sem), F("count", Imm(1, 1 << 16), doc="posts to take")),
        group="stream",
        unit="scalar",
        cost="1",
        summary="wait for posts on one of this tile's semaphores",
        operation="stall until count posts have arrived on sem; take them",
        description="Posts are taken in the order they were made. The tile's clock moves to "
        "the arrival of the last post taken (`semaphore_wait`); the words of the sends taken "
        "become this tile's to read and write. When every tile that has not halted waits "
        "and no post can come, the run ends with a `deadlock` fault.",
        example="wait 0, 1",
        binder=_bind_wait,
    )
    add(
        mnemonic="signal",
        fields=(rs("tile", "index of the tile to post"), F("sem", sem)),
        group="stream",
        unit="scalar",
        cost="1",
        latency="hops * hop_latency",
        summary="post another tile's semaphore (no data)",
        operation="post tile's semaphore sem",
        description="A credit: tells a sender that a buffer is released, or a tile that a "
        "stage is done. It arrives hops * hop_latency cycles after it is issued.",
        example="signal r9, 1",
        binder=_bind_signal,
    )
    add(
        mnemonic="rel",
        fields=(F("addr", lmem, "write", doc="first local word"), rs("n", "words")),
        group="stream",
        unit="scalar",
        cost="1",
        summary="release local words that sends delivered",
        operation="words [addr, addr + n) may be sent into by sends that start from now",
        example="rel [r8], r4",
        binder=_bind_rel,
    )
    # Vector.
    elementwise = "cdiv(vl, lanes)"
    binary_vec: tuple[tuple[str, str, Any, str], ...] = (
        ("add", "add", np.add, "+"),
        ("sub", "subtract", np.subtract, "-"),
        ("mul", "multiply", np.multiply, "*"),
        ("max", "maximum", np.maximum, "max"),
        ("min", "minimum", np.minimum, "min"),
    )
    for name, verb, ufunc, symbol in binary_vec:
        infix = symbol in "+-*"
        expression = f"va[i] {symbol} vb[i]" if infix else f"{symbol}(va[i], vb[i])"
        add(
            mnemonic=f"v{name}",
            fields=(vd(), va(), va("vb")),
            group="vector",
            unit="vector",
            cost=elementwise,
            summary=f"vector {verb}",
            operation=f"vd[i] <- {expression} for i < VL",
            example=f"v{name} [r8], [r9], [r10]",
            semantics=semantics.elementwise(ufunc),
        )
        scalar_expression = f"va[i] {symbol} fs" if infix else f"{symbol}(va[i], fs)"
        add(
            mnemonic=f"v{name}s",
            fields=(vd(), va(), fs("fs")),
            group="vector",
            unit="vector",
            cost=elementwise,
            summary=f"vector {verb} with a scalar",
            operation=f"vd[i] <- {scalar_expression} for i < VL",
            example=f"v{name}s [r8], [r9], f1",
            semantics=semantics.elementwise(ufunc),
        )
    add(
        mnemonic="vfma",
        fields=(vd(access="readwrite"), va(), va("vb")),
        group="vector",
        unit="vector",
        cost=elementwise,
        summary="vector fused multiply-add",
        operation="vd[i] <- va[i] * vb[i] + vd[i], rounded once, for i < VL",
        example="vfma [r8], [r9], [r10]",
        semantics=_fma,
    )
    add(
        mnemonic="vfmas",
        fields=(vd(access="readwrite"), va(), fs("fs")),
        group="vector",
        unit="vector",
        cost=elementwise,
        summary="vector fused multiply-add with a scalar",
        operation="vd[i] <- va[i] * fs + vd[i], rounded once, for i < VL",
        example="vfmas [r8], [r9], f1",
        semantics=_fma,
    )
    add(
        mnemonic="vmov",
        fields=(vd(), va()),
        group="vector",
        unit="vector",
        cost=elementwise,
        summary="vector copy",
        operation="vd[i] <- va[i] for i < VL",
        example="vmov [r8], [r9]",
        semantics=semantics.copy,
    )
    add(
        mnemonic="vbcast",
        fields=(vd(), fs("fs")),
        group="vector",
        unit="vector",
        cost=elementwise,
        summary="broadcast a scalar",
        operation="vd[i] <- fs for i < VL",
        example="vbcast [r8], f0",
        semantics=lambda d, s: d.fill(s),
    )
    specials: tuple[tuple[str, str, Any, str], ...] = (
        ("vexp", "exponential", np.exp, "exp(va[i])"),
        ("vtanh", "hyperbolic tangent", np.tanh, "tanh(va[i])"),
        ("vrecip", "reciprocal", _recip, "1 / va[i]"),
        ("vrsqrt", "reciprocal square root", _rsqrt, "1 / sqrt(va[i])"),
    )
    for mnemonic, noun, function, expression in specials:
        add(
            mnemonic=mnemonic,
            fields=(vd(), va()),
            group="vector",
            unit="vector",
            cost=f"special_cycles * {elementwise}",
            summary=f"vector {noun}",
            operation=f"vd[i] <- {expression}, rounded once to fp32, for i < VL",
            example=f"{mnemonic} [r8], [r9]",
            semantics=_in_double(function),
        )
    reduce_cost = f"{elementwise} + reduce_cycles + ceil(log2(vl))"
    add(
        mnemonic="vredsum",
        fields=(fd(), va()),
        group="vector",
        unit="vector",
        cost=reduce_cost,
        summary="sum of a vector",
        operation="fd <- sum(va[i] for i < VL), rounded once to fp32",
        description="The fp32 register is ready when the vector unit finishes; a scalar "
        "instruction reading it earlier stalls the front end.",
        example="vredsum f1, [r8]",
        semantics=semantics.reduce_sum,
    )
    add(
        mnemonic="vredmax",
        fields=(fd(), va()),
        group="vector",
        unit="vector",
        cost=reduce_cost,
        summary="maximum of a vector",
        operation="fd <- max(va[i] for i < VL) (NaN if any is NaN)",
        example="vredmax f1, [r8]",
        semantics=semantics.reduce_max,
    )
    # Matrix.
    k_field = F("k", Imm(1, p.lmem_words), doc="inner dimension")
    panel = ("mlen", "mlen")
    mm_doc = (
        " Each dot product is formed in float64 and only the addition to d rounds to fp32. "
        "Cost: MLEN * MLEN * k multiply-accumulates at MACS_PER_CYCLE per cycle."
    )
    mm_cost = "cdiv(mlen * mlen * k, macs_per_cycle)"
    add(
        mnemonic="mmac",
        fields=(
            F("d", lmem, "readwrite", panel),
            F("a", lmem, "read", ("mlen", "k")),
            F("b", lmem, "read", ("k", "mlen")),
            k_field,
        ),
        group="matrix",
        unit="matrix",
        cost=mm_cost,
        summary="panel matrix multiply-accumulate",
        operation="d <- d + A @ B; A is MLEN x k, B is k x MLEN, d is MLEN x MLEN (row-major)",
        description="All three operands are contiguous row-major blocks of local memory." + mm_doc,
        example="mmac [r8], [r9], [r10], K",
        semantics=_mac,
    )
    add(
        mnemonic="mmact",
        fields=(
            F("d", lmem, "readwrite", panel),
            F("a", lmem, "read", ("mlen", "k")),
            F("b", lmem, "read", ("mlen", "k")),
            k_field,
        ),
        group="matrix",
        unit="matrix",
        cost=mm_cost,
        summary="panel multiply-accumulate with B transposed",
        operation="d <- d + A @ transpose(B); A and B are MLEN x k",
        description="Q @ K^T with the rows of K as loaded." + mm_doc,
        example="mmact [r8], [r9], [r10], D",
        semantics=_mact,
    )
    add(
        mnemonic="mvac",
        fields=(
            F("d", lmem, "readwrite", ("mlen",)),
            F("b", lmem, "read", ("mlen", "k")),
            F("a", lmem, "read", ("k",)),
            k_field,
        ),
        group="matrix",
        unit="matrix",
        cost="cdiv(mlen * k, macs_per_cycle)",
        summary="matrix-vector multiply-accumulate",
        operation="d <- d + B @ a; B is MLEN x k, a has k words, d MLEN words",
        description="MLEN rows of a matrix times a vector: GEMV panels." + mm_doc,
        example="mvac [r8], [r9], [r10], K",
        semantics=_mvac,
    )
    return tuple(table)


# -- the platform ------------------------------------------------------------------------------


@platform("tile", TileParams, Path(__file__).with_name("tile.toml"))
def build_tile(p: TileParams) -> Platform:
    """Build the tile array for one set of hardware parameters."""
    from gauntlet.accel.platforms.tile_manual import FAULT_DOCS, SYNTAX, chapters, microbenchmarks

    rf = _register_files()
    isa = ISA(_instructions(p, rf), GROUPS, tuple(rf.values()))
    units = (
        Unit("scalar", "scalar front end", "frontend"),
        Unit("dma", "DMA engine (external memory)", "dma", p.dma_queue_depth),
        Unit("stream", "stream engine (sends)", "dma", p.dma_queue_depth),
        Unit("matrix", "matrix unit", "compute", p.queue_depth),
        Unit("vector", "vector unit", "compute", p.queue_depth),
    )
    tiles = p.grid_rows * p.grid_cols
    return Platform(
        name="tile",
        title="tile: a spatial array of compute tiles",
        summary=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "",
        params=p,
        isa=isa,
        units=units,
        spaces=(Space("lmem", "local memory", p.lmem_words, 1),),
        chapters=chapters(p),
        microbenchmarks=microbenchmarks(),
        peak_flops_per_cycle=2.0 * p.macs_per_cycle * tiles,
        hbm_bytes_per_cycle=float(p.ext_bytes_per_cycle),
        clock_ghz=p.clock_ghz,
        hbm_bytes=p.ext_bytes,
        grid=(p.grid_rows, p.grid_cols),
        syntax=SYNTAX,
        fault_docs=FAULT_DOCS,
    )
