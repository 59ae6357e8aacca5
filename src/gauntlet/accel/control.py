"""Binders the platforms share: jumps, branches, hardware loops, the vector length, halt."""

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


def bind_setvl(m: Machine, d: Decoded) -> Step:
    """Set VL from an integer register `r` (at most VLEN; below 1 faults)."""
    (rs,) = d.operands
    regs = m.regs["r"]
    vlen = int(m.params["vlen"])
    nxt = d.pc + 1

    def step() -> int:
        n = regs[rs]
        if n <= 0:
            m.fault("invalid_operand", f"setvl with r{rs} = {n}; the vector length must be >= 1")
        m.set_vl(n if n < vlen else vlen)
        m.t += 1
        return nxt

    return step


def bind_setvli(m: Machine, d: Decoded) -> Step:
    """Set VL from an immediate."""
    (n,) = d.operands
    nxt = d.pc + 1

    def step() -> int:
        m.set_vl(n)
        m.t += 1
        return nxt

    return step


def bind_loop(m: Machine, d: Decoded) -> Step:
    """Open a hardware loop of a register (`loop`) or immediate (`loopi`) count."""
    regs = m.regs["r"]
    (source,) = d.operands
    constant = d.instruction.mnemonic == "loopi"
    body = d.pc + 1
    assert d.partner is not None  # the assembler pairs every loop with its endloop
    after = d.partner + 1
    loops = m.loops

    def step() -> int:
        m.t += 1
        count = source if constant else regs[source]
        if count <= 0:
            return after
        loops.append([count, body])
        return body

    return step


def bind_endloop(m: Machine, d: Decoded) -> Step:
    """Close a hardware loop: go back to its body while iterations remain."""
    loops = m.loops
    nxt = d.pc + 1

    def step() -> int:
        m.t += 1
        top = loops[-1]
        top[0] -= 1
        if top[0] > 0:
            return int(top[1])
        loops.pop()
        return nxt

    return step
