"""Arrays of tiles: one machine per tile, run together in order of simulated time.

A platform with a `grid` is a 2-D array of tiles. Every tile runs the same program (SPMD) on a
`TileMachine` of its own: its registers, its local memory, its unit timelines. They share the
external memory (the contract's regions) and the links between them:

- each column's link to external memory (its shim) and the external memory itself are
  calendars of busy intervals: a transfer takes the earliest slot in which both are free, so
  tiles that load at the same time queue behind each other (`link_contention`);
- the mesh links between neighbouring tiles are calendars too: a send holds every link of its
  XY route for its whole transfer, so two sends crossing one link serialize;
- semaphores order tiles: `wait` yields the tile until enough posts (sends or signals) have
  arrived, and its clock jumps to the arrival of the last one it takes (`semaphore_wait`).

The run loop advances the runnable tile whose clock is the earliest until it is `WINDOW` cycles
ahead of the next one, so shared calendars are booked nearly in time order (a calendar gives a
request the earliest free slot whenever it is booked); results never depend on that order
(each tile executes its own program in order, and cross-tile data moves only through
semaphore-ordered sends, with every unordered access a `stream_race` fault). When no tile can
run and some still wait, the run ends with a `deadlock` fault naming each waiting tile and its
instruction.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from gauntlet.accel.assembler import Program
from gauntlet.accel.codegen import MAX_BLOCK, bind
from gauntlet.accel.contract import MemoryContract
from gauntlet.accel.faults import Fault, SimFault
from gauntlet.accel.machine import DMA_WAIT, MEMORY_DEPENDENCY, Halt, Machine, Transfer
from gauntlet.accel.platform import Platform
from gauntlet.accel.simulator import Profile, SimResult, _fault, _profile

#: Stall causes the array adds to each machine's own (`Profile.stalls`).
ARRAY_STALLS = ("semaphore_wait", "link_contention")

#: A cycle later than any run reaches.
_NEVER = 1 << 62

#: Further than any local word.
_FAR = 1 << 62

#: Cycles a tile may run ahead of the next earliest one before the loop switches tiles: small
#: against the run, so the shared calendars are booked nearly in time order, and large against
#: a block, so tiles in lockstep do not switch after every block.
WINDOW = 512

#: Calling convention: the integer registers holding the tile's row, column and index.
ROW_REGISTER, COL_REGISTER, INDEX_REGISTER = 1, 2, 3


class Blocked(Exception):
    """Raised by `wait` when its semaphore has fewer posts than it takes: the tile yields."""

    def __init__(self, semaphore: int, count: int) -> None:
        self.semaphore = semaphore
        self.count = count
        super().__init__(f"waits for {count} post(s) on semaphore {semaphore}")


class Calendar:
    """The busy intervals of one shared link, kept sorted and disjoint."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def earliest(self, t: int, length: int) -> int:
        """The first cycle >= t from which the link is free for `length` cycles."""
        starts, ends = self.starts, self.ends
        if not ends or ends[-1] <= t:
            return t
        i = bisect.bisect_right(ends, t)
        while i < len(starts) and starts[i] < t + length:
            t = max(t, ends[i])
            i += 1
        return t

    def reserve(self, t: int, length: int) -> None:
        """Book [t, t + length), which `earliest` found free; touching neighbours merge."""
        if length <= 0:
            return
        starts, ends = self.starts, self.ends
        end = t + length
        if not ends or ends[-1] < t:
            starts.append(t)
            ends.append(end)
            return
        if ends[-1] == t:
            ends[-1] = end
            return
        i = bisect.bisect_left(starts, t)
        if i > 0 and ends[i - 1] == t:
            i -= 1
            t = starts[i]
            del starts[i], ends[i]
        if i < len(starts) and starts[i] == end:
            end = ends[i]
            del starts[i], ends[i]
        starts.insert(i, t)
        ends.insert(i, end)


@dataclass
class Post:
    """One arrival at a semaphore: a send's data or a signal's credit."""

    arrival: int
    """The cycle it arrives at the receiving tile."""
    source: int
    """The tile that posted it."""
    transfer: Transfer | None
    """A send's incoming data (pending on the receiver until a wait takes the post)."""


