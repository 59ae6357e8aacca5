"""Simulated accelerators: ISA framework, assembler, simulator, manual, and the platforms."""

from gauntlet.accel.assembler import (
    AsmError,
    Diagnostic,
    Program,
    assemble,
    check_syntax,
    disassemble,
)
from gauntlet.accel.contract import MemoryContract, Region
from gauntlet.accel.docs import grep_manual, manual
from gauntlet.accel.faults import Fault, FaultKind
from gauntlet.accel.platform import Platform, get_platform, platform_names
from gauntlet.accel.simulator import Profile, SimResult, simulate

__all__ = [
    "AsmError",
    "Diagnostic",
    "Fault",
    "FaultKind",
    "MemoryContract",
    "Platform",
    "Profile",
    "Program",
    "Region",
    "SimResult",
    "assemble",
    "check_syntax",
    "disassemble",
    "get_platform",
    "grep_manual",
    "manual",
    "platform_names",
    "simulate",
]
