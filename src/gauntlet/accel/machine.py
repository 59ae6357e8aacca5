"""The simulated machine: registers, memories, unit timelines, scoreboard and DMA bookkeeping.

Instructions execute functionally at dispatch, in program order, so results never depend on
timing. Timing is computed alongside, per unit:

- the front end dispatches one instruction per cycle (`t`), and runs scalar and control
  instructions itself;
- every other unit takes instructions from a queue and runs them one at a time; an instruction
  starts when its unit is free, when its queue position allows, and when every instruction of
  another unit that it depends on has finished (`deps`: read-after-write, write-after-read and
  write-after-write on SRAM ranges and shared registers);
- DMA transfers are asynchronous and not interlocked: until a `dwait`/`dfence` retires them,
  touching what they write (or writing what they read) is a `dma_race` fault, which is how the
  simulator makes a missing wait visible instead of silently reading stale data.

The hot path (`codegen.py`) inlines the common checks and calls the methods here only for the
rare cases (faults, dependencies, queue stalls), so they may be slow and thorough.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import deque
from collections.abc import Mapping
from typing import Any, NoReturn

import ml_dtypes
import numpy as np

from gauntlet.accel.contract import MemoryContract, Region
from gauntlet.accel.faults import FaultKind, SimFault
from gauntlet.accel.isa import evaluate_formula
from gauntlet.accel.platform import Platform
from gauntlet.errors import ConfigError

#: Further than any address: the span of a machine that does not narrow it.
_FAR = 1 << 62

#: Why the front end or a unit waited; `Profile.stalls` reports cycles under these names.
STALL_CAUSES = ("dma_wait", "queue_full", "register_dependency", "memory_dependency", "branch")
DMA_WAIT, QUEUE_FULL, REGISTER_DEPENDENCY, MEMORY_DEPENDENCY, BRANCH = range(len(STALL_CAUSES))

_NUMPY_DTYPE: dict[str, Any] = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16}


class Halt(Exception):
    """Raised by `halt` (and by running past the last instruction) to end a run."""


class SramState:
    """The contents of one SRAM and which of its words were ever written.

    `wide` is a float64 copy of the words that wide operands (`Field.wide`) read instead of
    converting the same fp32 words again for every instruction; `fresh` says which of its words
    are current. Only a wide read makes a word fresh (`Machine.widen`) and every write through
    the simulator makes it stale again, so words written behind the simulator's back (tests
    poking `data` before a run) are simply not fresh.
    """

    __slots__ = ("name", "sid", "data", "written", "words", "align", "wide", "fresh")

    def __init__(self, name: str, sid: int, words: int, align: int) -> None:
        self.name = name
        self.sid = sid
        self.words = words
        self.align = align
        self.data = np.full(words, np.nan, dtype=np.float32)
        self.written = bytearray(words)
        # Untouched pages of np.empty cost nothing until a wide read fills them.
        self.wide = np.empty(words, dtype=np.float64)
        self.fresh = bytearray(words)


class HbmRegion:
    """One contract region in HBM: its bytes as a typed array and what was written."""

    __slots__ = ("region", "base", "end", "itemsize", "data", "written", "stores")

    def __init__(self, region: Region, values: np.ndarray | None) -> None:
        self.region = region
        self.base = region.base
        self.end = region.end
        self.itemsize = region.itemsize
        dtype = _NUMPY_DTYPE[region.dtype]
        if values is None:
            self.data = np.full(region.elements, np.nan, dtype=dtype)
            self.written: np.ndarray | None = np.zeros(region.elements, dtype=np.bool_)
        else:
            self.data = np.ascontiguousarray(values, dtype=dtype).reshape(-1).copy()
            self.written = None
        self.stores: list[StoredBlock] = []
        """The elements of each store not yet waited for (one entry per store, in issue order)."""


#: The elements a store writes: (offset, rows, cols, step, end), `end` past its last element.
StoredBlock = tuple[int, int, int, int, int]


def _overlaps(stores: list[StoredBlock], block: StoredBlock) -> bool:
    """Whether any element of `block` is an element of one of `stores`."""
    offset, rows, cols, step, end = block
    for s_offset, s_rows, s_cols, s_step, s_end in stores:
        if s_offset < end and offset < s_end:
            # The spans meet: compare the elements themselves.
            lo = min(offset, s_offset)
            mask = np.zeros(max(end, s_end) - lo, dtype=np.bool_)
            strided(mask, s_offset - lo, s_rows, s_cols, s_step)[...] = True
            if strided(mask, offset - lo, rows, cols, step).any():
                return True
    return False


class Transfer:
    """A DMA transfer issued and not yet retired by a wait."""

    __slots__ = ("tag", "done", "ranges", "store")

    def __init__(
        self,
        tag: int,
        done: int,
        ranges: tuple[tuple[int, int, int, bool], ...],
        store: tuple[StoredBlock, HbmRegion] | None,
    ) -> None:
        self.tag = tag
        self.done = done
        self.ranges = ranges
        """The SRAM words it touches: (space id, lo, hi, writes)."""
        self.store = store
        """For stores: the HBM elements it writes (`Machine.hbm_mark`), and their region."""
        if store is not None:
            block, region = store
            region.stores.append(block)

    def retire(self) -> None:
        """Forget the transfer: its data has landed and a wait has acknowledged it."""
        if self.store is not None:
            block, region = self.store
            # Equal blocks are interchangeable: any one of them stands for this store.
            region.stores.remove(block)


class Machine:
    """The state of one simulated run of a platform."""

    __slots__ = (
        "platform",
        "params",
        "regs",
        "reg_written",
        "ready",
        "vl",
        "sram",
        "sram_by_id",
        "hbm",
        "hbm_bases",
        "t",
        "free",
        "horizon",
        "busy",
        "counts",
        "queues",
        "inflight",
        "compute_units",
        "stalls",
        "pending",
        "span",
        "dma_outstanding",
        "tag_done",
        "dma_bytes_read",
        "dma_bytes_written",
        "loops",
        "executed",
        "ones",
        "ones_vl",
        "zeros",
        "scratch",
        "env",
    )

    def __init__(
        self,
        platform: Platform,
        contract: MemoryContract | None = None,
        inputs: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Build a machine with poisoned memories, zeroed registers and the inputs in HBM.

        Raises:
            ConfigError: the contract does not fit in HBM, or the inputs do not match it.
        """
        self.platform = platform
        self.params = platform.param_values()
        self.env: dict[str, Any] = formula_env(self.params)
        self.regs: dict[str, list[Any]] = {}
        self.reg_written: dict[str, list[bool]] = {}
        self.ready: dict[str, list[int]] = {}
        for regfile in platform.isa.register_files:
            if regfile.kind == "array":
                shape = tuple(evaluate_formula(d, self.env) for d in regfile.shape)
                fill = False if regfile.dtype == "bool" else np.nan
                dtype = np.bool_ if regfile.dtype == "bool" else np.float32
                self.regs[regfile.name] = [
                    np.full(shape, fill, dtype=dtype) for _ in range(regfile.count)
                ]
                self.reg_written[regfile.name] = [not regfile.tracked] * regfile.count
            else:
                zero: Any = 0.0 if regfile.kind == "float" else 0
                # One extra slot past the end receives writes to the hardwired-zero register.
                self.regs[regfile.name] = [zero] * (regfile.count + 1)
                self.ready[regfile.name] = [0] * regfile.count
        self.vl = int(self.params.get("vlen", 1))
        self.sram: dict[str, SramState] = {}
        self.sram_by_id: list[SramState] = []
        for sid, space in enumerate(platform.spaces):
            state = SramState(space.name, sid, space.words, space.align)
            self.sram[space.name] = state
            self.sram_by_id.append(state)
        self.ones = memoryview(b"\x01" * max((s.words for s in platform.spaces), default=1))
        self.ones_vl = self.ones[: self.vl]
        self.zeros = memoryview(bytes(len(self.ones)))
        self.scratch: dict[tuple[tuple[int, ...], int], np.ndarray] = {}
        units = platform.units
        self.t = 0
        self.free = [0] * len(units)
        self.horizon = [0] * len(units)
        self.busy = [0] * len(units)
        self.counts = [0] * len(units)
        # Each queue holds the start cycles of its unit's last queue_depth instructions, and
        # starts full of zeros (which stall nobody), so its head is always the one to wait for.
        self.queues: list[deque[int]] = [
            deque([0] * max(1, u.queue_depth), maxlen=max(1, u.queue_depth)) for u in units
        ]
        # A unit has at most queue_depth + 1 instructions in flight when another unit looks,
        # unless its results land long after it finishes: such a unit declares how many it
        # tracks (`Unit.tracked`) and waits for the oldest before it starts one more, so a
        # record falls off the end only once it can no longer delay anything.
        self.inflight: list[deque[tuple[Any, ...]]] = [
            deque(maxlen=u.tracked or u.queue_depth + 4) for u in units
        ]
        self.compute_units = [i for i, u in enumerate(units) if u.kind == "compute"]
        self.stalls = [0] * len(STALL_CAUSES)
        self.pending: deque[Transfer] = deque()
        self.span = [-_FAR, _FAR]
        """Words [span[0], span[1]) of its spaces cover every range of `pending`: an access
        outside cannot conflict, so generated code skips its `check_pending` call. A machine
        that does not narrow it (only a tile does, `TileMachine`) checks every access."""
        self.dma_outstanding = int(self.params.get("dma_outstanding", 1 << 30))
        self.tag_done = [0] * int(self.params.get("dma_tags", 1))
        self.dma_bytes_read = 0
        self.dma_bytes_written = 0
        self.loops: list[list[int]] = []
        self.executed = 0
        """Instructions run so far (blocks add theirs when they leave)."""
        self.hbm: list[HbmRegion] = []
        self.hbm_bases: list[int] = []
        if contract is not None:
            self._load_contract(contract, inputs or {})

    # -- set-up ---------------------------------------------------------------------------

    def _load_contract(self, contract: MemoryContract, inputs: Mapping[str, np.ndarray]) -> None:
        if contract.end > self.platform.hbm_bytes:
            raise ConfigError(
                f"memory contract ends at {contract.end:#x}, beyond the {self.platform.name} "
                f"HBM of {self.platform.hbm_bytes:#x} bytes; shrink the config or raise hbm_bytes"
            )
        wanted = {r.name for r in contract.with_role("input")}
        unknown = sorted(set(inputs) - wanted)
        missing = sorted(wanted - set(inputs))
        if unknown or missing:
            raise ConfigError(
                f"inputs do not match the memory contract: missing {missing or 'none'}, "
                f"not input regions {unknown or 'none'} (inputs: {sorted(wanted)})"
            )
        for region in sorted(contract.regions, key=lambda r: r.base):
            values = None
            if region.role == "input":
                values = np.asarray(inputs[region.name])
                if values.shape != region.shape:
                    raise ConfigError(
                        f"input '{region.name}' has shape {values.shape}, the contract says "
                        f"{region.shape}"
                    )
            self.hbm.append(HbmRegion(region, values))
            self.hbm_bases.append(region.base)
        names = self.platform.isa.register_files
        address_files = [f for f in names if f.kind == "address"]
        if address_files:
            # Calling convention: region i's base address is in address register i.
            regs = self.regs[address_files[0].name]
            for i, region in enumerate(contract.regions[: address_files[0].count]):
                regs[i] = region.base

    def write_sram(self, space: str, address: int, values: np.ndarray) -> None:
        """Store values into an SRAM and mark them written (for tests and tools)."""
        state = self.sram[space]
        flat = np.asarray(values, dtype=np.float32).reshape(-1)
        state.data[address : address + flat.size] = flat
        state.written[address : address + flat.size] = self.ones[: flat.size]
        state.fresh[address : address + flat.size] = self.zeros[: flat.size]

    # -- faults ---------------------------------------------------------------------------

    def fault(self, kind: FaultKind, message: str) -> NoReturn:
        """Stop the run with a fault."""
        raise SimFault(kind, message)

    def bad_sram(self, sid: int, address: int, words: int) -> NoReturn:
        """Fault for an SRAM access that is misaligned or out of the SRAM."""
        state = self.sram_by_id[sid]
        if address % state.align:
            self.fault(
                "misaligned",
                f"{state.name} address {address} is not a multiple of {state.align} words",
            )
        self.fault(
            "sram_overflow",
            f"{state.name} access [{address}, {address + words}) is outside the "
            f"{state.words}-word {state.name}",
        )

    def uninit_sram(self, sid: int, address: int, words: int) -> NoReturn:
        """Fault for a read of SRAM words nobody wrote."""
        state = self.sram_by_id[sid]
        first = state.written.find(0, address, address + words)
        self.fault(
            "uninitialized_read",
            f"read of {state.name}[{address}, {address + words}) but word {first} was never "
            "written",
        )

    def uninit_reg(self, file: str, index: int) -> NoReturn:
        """Fault for a read of an array register nobody wrote."""
        name = self.platform.isa.register_file(file).register_name(index)
        self.fault("uninitialized_read", f"read of {name} before anything wrote it")

    def check_sram(self, sid: int, address: int, words: int, write: bool) -> None:
        """Every check of an SRAM access: alignment, bounds, written-ness, DMA races."""
        state = self.sram_by_id[sid]
        if words <= 0:
            self.fault("invalid_operand", f"{state.name} access of {words} words")
        if address % state.align or address < 0 or address + words > state.words:
            self.bad_sram(sid, address, words)
        if not write and state.written.find(0, address, address + words) >= 0:
            self.uninit_sram(sid, address, words)
        if self.pending:
            self.check_pending(sid, address, address + words, write)

    def mark_sram(self, sid: int, address: int, words: int) -> None:
        """Record that SRAM words were written (their float64 copy is stale)."""
        state = self.sram_by_id[sid]
        state.written[address : address + words] = self.ones[:words]
        state.fresh[address : address + words] = self.zeros[:words]

    def widen(self, sid: int, lo: int, hi: int) -> None:
        """Bring the float64 copy of SRAM words [lo, hi) up to date for a wide read."""
        state = self.sram_by_id[sid]
        state.wide[lo:hi] = state.data[lo:hi]
        state.fresh[lo:hi] = self.ones[: hi - lo]

    def work(self, shape: tuple[int, ...], index: int) -> np.ndarray:
        """Float64 scratch array `index` of this shape for semantics (`Instruction.work`).

        One per machine rather than per module, so runs on other threads have their own.
        """
        array = self.scratch.get((shape, index))
        if array is None:
            array = self.scratch[shape, index] = np.zeros(shape, dtype=np.float64)
        return array

    def forget_wide(self) -> None:
        """Mark every float64 copy stale: a program that never reads wide does not keep them."""
        for state in self.sram_by_id:
            state.fresh[:] = self.zeros[: state.words]

    # -- timing ---------------------------------------------------------------------------

    def queue_stall(self, until: int, t: int) -> int:
        """The front end waits for a queue slot; returns the new dispatch time."""
        self.stalls[QUEUE_FULL] += until - t
        return until

    def deps(self, unit: int, start: int, accesses: tuple[tuple[int, int, int, bool], ...]) -> int:
        """The earliest start >= `start` that respects other units' in-flight accesses.

        Args:
            unit: The unit that will run the instruction (its own accesses are in order).
            start: The earliest start without dependencies.
            accesses: (resource id, first word, end word, writes) of the instruction.
        """
        earliest = start
        for other in self.compute_units:
            if other == unit or self.horizon[other] <= start:
                continue
            # Each record is (done, then resource, lo, hi, writes for each access).
            for record in self.inflight[other]:
                done = record[0]
                if done <= start:
                    continue
                for k in range(1, len(record), 4):
                    sid, lo, hi, writes = record[k : k + 4]
                    if any(
                        sid == asid and lo < ahi and alo < hi and (writes or awrites)
                        for asid, alo, ahi, awrites in accesses
                    ):
                        start = done
                        break
        if start > earliest:
            self.stalls[MEMORY_DEPENDENCY] += start - earliest
        return start

    def set_vl(self, vl: int) -> None:
        """Set the vector length later vector instructions use."""
        self.vl = vl
        self.ones_vl = self.ones[:vl]

    def take_branch(self, penalty: int) -> None:
        """Account a taken branch: the front end refetches."""
        self.t += penalty
        self.stalls[BRANCH] += penalty

    # -- DMA ------------------------------------------------------------------------------

    def dma_slot(self) -> None:
        """Make room for one more transfer: at the limit, wait for the oldest and retire it.

        Called first by every DMA instruction. A retired transfer has landed, so nothing can
        race with it any more; the wait shows up as `dma_wait`.
        """
        if len(self.pending) >= self.dma_outstanding:
            oldest = self.pending.popleft()
            if oldest.done > self.t:
                self.stalls[DMA_WAIT] += oldest.done - self.t
                self.t = oldest.done
            oldest.retire()

    def dma_issue(
        self,
        unit: int,
        occupancy: int,
        latency: int,
        tag: int,
        ranges: tuple[tuple[int, int, int, bool], ...],
        store: tuple[StoredBlock, HbmRegion] | None = None,
    ) -> int:
        """Schedule a transfer on a DMA unit and keep it pending until waited for.

        Args:
            unit: The DMA unit.
            occupancy: Cycles the unit is busy with it.
            latency: Cycles after that until its data has landed.
            tag: The tag `dwait` retires it with.
            ranges: The SRAM words it reads or writes: (space id, lo, hi, writes).
            store: For stores, the HBM elements it writes (`hbm_mark`) and their region.

        Returns:
            The cycle its data has landed.
        """
        t = self.t
        queue = self.queues[unit]
        if queue[0] > t:
            t = self.queue_stall(queue[0], t)
            self.t = t
        start = max(t, self.free[unit])
        if any(self.horizon[u] > start for u in self.compute_units):
            start = self.deps(unit, start, ranges)
        end = start + occupancy
        self.free[unit] = end
        self.busy[unit] += occupancy
        self.counts[unit] += 1
        queue.append(start)
        done = end + latency
        if done > self.tag_done[tag]:
            self.tag_done[tag] = done
        self.pending.append(Transfer(tag, done, ranges, store))
        return done

    def check_pending(self, sid: int, lo: int, hi: int, write: bool) -> None:
        """Fault if an access conflicts with a DMA transfer nobody waited for."""
        for transfer in self.pending:
            for psid, plo, phi, pwrites in transfer.ranges:
                if psid == sid and plo < hi and lo < phi and (pwrites or write):
                    space = self.sram_by_id[sid].name
                    what = "writes" if pwrites else "reads"
                    tag = transfer.tag
                    self.fault(
                        "dma_race",
                        f"{'write to' if write else 'read of'} {space}[{lo}, {hi}) while DMA "
                        f"tag {tag}, which {what} {space}[{plo}, {phi}), is not waited for; "
                        f"add 'dwait {tag}' before this instruction",
                    )

    def wait_dma(self, tag: int | None) -> None:
        """The front end waits for the transfers of `tag` (all tags if None) and retires them."""
        tags = range(len(self.tag_done)) if tag is None else (tag,)
        done = max(self.tag_done[i] for i in tags)
        if done > self.t:
            self.stalls[DMA_WAIT] += done - self.t
            self.t = done
        keep: deque[Transfer] = deque()
        for transfer in self.pending:
            if tag is None or transfer.tag == tag:
                transfer.retire()
            else:
                keep.append(transfer)
        self.pending = keep

    # -- HBM ------------------------------------------------------------------------------

    def hbm_region(self, address: int) -> HbmRegion:
        """The region containing a byte address, or an `out_of_bounds` fault."""
        i = bisect.bisect_right(self.hbm_bases, address) - 1
        if i < 0 or address >= self.hbm[i].end:
            regions = ", ".join(f"{h.region.name} [{h.base:#x}, {h.end:#x})" for h in self.hbm)
            self.fault(
                "out_of_bounds",
                f"HBM address {address:#x} is in no region (regions: {regions or 'none'})",
            )
        return self.hbm[i]

    def hbm_view(
        self, address: int, rows: int, cols: int, stride_bytes: int, write: bool
    ) -> tuple[HbmRegion, np.ndarray, int]:
        """A (rows, cols) strided view of HBM with every check; returns (region, view, offset).

        The view's rows start `stride_bytes` apart; `offset` is the element index of [0, 0].
        """
        region = self.hbm_region(address)
        name = region.region.name
        size = region.itemsize
        if (address - region.base) % size or stride_bytes % size:
            self.fault(
                "misaligned",
                f"HBM address {address:#x} / row stride {stride_bytes} in '{name}' is not a "
                f"multiple of its element size {size} ({region.region.dtype})",
            )
        if stride_bytes < 0:
            self.fault("invalid_operand", f"negative HBM row stride {stride_bytes}")
        offset = (address - region.base) // size
        step = stride_bytes // size
        last = offset + (rows - 1) * step + cols
        if last > region.data.size:
            self.fault(
                "out_of_bounds",
                f"{rows} rows of {cols} elements at {address:#x} with row stride "
                f"{stride_bytes} B end at element {last} of '{name}', which has "
                f"{region.data.size}",
            )
        if write:
            if not region.region.writable:
                self.fault(
                    "protection",
                    f"write to input region '{name}' at {address:#x}; only outputs and "
                    "scratch are writable",
                )
            if rows > 1 and step < cols:
                self.fault(
                    "invalid_operand",
                    f"stored rows overlap: row stride {stride_bytes} B is shorter than a row "
                    f"of {cols} elements",
                )
        view = strided(region.data, offset, rows, cols, step)
        if not write:
            if region.written is not None:
                mask = strided(region.written, offset, rows, cols, step)
                if not mask.all():
                    row, col = (int(i[0]) for i in np.nonzero(~mask))
                    self.fault(
                        "uninitialized_read",
                        f"read of '{name}' element {offset + row * step + col} (row {row}, "
                        f"column {col} of the transfer) that nothing wrote",
                    )
            if region.stores:
                block = (offset, rows, cols, step, offset + (rows - 1) * step + cols)
                if _overlaps(region.stores, block):
                    self.fault(
                        "dma_race",
                        f"read of '{name}' at {address:#x} while a store to it is not waited "
                        "for; add a dwait for the store first",
                    )
        return region, view, offset

    def hbm_mark(
        self, region: HbmRegion, offset: int, rows: int, cols: int, step: int
    ) -> StoredBlock:
        """Record a store's elements as written; returns them for its `Transfer`."""
        if region.written is not None:
            strided(region.written, offset, rows, cols, step)[...] = True
        return (offset, rows, cols, step, offset + (rows - 1) * step + cols)

    def unwritten_outputs(self) -> dict[str, int]:
        """Output elements the program never wrote, per output region."""
        return {
            h.region.name: int(h.written.size - np.count_nonzero(h.written))
            for h in self.hbm
            if h.region.role == "output" and h.written is not None
        }

    def outputs(self) -> dict[str, np.ndarray]:
        """Copies of the output regions, shaped and typed as the contract says."""
        return {
            h.region.name: h.data.reshape(h.region.shape).copy()
            for h in self.hbm
            if h.region.role == "output"
        }

    def cycles(self) -> int:
        """The cycle at which every unit and transfer has finished."""
        return max([self.t, *self.free, *self.horizon, *self.tag_done])