class TileMachine(Machine):
    """One tile's machine: a `Machine` that knows its array, its place and its semaphores."""

    __slots__ = (
        "array",
        "tile",
        "row",
        "col",
        "posts",
        "incoming",
        "held",
        "released",
        "array_stalls",
    )

    def __init__(
        self,
        array: TileArray,
        tile: int,
        contract: MemoryContract | None,
        inputs: Mapping[str, np.ndarray] | None,
    ) -> None:
        """A tile with poisoned memories; the first tile loads the contract's regions."""
        platform = array.platform
        super().__init__(platform, contract if tile == 0 else None, inputs)
        self.array = array
        self.tile = tile
        self.row, self.col = divmod(tile, array.cols)
        semaphores = int(self.params["semaphores"])
        self.posts: list[deque[Post]] = [deque() for _ in range(semaphores)]
        self.incoming = 0
        """Sends delivered here that no wait has taken yet (they are in `pending`)."""
        self.span[:] = (0, 0)  # widened by `add_pending`, narrowed when transfers retire
        words = platform.space("lmem").words
        self.held = np.zeros(words, dtype=np.bool_)
        """Local words holding data a send delivered and this tile has not released (`rel`)."""
        self.released = np.zeros(words, dtype=np.int64)
        """Per local word, the cycle this tile last released it (0: never received into)."""
        self.array_stalls = [0] * len(ARRAY_STALLS)
        regs = self.regs["r"]
        regs[ROW_REGISTER], regs[COL_REGISTER], regs[INDEX_REGISTER] = self.row, self.col, tile

    def name(self) -> str:
        """How messages name the tile: `tile 5 (1, 1)`."""
        return f"tile {self.tile} ({self.row}, {self.col})"

    def check_pending(self, sid: int, lo: int, hi: int, write: bool) -> None:
        """Fault if an access touches data a send delivers that no wait has taken yet."""
        span = self.span
        if hi <= span[0] or lo >= span[1]:
            return
        if not self.incoming:
            # The hot path of double-buffered code: one pass, and the shared message only on a
            # conflict (the same test as Machine.check_pending, cheapest comparison first).
            for transfer in self.pending:
                for psid, plo, phi, pwrites in transfer.ranges:
                    if plo < hi and lo < phi and psid == sid and (pwrites or write):
                        super().check_pending(sid, lo, hi, write)
            return
        for transfer in self.pending:
            if transfer.tag >= 0:
                continue
            for psid, plo, phi, _ in transfer.ranges:
                if psid == sid and plo < hi and lo < phi:
                    semaphore = -1 - transfer.tag
                    self.fault(
                        "stream_race",
                        f"{self.name()}: {'write to' if write else 'read of'} lmem[{lo}, {hi}) "
                        f"while a send into lmem[{plo}, {phi}) posting semaphore {semaphore} "
                        f"is not waited for; add 'wait {semaphore}, 1' before this instruction",
                    )
        super().check_pending(sid, lo, hi, write)

    def add_pending(self, transfer: Transfer) -> None:
        """Track a transfer until a wait retires it (the only way transfers are added)."""
        self.pending.append(transfer)
        span = self.span
        for _, lo, hi, _ in transfer.ranges:
            if span[0] >= span[1]:
                span[:] = (lo, hi)
            else:
                span[:] = (min(span[0], lo), max(span[1], hi))

    def respan(self) -> None:
        """Narrow the span to the transfers still pending."""
        first, last = _FAR, -_FAR
        for transfer in self.pending:
            for _, lo, hi, _ in transfer.ranges:
                if lo < first:
                    first = lo
                if hi > last:
                    last = hi
        span = self.span
        if first == _FAR:
            span[0] = span[1] = 0
        else:
            span[0], span[1] = first, last

    def wait_dma(self, tag: int | None) -> None:
        """As `Machine.wait_dma`, then narrow the span (in one pass for one tag)."""
        if tag is None:
            super().wait_dma(tag)
            self.respan()
            return
        done = self.tag_done[tag]
        if done > self.t:
            self.stalls[DMA_WAIT] += done - self.t
            self.t = done
        keep: deque[Transfer] = deque()
        first, last = _FAR, -_FAR
        for transfer in self.pending:
            if transfer.tag == tag:
                transfer.retire()
                continue
            keep.append(transfer)
            for _, lo, hi, _ in transfer.ranges:
                if lo < first:
                    first = lo
                if hi > last:
                    last = hi
        self.pending = keep
        span = self.span
        if first == _FAR:
            span[0] = span[1] = 0
        else:
            span[0], span[1] = first, last

    def slot(self) -> None:
        """Bound this tile's own outstanding transfers: at the limit, wait for the oldest."""
        # Every pending transfer that is not this tile's own is an incoming send.
        if len(self.pending) - self.incoming < self.dma_outstanding:
            return
        own = [t for t in self.pending if t.tag >= 0]
        if len(own) < self.dma_outstanding:
            return
        oldest = own[0]
        if oldest.done > self.t:
            self.stalls[DMA_WAIT] += oldest.done - self.t
            self.t = oldest.done
        oldest.retire()
        self.pending.remove(oldest)
        self.respan()

    def take(self, semaphore: int, count: int) -> None:
        """Take `count` posts of a semaphore (`wait`); raises Blocked while too few arrived."""
        posts = self.posts[semaphore]
        if len(posts) < count:
            raise Blocked(semaphore, count)
        arrival = self.t
        taken: list[Transfer] = []
        for _ in range(count):
            post = posts.popleft()
            arrival = max(arrival, post.arrival)
            if post.transfer is not None:
                taken.append(post.transfer)
        if arrival > self.t:
            self.array_stalls[0] += arrival - self.t
            self.t = arrival
        if taken:
            self.incoming -= len(taken)
            ids = {id(t) for t in taken}
            self.pending = deque(t for t in self.pending if id(t) not in ids)
            self.respan()
            for transfer in taken:
                transfer.retire()
                for _, lo, hi, _ in transfer.ranges:
                    self.held[lo:hi] = True

    def release(self, lo: int, hi: int) -> None:
        """Give local words back to senders (`rel`): a later send into them may start now.

        The front end first waits until no unit of this tile still touches the words, so
        the release (and a signal after it) never comes before their last use.
        """
        sid = self.sram["lmem"].sid
        free = self.t
        for unit in self.compute_units:
            for record in self.inflight[unit]:
                if record[0] <= free:
                    continue
                for k in range(1, len(record), 4):
                    if record[k] == sid and record[k + 1] < hi and lo < record[k + 2]:
                        free = record[0]
                        break
        for transfer in self.pending:
            if transfer.tag >= 0 and transfer.done > free:
                if any(plo < hi and lo < phi for _, plo, phi, _ in transfer.ranges):
                    free = transfer.done
        if free > self.t:
            self.stalls[MEMORY_DEPENDENCY] += free - self.t
            self.t = free
        self.held[lo:hi] = False
        self.released[lo:hi] = self.t


