"""Random npu programs for differential tests of the simulator.

`random_program(seed)` writes a program that mixes every kind of instruction the npu has (scalar,
vector, matrix, DMA, hardware loops, branches) with the operands drawn at random, so that most
runs succeed while a steady share of them fault (out-of-bounds and misaligned addresses, reads of
unwritten SRAM, DMA races, the step limit). `run_digest` runs one and reduces everything a caller
can observe (outputs, profile, fault) and the machine's architectural state to plain data, so two
implementations of the simulator can be compared exactly.
"""

from __future__ import annotations

import hashlib
import random
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from gauntlet.accel import MemoryContract, assemble, get_platform
from gauntlet.accel.machine import Machine
from gauntlet.accel.simulator import run

#: Hardware configurations the programs run on: the defaults and a small, awkward one.
CONFIGS: tuple[dict[str, int], ...] = (
    {},
    {"mlen": 16, "vlen": 64, "queue_depth": 2, "dma_outstanding": 3, "accumulators": 2},
)

_INT_OPS = ("add", "sub", "mul", "min", "max")
_IMM_OPS = ("addi", "muli", "slli", "srai", "divi", "remi")
_FLOAT_OPS = ("fadd", "fsub", "fmul", "fdiv", "fmax", "fmin")
_VEC_VV = ("vadd", "vsub", "vmul", "vmax", "vmin")
_VEC_UNARY = ("vexp", "vrecip", "vrsqrt", "vbf16", "vmov")


@dataclass(frozen=True)
class Case:
    """One random program and how to run it."""

    source: str
    config: dict[str, int]
    step_limit: int


