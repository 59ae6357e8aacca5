"""Faults: how a simulated program fails, as data.

A fault is what a real accelerator would raise as an exception or silently corrupt; the simulator
stops at the first one and returns it in `SimResult.fault` (STYLE.md: failures of untrusted code
are data). Inside the simulator a fault travels as the `SimFault` exception, and the run loop
attaches the program counter and source line before turning it into a `Fault` record.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

FaultKind = Literal[
    "uninitialized_read",
    "out_of_bounds",
    "sram_overflow",
    "protection",
    "misaligned",
    "dma_race",
    "invalid_operand",
    "step_limit",
    "deadlock",
    "stream_race",
]

#: What each fault means, for the manual and for messages (the tile array's own kinds,
#: `deadlock` and `stream_race`, are documented in its manual's fault table).
FAULT_DOCS: dict[str, str] = {
    "uninitialized_read": (
        "a read of memory or of an accumulator that nothing wrote since the program started "
        "(memory starts poisoned with NaN; the simulator tracks which words were written)"
    ),
    "out_of_bounds": (
        "an HBM access outside every region of the memory contract, or one that runs past the "
        "end of the region it starts in"
    ),
    "sram_overflow": "an SRAM access that runs past the SRAM's capacity (or starts below 0)",
    "protection": "a write to an HBM region that is not an output or scratch region",
    "misaligned": (
        "an address or stride that is not a multiple of what the memory requires (SRAM "
        "alignment, or the element size of the HBM region)"
    ),
    "dma_race": (
        "an access to memory that a DMA transfer not yet waited for (`dwait`, `dfence`) "
        "writes, or a write to memory such a transfer reads"
    ),
    "invalid_operand": (
        "an operand value the instruction cannot execute with (a zero or negative count, "
        "a row longer than its stride, a vector length out of range)"
    ),
    "step_limit": "the program ran more instructions than the step limit (an endless loop?)",
}


class Fault(BaseModel):
    """The first fault of a simulated run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FaultKind
    pc: int
    """Index of the faulting instruction in the program."""
    line: int
    """1-based source line of the faulting instruction (0 when the program ran off no line)."""
    message: str
    instruction: str = ""
    """The faulting instruction as the disassembler prints it."""

    def describe(self) -> str:
        """One line for an agent: where, what, why."""
        where = f"line {self.line}" + (f" ({self.instruction})" if self.instruction else "")
        return f"{self.kind} at {where}: {self.message}"


class SimFault(Exception):
    """A fault on its way from an instruction to the run loop (never leaves the simulator)."""

    def __init__(self, kind: FaultKind, message: str) -> None:
        self.kind: FaultKind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")