class TileArray:
    """What the tiles share: external memory, its column links, the mesh and the tiles."""

    def __init__(
        self, platform: Platform, contract: MemoryContract, inputs: Mapping[str, np.ndarray]
    ) -> None:
        """Build every tile; tile 0 holds the external memory the others share."""
        assert platform.grid is not None  # only grid platforms reach the array
        self.platform = platform
        self.rows, self.cols = platform.grid
        self.tiles: list[TileMachine] = []
        for tile in range(self.rows * self.cols):
            machine = TileMachine(self, tile, contract, inputs)
            if tile:
                first = self.tiles[0]
                machine.hbm, machine.hbm_bases = first.hbm, first.hbm_bases
                machine.regs["a"][:] = first.regs["a"]
            self.tiles.append(machine)
        self.external = Calendar()
        self.shims = [Calendar() for _ in range(self.cols)]
        self.mesh_links: dict[tuple[int, int, str], Calendar] = {}
        self.routes: dict[tuple[int, int], list[Calendar]] = {}
        self.runnable = [True] * len(self.tiles)
        self.woken = False
        """Whether a post woke a tile since the running tile was chosen."""

    def route(self, source: int, dest: int) -> list[tuple[int, int, str]]:
        """The mesh links from one tile to another: along the row first, then the column."""
        row, col = divmod(source, self.cols)
        to_row, to_col = divmod(dest, self.cols)
        path = []
        while col != to_col:
            step = 1 if to_col > col else -1
            path.append((row, col, "e" if step > 0 else "w"))
            col += step
        while row != to_row:
            step = 1 if to_row > row else -1
            path.append((row, col, "n" if step > 0 else "s"))
            row += step
        return path

    def book(self, calendars: list[tuple[Calendar, int]], t: int) -> int:
        """Reserve every (calendar, length) from one common start >= t; returns that start."""
        while True:
            start = t
            for calendar, length in calendars:
                start = calendar.earliest(start, length)
            if start == t:
                break
            t = start
        for calendar, length in calendars:
            calendar.reserve(start, length)
        return start

    def book_pair(
        self, first: Calendar, first_length: int, second: Calendar, length: int, t: int
    ) -> int:
        """`book` of two calendars (a DMA's shim and the external memory), without the lists."""
        while True:
            start = second.earliest(first.earliest(t, first_length), length)
            if start == t:
                break
            t = start
        first.reserve(start, first_length)
        second.reserve(start, length)
        return start

    def book_links(self, links: list[Calendar], length: int, t: int) -> int:
        """`book` of calendars all held for the same length (a send's route)."""
        while True:
            start = t
            for calendar in links:
                start = calendar.earliest(start, length)
            if start == t:
                break
            t = start
        for calendar in links:
            calendar.reserve(start, length)
        return start

    def links(self, source: int, dest: int) -> list[Calendar]:
        """The calendars of the route from one tile to another (`route`, `mesh`), kept."""
        links = self.routes.get((source, dest))
        if links is None:
            links = self.routes[source, dest] = self.mesh(self.route(source, dest))
        return links

    def mesh(self, path: list[tuple[int, int, str]]) -> list[Calendar]:
        """The calendars of a route's links."""
        links = self.mesh_links
        return [links.get(key) or links.setdefault(key, Calendar()) for key in path]

    def wake(self, tile: int) -> None:
        """A post arrived: let the tile try its wait again (it may be the earliest now)."""
        if not self.runnable[tile]:
            self.runnable[tile] = True
            self.woken = True