def random_program(seed: int) -> Case:
    """A random program (a few hundred instructions when its loops run) and its step limit."""
    rng = random.Random(seed)
    config = CONFIGS[seed % len(CONFIGS)]
    params = get_platform("npu", config).param_values()
    mlen, vlen = int(params["mlen"]), int(params["vlen"])
    tile = mlen * mlen
    align = min(mlen, vlen)
    loaded = 4096  # words of each SRAM the preamble fills

    def vaddr(extent: int) -> int:
        """A word address whose `extent` words were loaded (now and then, one that is not)."""
        roll = rng.random()
        if roll < 0.003:
            return rng.choice([loaded, 65536 - align])
        return rng.randrange(0, (loaded - extent) // align + 1) * align

    lines = [
        "li r2, 64",
        "li r3, 64",
        "li r4, 256",
        "li r5, 64",
        "dldv [r0], [a0], r2, r3, r4, r5, 0",
        "dldm [r0], [a0], r2, r3, r4, r5, 1",
        "li r22, 4",
        "mzero acc0",
        "mzero acc1",
    ]
    if rng.random() < 0.97:
        lines.append("dwait 0")
    if rng.random() < 0.97:
        lines.append("dwait 1")
    labels = 0
    depth = 0
    pending_labels: list[str] = []

    def base(extent: int) -> str:
        register = rng.choice(["r6", "r7", "r8"])
        lines.append(f"li {register}, {vaddr(extent)}")
        return register

    def mem(extent: int) -> str:
        if rng.random() < 0.5:
            return f"[{base(extent)}]"
        return f"[r0 + {vaddr(extent)}]"

    def odd_base(extent: int) -> str:
        """Now and then a misaligned or out-of-range address, through a register."""
        if rng.random() < 0.003:
            lines.append(f"li r6, {rng.choice([align // 2 or 1, -align, 1 << 20])}")
            return "[r6]"
        return mem(extent)

    def reg(prefix: str = "r", lo: int = 9, hi: int = 20) -> str:
        return f"{prefix}{rng.randrange(lo, hi)}"

    for _ in range(rng.randrange(20, 70)):
        kind = rng.random()
        if kind < 0.18:
            op = rng.choice(_INT_OPS + _IMM_OPS + ("li", "mov"))
            if op == "li":
                lines.append(f"li {reg()}, {rng.randrange(-100, 5000)}")
            elif op == "mov":
                lines.append(f"mov {reg()}, {reg()}")
            elif op in _IMM_OPS:
                imm = rng.randrange(1, 31) if op in ("slli", "srai", "divi", "remi") else 7
                lines.append(f"{op} {reg()}, {reg()}, {imm}")
            else:
                lines.append(f"{op} {reg()}, {reg()}, {reg()}")
        elif kind < 0.3:
            op = rng.choice(_FLOAT_OPS + ("fli", "fsqrt", "itof", "ftoi", "fmov"))
            if op == "fli":
                value = rng.choice(["1.5", "-0.25", "3", "1e-3", "inf", "0"])
                lines.append(f"fli {reg('f', 1, 8)}, {value}")
            elif op in ("fsqrt", "fmov"):
                lines.append(f"{op} {reg('f', 1, 8)}, {reg('f', 1, 8)}")
            elif op == "itof":
                lines.append(f"itof {reg('f', 1, 8)}, {reg()}")
            elif op == "ftoi":
                lines.append(f"ftoi {reg()}, {reg('f', 1, 8)}")
            else:
                lines.append(f"{op} {reg('f', 1, 8)}, {reg('f', 1, 8)}, {reg('f', 1, 8)}")
        elif kind < 0.55:
            op = rng.choice(
                _VEC_VV + tuple(f"{v}s" for v in _VEC_VV) + _VEC_UNARY + ("vfma", "vbcast")
            )
            if op.endswith("s") and op[:-1] in _VEC_VV or op == "vbcast":
                if op == "vbcast":
                    lines.append(f"vbcast {mem(vlen)}, {reg('f', 1, 8)}")
                else:
                    lines.append(f"{op} {odd_base(vlen)}, {mem(vlen)}, {reg('f', 1, 8)}")
            elif op in _VEC_UNARY:
                lines.append(f"{op} {mem(vlen)}, {mem(vlen)}")
            else:
                lines.append(f"{op} {mem(vlen)}, {mem(vlen)}, {mem(vlen)}")
        elif kind < 0.62:
            op = rng.choice(["vredsum", "vredmax", "setvli", "vcmp", "vsel", "viota"])
            if op == "setvli":
                lines.append(f"setvli {rng.choice([vlen, vlen, 1, 3, vlen // 2])}")
            elif op == "vcmp":
                cond = rng.choice(["lt", "ge", "eq", "ne"])
                lines.append(f"vcmp m{rng.randrange(4)}, {mem(vlen)}, {mem(vlen)}, {cond}")
            elif op == "vsel":
                lines.append(f"vsel {mem(vlen)}, m{rng.randrange(4)}, {mem(vlen)}, {mem(vlen)}")
            elif op == "viota":
                lines.append(f"viota {mem(vlen)}")
            else:
                lines.append(f"{op} {reg('f', 1, 8)}, {mem(vlen)}")
        elif kind < 0.75:
            acc = f"acc{rng.randrange(2)}"
            op = rng.choice(["mzero", "mm", "mmt", "mmb", "mv", "mvt", "mst", "mld", "mm"])
            if op == "mzero":
                lines.append(f"mzero {acc}")
            elif op in ("mm", "mmt"):
                lines.append(f"{op} {acc}, {mem(tile)}, [r0 + {rng.randrange(0, 3) * tile}]")
            elif op == "mmb":
                n = rng.randrange(1, 3)
                lines.append(f"mmb {acc}, {mem(n * tile)}, [r0], {n}")
            elif op in ("mv", "mvt"):
                lines.append(f"{op} {mem(mlen)}, {mem(mlen)}, [r0 + {tile}]")
            elif op == "mst":
                lines.append(f"mst [r0 + {rng.randrange(0, 3) * tile}], {acc}")
            else:
                lines.append(f"mld {acc}, {mem(tile)}")
        elif kind < 0.82:
            op = rng.choice(["dcpy", "dldv", "dwait", "dfence", "dstv"])
            tag = rng.randrange(3)
            if op == "dcpy":
                lines.append(f"li r21, {rng.choice([vlen, tile, 64])}")
                lines.append(f"dcpy [r0 + {rng.randrange(0, 4) * tile}], {mem(tile)}, r21, {tag}")
            elif op == "dldv":
                at = rng.randrange(0, 4) * 1024
                lines.append(f"dldv [r0 + {at}], [a0], r22, r3, r4, r5, {tag}")
            elif op == "dstv":
                lines.append(f"dstv [a1], [r0], r22, r3, r4, r5, {tag}")
            elif op == "dwait":
                lines.append(f"dwait {tag}")
            else:
                lines.append("dfence")
            if rng.random() < 0.8:
                lines.append(f"dwait {tag}")
        elif kind < 0.9 and depth < 2:
            lines.append(f"loopi {rng.randrange(0, 4)}")
            depth += 1
        elif kind < 0.95 and depth:
            lines.append("endloop")
            depth -= 1
        elif kind < 0.98 and not depth:
            label = f"L{labels}"
            labels += 1
            lines.append(f"bne {reg()}, {reg()}, {label}")
            pending_labels.append(label)
        elif pending_labels and not depth:
            lines.append(f"{pending_labels.pop()}:")
        elif rng.random() < 0.2:
            lines.append("nop")
    lines.extend(["endloop"] * depth)
    lines.extend(f"{label}:" for label in pending_labels)
    lines.extend(["dfence", "dstv [a1], [r0], r2, r3, r4, r5, 2", "dwait 2"])
    if rng.random() < 0.1:
        lines.insert(rng.randrange(8, len(lines)), "halt")
    step_limit = rng.choice([1_000_000] * 4 + [rng.randrange(1, 400)])
    return Case("\n".join(lines) + "\n", config, step_limit)


def _floats(values: list[Any]) -> bytes:
    return b"".join(
        struct.pack("<d", v) if isinstance(v, float) else repr(v).encode() for v in values
    )


def run_digest(case: Case) -> dict[str, Any]:
    """Run a case on a fresh machine; what it observably did and the state it left, as data."""
    npu = get_platform("npu", case.config)
    x = np.random.default_rng(len(case.source)).standard_normal((64, 64)).astype(np.float32)
    contract = MemoryContract.pack(inputs={"x": (64, 64)}, outputs={"y": (64, 64)})
    program = assemble(npu, case.source, contract.symbols())
    machine = Machine(npu, contract, {"x": x})
    result = run(machine, program, step_limit=case.step_limit)
    state = hashlib.sha256()
    for name in sorted(machine.sram):
        state.update(machine.sram[name].data.tobytes())
        state.update(bytes(machine.sram[name].written))
    for name in sorted(machine.regs):
        values = machine.regs[name]
        if values and isinstance(values[0], np.ndarray):
            for value in values:
                state.update(value.tobytes())
        else:
            state.update(_floats(values[: len(values) - 1]))
    for name in sorted(machine.reg_written):
        state.update(repr(machine.reg_written[name]).encode())
    outputs = {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in result.outputs.items()}
    return {
        "outputs": outputs,
        "profile": result.profile.model_dump(),
        "fault": result.fault.model_dump() if result.fault else None,
        "unwritten": result.unwritten,
        "state": state.hexdigest(),
    }


def golden(count: int) -> dict[str, dict[str, Any]]:
    """The digests of the first `count` random programs, keyed by seed."""
    return {str(seed): run_digest(random_program(seed)) for seed in range(count)}


if __name__ == "__main__":
    import json
    import sys

    json.dump(golden(int(sys.argv[1])), sys.stdout, indent=1, sort_keys=True)
