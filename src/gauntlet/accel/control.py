"""Control-flow binders every platform shares: jumps, compare-and-branch, halt."""

from __future__ import annotations

from collections.abc import Callable

from gauntlet.accel.assembler import Decoded
from gauntlet.accel.isa import Binder, Step
from gauntlet.accel.machine import Halt, Machine


def bind_branch(register_file: str, compare: Callable[[int, int], bool] | None) -> Binder:
    """A jump (`compare` None) or a branch on two registers of `register_file`."""

    def binder(m: Machine, d: Decoded) -> Step:
        # Only the front end writes the integer registers, so they are always ready here.
        regs = m.regs[register_file]
        penalty = int(m.params["branch_penalty"])
        nxt = d.pc + 1
        if compare is None:
            (target,) = d.operands

            def jump() -> int:
                m.t += 1
                m.take_branch(penalty)
                return int(target)

            return jump
        ra, rb, target = d.operands

        def step() -> int:
            m.t += 1
            if compare(regs[ra], regs[rb]):
                m.take_branch(penalty)
                return int(target)
            return nxt

        return step

    return binder


def bind_halt(m: Machine, d: Decoded) -> Step:
    """Stop the program."""

    def step() -> int:
        m.t += 1
        raise Halt

    return step