def bursts_touched(address: int, rows: int, row_bytes: int, stride: int, burst: int) -> int:
    """Bursts of `burst` bytes that `rows` rows of `row_bytes` bytes touch, whole.

    Row i starts at byte `address + i * stride`; a row that starts inside a burst moves that
    whole burst, so an unaligned row of one burst's length moves two.
    """
    first = address % burst
    if rows == 1 or stride % burst == 0:
        return rows * ((first + row_bytes - 1) // burst + 1)
    # A row's count depends only on where it starts within a burst, so only the address and the
    # stride modulo the burst matter: kernels repeat a few shapes, and the sum is cached.
    return _unaligned_bursts(first, rows, row_bytes, stride % burst, burst)


@functools.lru_cache(maxsize=4096)
def _unaligned_bursts(first: int, rows: int, row_bytes: int, stride: int, burst: int) -> int:
    starts = first + stride * np.arange(rows, dtype=np.int64)
    return int(((starts + row_bytes - 1) // burst - starts // burst + 1).sum())


def strided(array: np.ndarray, offset: int, rows: int, cols: int, step: int) -> np.ndarray:
    """A (rows, cols) view of a 1-D array from element `offset`, rows `step` elements apart."""
    stop = offset + rows * step
    if 0 <= offset and cols <= step and stop <= array.shape[0]:
        # The same view, built by slicing (about twice as fast as the constructor below).
        return array[offset:stop].reshape(rows, step)[:, :cols]
    size = array.itemsize
    return np.ndarray(
        (rows, cols),
        dtype=array.dtype,
        buffer=array,
        offset=offset * size,
        strides=(step * size, size),
    )


def formula_env(params: Mapping[str, int | float]) -> dict[str, Any]:
    """Names a formula may use: the parameters and the functions of `gauntlet.expr`."""
    from gauntlet import expr

    return {**expr.FUNCTIONS, **params, "log2": math.log2}