def run_array(
    program: Program,
    contract: MemoryContract,
    inputs: Mapping[str, np.ndarray],
    *,
    step_limit: int,
) -> SimResult:
    """Run `program` on every tile of its platform's array; see the module docstring."""
    array = TileArray(program.platform, contract, inputs)
    tiles = array.tiles
    bound = [bind(m, program) for m in tiles]
    pcs = [0] * len(tiles)
    blocked: dict[int, Blocked] = {}
    runnable = array.runnable
    budget = step_limit + 1
    fast = budget - MAX_BLOCK
    executed = 0
    fault: Fault | None = None
    with np.errstate(all="ignore"):
        while True:
            best, earliest, limit = -1, _NEVER, _NEVER
            for i, other in enumerate(tiles):
                if runnable[i]:
                    t = other.t
                    if t < earliest:
                        best, earliest, limit = i, t, earliest
                    elif t < limit:
                        limit = t
            limit += WINDOW
            if best < 0:
                if blocked:
                    fault = _deadlock(program, tiles, pcs, blocked)
                break
            m = tiles[best]
            steps, single = bound[best].steps, bound[best].single
            # Instructions of the other tiles: the run's count is this plus m.executed.
            others = executed - m.executed
            pc = pcs[best]
            array.woken = False
            try:
                # Run this tile while it is the earliest (and nobody it woke could be earlier).
                while m.t <= limit and not array.woken:
                    if others + m.executed <= fast:
                        pc = steps[pc]()
                    elif others + m.executed < budget:
                        pc = single[pc]()
                    else:
                        fault = _fault(
                            program,
                            "step_limit",
                            pc,
                            f"{m.name()}: more than {step_limit} instructions executed by the "
                            "array (an endless loop?)",
                        )
                        break
                pcs[best] = pc
                blocked.pop(best, None)
            except Halt as err:
                offset = bound[best].unwind(err.__traceback__)
                pcs[best] = pc + offset
                m.executed += offset + (pc + offset < len(program))
                runnable[best] = False
                blocked.pop(best, None)
            except Blocked as err:
                offset = bound[best].unwind(err.__traceback__)
                pcs[best] = pc + offset
                m.executed += offset
                blocked[best] = err
                runnable[best] = False
            except SimFault as err:
                offset = bound[best].unwind(err.__traceback__)
                m.executed += offset
                message = err.message
                if not message.startswith("tile "):
                    message = f"{m.name()}: {message}"
                fault = _fault(program, err.kind, pc + offset, message)
            executed = others + m.executed
            if fault is not None:
                break
    return SimResult(
        outputs=tiles[0].outputs(),
        profile=_array_profile(tiles, min(executed, step_limit)),
        fault=fault,
        unwritten=tiles[0].unwritten_outputs(),
    )


def _deadlock(
    program: Program, tiles: list[TileMachine], pcs: list[int], blocked: dict[int, Blocked]
) -> Fault:
    waits = [
        f"{tiles[i].name()} at line {program.instructions[pcs[i]].line} "
        f"('{program.text(pcs[i])}', {len(tiles[i].posts[b.semaphore])} of {b.count} posts)"
        for i, b in sorted(blocked.items())
    ]
    first = min(blocked)
    return _fault(
        program,
        "deadlock",
        pcs[first],
        f"{tiles[first].name()}: every tile that has not halted waits on a semaphore nobody "
        f"can post any more: {'; '.join(waits)}",
    )


def _array_profile(tiles: list[TileMachine], executed: int) -> Profile:
    profiles = [_profile(m, m.executed) for m in tiles]
    cycles = max(p.cycles for p in profiles)
    platform = tiles[0].platform

    def total(field: str) -> dict[str, int]:
        sums: dict[str, int] = {}
        for p in profiles:
            for key, value in getattr(p, field).items():
                sums[key] = sums.get(key, 0) + value
        return sums

    stalls = total("stalls")
    for k, cause in enumerate(ARRAY_STALLS):
        stalls[cause] = sum(m.array_stalls[k] for m in tiles)
    return Profile(
        cycles=cycles,
        time_us=platform.cycles_to_us(cycles),
        instructions=executed,
        instructions_by_unit=total("instructions_by_unit"),
        busy=total("busy"),
        stalls=stalls,
        dma_bytes_read=sum(p.dma_bytes_read for p in profiles),
        dma_bytes_written=sum(p.dma_bytes_written for p in profiles),
    )
