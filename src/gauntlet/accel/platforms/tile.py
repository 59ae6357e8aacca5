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

from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gauntlet.accel.array import Post, TileMachine
from gauntlet.accel.assembler import Decoded
from gauntlet.accel.families import Dialect, Table
from gauntlet.accel.isa import (
    ISA,
    Group,
    Imm,
    Instruction,
    Mem,
    Reg,
    RegisterFile,
    Step,
    formula_function,
)
from gauntlet.accel.isa import Field as F
from gauntlet.accel.machine import Machine, Transfer, bursts_touched, strided
from gauntlet.accel.platform import Platform, Space, Unit, platform
from gauntlet.accel.semantics import INT_MAX, INT_MIN

F64 = np.float64

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
# The matrix products receive their local-memory operands as views; each dot product is formed
# in float64 and only the addition to d rounds to fp32. The scalar and vector semantics are the
# shared families' (`gauntlet.accel.families`).


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


class _Memo(dict[int, int]):
    """A one-argument cost formula's values, computed once per argument (`memo[bursts]`)."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[..., int]) -> None:
        super().__init__()
        self.function = function

    def __missing__(self, value: int) -> int:
        result = self[value] = self.function(value)
        return result


def _memo(m: Machine, formula: str, arg: str) -> _Memo:
    """`_formula` of one argument, memoized per platform (transfers repeat a few sizes)."""
    cache: dict[tuple[str, str], _Memo] = m.platform.derived.setdefault("tile_memos", {})
    memo = cache.get((formula, arg))
    if memo is None:
        memo = cache[formula, arg] = _Memo(_formula(m, formula, (arg,)))
    return memo


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
    horizon = m.horizon
    for u in m.compute_units:
        if horizon[u] > start:
            return m.deps(unit, start, ranges)
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
        occupancy = _memo(m, d.instruction.cost, "bursts")
        ext = _memo(m, EXT_COST, "bursts")
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
                if rows == 1 or cols == sstride:
                    # Contiguous words: the bytearray's own search.
                    if lmem.written.find(0, local, end) >= 0:
                        m.uninit_sram(lmem.sid, local, end - local)
                elif not strided(written, local, rows, cols, sstride).all():
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
            busy = occupancy[bursts]
            start = array.book_pair(shim, busy, array.external, ext[bursts], wanted)
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
    occupancy = _memo(m, d.instruction.cost, "n")
    latency = _memo(m, d.instruction.latency, "hops")
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
        # Only incoming sends (tag < 0) conflict, and `incoming` counts them.
        for transfer in dest.pending if dest.incoming else ():
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
        busy = occupancy[n]
        links = array.links(tm.tile, dest.tile)
        start = array.book_links(links, busy, wanted)
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
        dest.posts[sem].append(Post(end + latency[len(links)], tm.tile, incoming))
        array.wake(dest.tile)
        m.t += 1
        return nxt

    return step


def _bind_signal(m: Machine, d: Decoded) -> Step:
    tm = _tile(m)
    tile_r, sem = d.operands
    regs = m.regs["r"]
    latency = _memo(m, d.instruction.latency, "hops")
    array = tm.array
    nxt = d.pc + 1

    def step() -> int:
        dest = _receiver(tm, regs[tile_r], "signal")
        hops = len(array.links(tm.tile, dest.tile))
        dest.posts[sem].append(Post(m.t + 1 + latency[hops], tm.tile, None))
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
    r = rf["r"]
    lmem = Mem("lmem", r, offset_range=(-p.lmem_words, p.lmem_words))
    ext = Mem("ext", rf["a"], align=2, offset_range=(INT_MIN, INT_MAX), unit="bytes")
    tag = Imm(0, p.dma_tags - 1)
    sem = Imm(0, p.semaphores - 1)

    def rs(name: str, doc: str = "") -> F:
        return F(name, Reg(r), "read", doc=doc)

    # r1..r3 hold the tile's place (calling convention), so the examples start at r4.
    table = Table(
        Dialect(
            ints=r,
            floats=rf["f"],
            addresses=rf["a"],
            vectors=lmem,
            single_source="s",
            address_noun="an address",
            scale="MLEN",
            example_ints=4,
            example_vectors=("[r8]", "[r9]", "[r10]"),
            program="the tile's program",
            halt_note=" Other tiles go on; a post to a halted tile is never taken.",
            omit=frozenset(
                ("slli", "srai", "fmov", "fmin", "ftoi", "la", "vdiv", "vdivs", "viota", "vbf16")
            ),
        )
    )
    add = table.add
    table.scalar_core()
    table.vector_length(p.vlen)
    table.branches()
    table.hardware_loops()
    table.halt_and_nop()
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
    table.vector_core(
        cost="cdiv(vl, lanes)",
        special_cost="special_cycles * cdiv(vl, lanes)",
        reduce_cost="cdiv(vl, lanes) + reduce_cycles + ceil(log2(vl))",
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
    return table.instructions()


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
