"""Running a program: `simulate(program, contract, inputs)` -> `SimResult`.

Faults of the program (and running past the step limit) are returned in `SimResult.fault`, never
raised; only a caller's mistake (inputs that do not match the contract) raises.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from gauntlet.accel.assembler import Program
from gauntlet.accel.codegen import MAX_BLOCK, bind
from gauntlet.accel.contract import MemoryContract
from gauntlet.accel.faults import Fault, FaultKind, SimFault
from gauntlet.accel.machine import STALL_CAUSES, Halt, Machine

#: Instructions a run may execute unless the caller says otherwise.
DEFAULT_STEP_LIMIT = 20_000_000


class Profile(BaseModel):
    """Where the cycles of a run went."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cycles: int
    """Cycles until every unit and transfer finished."""
    time_us: float
    """`cycles` at the platform's clock."""
    instructions: int
    """Instructions executed (a loop body counts once per iteration)."""
    instructions_by_unit: dict[str, int]
    busy: dict[str, int]
    """Cycles each unit spent working (the front end: one per instruction it executed)."""
    stalls: dict[str, int]
    """Cycles lost, by cause: `dma_wait`, `queue_full` and `register_dependency` stop the front
    end; `memory_dependency` delays a unit until another unit's result is ready; `branch` is the
    refetch after a taken branch."""
    dma_bytes_read: int
    """HBM bytes read by DMA."""
    dma_bytes_written: int
    """HBM bytes written by DMA."""

    @property
    def dma_bytes(self) -> int:
        """HBM bytes moved in either direction."""
        return self.dma_bytes_read + self.dma_bytes_written

    def utilization(self) -> dict[str, float]:
        """Share of the run each unit was busy."""
        return {u: (b / self.cycles if self.cycles else 0.0) for u, b in self.busy.items()}


@dataclass(frozen=True)
class SimResult:
    """What a run produced: the output regions, its profile and its fault, if any."""

    outputs: dict[str, np.ndarray]
    """Each output region, shaped and typed as in the contract (NaN where never written)."""
    profile: Profile
    fault: Fault | None
    unwritten: dict[str, int]
    """Per output region, how many elements the program never wrote."""

    @property
    def ok(self) -> bool:
        """Whether the program ran to its end without a fault."""
        return self.fault is None


def simulate(
    program: Program,
    contract: MemoryContract,
    inputs: Mapping[str, np.ndarray],
    *,
    step_limit: int = DEFAULT_STEP_LIMIT,
) -> SimResult:
    """Run `program` on a fresh machine of its platform.

    Args:
        program: An assembled program (it knows its platform).
        contract: The HBM regions; region `i` is passed in address register `a<i>`.
        inputs: An array per input region, converted to the region's element type.
        step_limit: Instructions after which the run stops with a `step_limit` fault.

    Raises:
        ConfigError: the inputs do not match the contract, or it does not fit in HBM.
    """
    with _collector_paused():
        if program.platform.grid is not None:
            # Imported here: the array's run loop builds on this module's records.
            from gauntlet.accel.array import run_array

            return run_array(program, contract, inputs, step_limit=step_limit)
        machine = Machine(program.platform, contract, inputs)
        return run(machine, program, step_limit=step_limit)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one run (if it was on), then resume it.

    A run keeps its machines, compiled blocks and in-flight records alive to its end, so the
    collector's passes during it free almost nothing, but they promote those objects and so
    trigger full passes over the whole process's heap: a quarter of a tile program's CPU time
    (measured on the tile tasks, 2026-11-27). What a run leaves for the collector is collected
    after it, by the first pass the next allocations trigger. Results do not depend on it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run(machine: Machine, program: Program, *, step_limit: int = DEFAULT_STEP_LIMIT) -> SimResult:
    """Run `program` on an existing machine (tests preload its SRAMs and registers)."""
    bound = bind(machine, program)
    # A run executes step_limit + 1 instructions before it stops at the limit. Blocks run
    # while a whole one still fits, single instructions after that.
    budget = step_limit + 1
    fast = budget - MAX_BLOCK
    steps, single = bound.steps, bound.single
    pc = 0
    fault: Fault | None = None
    with np.errstate(all="ignore"):
        try:
            # The loop is the whole interpreter: a step runs a block and returns the next
            # program counter; the sentinel step past the end stops the run.
            while machine.executed <= fast:
                pc = steps[pc]()
            while machine.executed < budget:
                pc = single[pc]()
            fault = _fault(
                program,
                "step_limit",
                pc,
                f"more than {step_limit} instructions executed (an endless loop?)",
            )
            machine.executed = step_limit
        except Halt as err:
            offset = bound.unwind(err.__traceback__)
            pc += offset
            # `halt` counts as executed; running off the end (the sentinel) does not.
            machine.executed += offset + (pc < len(program))
        except SimFault as err:
            offset = bound.unwind(err.__traceback__)
            machine.executed += offset
            fault = _fault(program, err.kind, pc + offset, err.message)
    return SimResult(
        outputs=machine.outputs(),
        profile=_profile(machine, machine.executed),
        fault=fault,
        unwritten=machine.unwritten_outputs(),
    )


def _fault(program: Program, kind: FaultKind, pc: int, message: str) -> Fault:
    inside = 0 <= pc < len(program)
    return Fault(
        kind=kind,
        pc=pc,
        line=program.instructions[pc].line if inside else 0,
        message=message,
        instruction=program.text(pc) if inside else "",
    )


def _profile(machine: Machine, executed: int) -> Profile:
    platform = machine.platform
    counts = list(machine.counts)
    busy = list(machine.busy)
    frontend = next(i for i, u in enumerate(platform.units) if u.kind == "frontend")
    # The front end runs every instruction no other unit took; each costs it one cycle.
    counts[frontend] = executed - sum(c for i, c in enumerate(counts) if i != frontend)
    busy[frontend] = counts[frontend]
    cycles = machine.cycles()
    return Profile(
        cycles=cycles,
        time_us=platform.cycles_to_us(cycles),
        instructions=executed,
        instructions_by_unit={u.name: counts[i] for i, u in enumerate(platform.units)},
        busy={u.name: busy[i] for i, u in enumerate(platform.units)},
        stalls=dict(zip(STALL_CAUSES, machine.stalls, strict=True)),
        dma_bytes_read=machine.dma_bytes_read,
        dma_bytes_written=machine.dma_bytes_written,
    )
