"""Every data instruction of every platform, simulated, against its own reference semantics.

For each instruction Hypothesis draws operands (registers, aligned addresses, immediates, the
vector length) and machine contents; the instruction is assembled from text printed by the
operand kinds, run on a machine, and the machine's state afterwards is compared with the table's
semantics applied to copies of the operands: the written operands must hold exactly the
reference result, and nothing else may change. A new instruction is tested the day it is added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gauntlet.accel import Platform, assemble, get_platform, platform_names
from gauntlet.accel.isa import (
    Enum,
    FImm,
    Imm,
    Instruction,
    Mem,
    Reg,
    RegGroup,
    evaluate_formula,
    round_f32,
)
from gauntlet.accel.machine import Machine, formula_env
from gauntlet.accel.simulator import run

#: Each platform with small SRAMs: the semantics do not depend on capacity, set-up time does.
SMALL_SRAMS = {"npu": {"vsram_words": 8192, "msram_words": 8192}}
PLATFORMS = {name: get_platform(name, SMALL_SRAMS.get(name)) for name in platform_names()}
DATA = [
    pytest.param(name, ins, id=f"{name}.{ins.mnemonic}")
    for name, platform in PLATFORMS.items()
    for ins in platform.isa.instructions
    if ins.semantics is not None
]

FP32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@dataclass
class Case:
    """One drawn instance of an instruction and the machine state it runs on."""

    operands: list[Any] = field(default_factory=list)
    vl: int = 1
    scalars: dict[tuple[str, int], Any] = field(default_factory=dict)
    addresses: dict[int, int] = field(default_factory=dict)
    """Operand index -> effective SRAM address."""
    seed: int = 0


def _shape(platform: Platform, f: Any, vl: int, imms: dict[str, int]) -> tuple[int, ...]:
    env = {**formula_env(platform.param_values()), "vl": vl, **imms}
    return tuple(evaluate_formula(d, env) for d in f.shape)


@st.composite
def cases(draw: st.DrawFn, platform: Platform, ins: Instruction) -> Case:
    case = Case(seed=draw(st.integers(0, 2**32 - 1)))
    case.vl = draw(st.integers(1, int(platform.param_values().get("vlen", 1))))
    shape_names = {n for f in ins.fields for d in f.shape for n in _names(d)}
    imms: dict[str, int] = {}
    for f in ins.fields:
        if isinstance(f.kind, Imm):
            lo, hi = f.kind.lo, f.kind.hi
            if f.name in shape_names:
                hi = min(hi, 4)  # immediates that size operands stay small
            align = f.kind.align
            imms[f.name] = draw(st.integers(-(-lo // align), hi // align)) * align
    mems = [i for i, f in enumerate(ins.fields) if isinstance(f.kind, Mem)]
    bases = draw(st.permutations(range(1, 32)))[: len(mems)]
    extents = {i: math.prod(_shape(platform, ins.fields[i], case.vl, imms)) for i in mems}
    slots: dict[str, set[int]] = {}
    for n, i in enumerate(mems):
        kind = ins.fields[i].kind
        assert isinstance(kind, Mem)
        space = platform.space(kind.space)
        slot_words = -(-max(extents.values()) // space.align) * space.align
        used = slots.setdefault(kind.space, set())
        slot = draw(
            st.integers(0, space.words // slot_words - 1).filter(lambda s, u=used: s not in u)
        )
        used.add(slot)
        address = slot * slot_words
        case.addresses[i] = address
        if isinstance(kind, RegGroup):
            continue  # a register names its own address; no base register to set
        offset = draw(st.integers(-4, 4)) * space.align
        case.scalars[(kind.base.name, bases[n])] = address - offset
    for i, f in enumerate(ins.fields):
        kind = f.kind
        if isinstance(kind, Imm):
            case.operands.append(imms[f.name])
        elif isinstance(kind, FImm):
            case.operands.append(round_f32(draw(FP32)))
        elif isinstance(kind, Enum):
            case.operands.append(draw(st.sampled_from(kind.choices)))
        elif isinstance(kind, RegGroup):
            case.operands.append((kind.base.zero, case.addresses[i]))
        elif isinstance(kind, Mem):
            base = bases[mems.index(i)]
            case.operands.append((base, case.addresses[i] - case.scalars[(kind.base.name, base)]))
        elif isinstance(kind, Reg):
            regfile = kind.file
            taken = {idx for (name, idx) in case.scalars if name == regfile.name}
            index = draw(st.integers(0, regfile.count - 1))
            case.operands.append(index)
            if f.access in ("read", "readwrite") and regfile.kind != "array":
                if index in taken or index == regfile.zero:
                    continue
                case.scalars[(regfile.name, index)] = draw(_scalar_values(regfile))
        else:
            raise AssertionError(f"operand kind {kind!r} has no strategy")
    return case


def _names(formula: str) -> set[str]:
    from gauntlet.accel.isa import formula_names

    return formula_names(formula)


def _scalar_values(regfile: Any) -> st.SearchStrategy[Any]:
    if regfile.kind == "float":
        return FP32.map(round_f32)
    lo, hi = regfile.value_range
    return st.one_of(st.sampled_from([0, 1, lo, hi, -1 if lo < 0 else hi]), st.integers(lo, hi))


def _prepare(platform: Platform, ins: Instruction, case: Case) -> Machine:
    m = Machine(platform)
    rng = np.random.default_rng(case.seed)
    m.set_vl(case.vl)
    for (name, index), value in case.scalars.items():
        m.regs[name][index] = value
    for space in platform.spaces:
        # Random contents everywhere, with a few special values, all marked written except
        # where the instruction only writes (those must become written by the instruction).
        data = rng.standard_normal(space.words).astype(np.float32) * 4
        data[rng.integers(0, space.words, 16)] = [np.inf, -np.inf, np.nan, 0.0] * 4
        m.write_sram(space.name, 0, data)
    for regfile in platform.isa.register_files:
        if regfile.kind == "array":
            for k, value in enumerate(m.regs[regfile.name]):
                if regfile.dtype == "bool":
                    value[...] = rng.integers(0, 2, value.shape).astype(bool)
                else:
                    value[...] = rng.standard_normal(value.shape).astype(np.float32)
                m.reg_written[regfile.name][k] = True
    for i, f in enumerate(ins.fields):
        if isinstance(f.kind, Mem) and f.access == "write":
            state = m.sram[f.kind.space]
            extent = math.prod(_shape(platform, f, case.vl, _imms(ins, case)))
            lo = case.addresses[i]
            state.written[lo : lo + extent] = bytes(extent)
            state.data[lo : lo + extent] = np.nan
    return m


def _imms(ins: Instruction, case: Case) -> dict[str, int]:
    return {
        f.name: v for f, v in zip(ins.fields, case.operands, strict=True) if isinstance(f.kind, Imm)
    }


def _views(platform: Platform, ins: Instruction, case: Case, m: Machine) -> list[Any]:
    """Each operand as the semantics sees it, taken from machine `m` (views, not copies)."""
    imms = _imms(ins, case)
    views: list[Any] = []
    for i, (f, value) in enumerate(zip(ins.fields, case.operands, strict=True)):
        kind = f.kind
        if isinstance(kind, Mem):
            shape = _shape(platform, f, case.vl, imms)
            lo = case.addresses[i]
            views.append(m.sram[kind.space].data[lo : lo + math.prod(shape)].reshape(shape))
        elif isinstance(kind, Reg) and kind.file.kind == "array":
            register = m.regs[kind.file.name][value]
            if f.shape and tuple(f.shape) != tuple(kind.file.shape):
                register = register[: _shape(platform, f, case.vl, imms)[0]]
            views.append(register)
        elif isinstance(kind, Reg):
            views.append(m.regs[kind.file.name][value] if f.access != "write" else None)
        else:
            views.append(value)
    return views


@pytest.mark.parametrize(("platform_name", "ins"), DATA)
def test_instruction_matches_its_semantics(platform_name: str, ins: Instruction) -> None:
    platform = PLATFORMS[platform_name]

    @settings(
        max_examples=10,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=cases(platform, ins))
    def check(case: Case) -> None:
        text = ins.mnemonic
        if ins.fields:
            text += " " + ", ".join(
                f.kind.format(v, {}) for f, v in zip(ins.fields, case.operands, strict=True)
            )
        program = assemble(platform, text)
        m = _prepare(platform, ins, case)
        # The reference runs on a copy of the machine state, through the same semantics.
        reference = _prepare(platform, ins, case)
        args = _views(platform, ins, case, reference)
        with np.errstate(all="ignore"):
            result = ins.semantics(*(a for a in args if a is not None))  # type: ignore[misc]
        for f, value in zip(ins.fields, case.operands, strict=True):
            kind = f.kind
            if isinstance(kind, Reg) and kind.file.kind != "array" and f.access != "read":
                converted = (
                    round_f32(float(result))
                    if kind.file.kind == "float"
                    else kind.file.wrap(int(result))
                )
                if value != kind.file.zero:
                    reference.regs[kind.file.name][value] = converted
            if f.access in ("write", "readwrite"):
                if isinstance(kind, Mem):
                    lo = case.addresses[ins.fields.index(f)]
                    extent = math.prod(_shape(platform, f, case.vl, _imms(ins, case)))
                    reference.sram[kind.space].written[lo : lo + extent] = b"\x01" * extent
        outcome = run(m, program)
        assert outcome.fault is None, outcome.fault
        for space in platform.spaces:
            np.testing.assert_array_equal(
                m.sram[space.name].data, reference.sram[space.name].data, err_msg=space.name
            )
            assert m.sram[space.name].written == reference.sram[space.name].written
        for regfile in platform.isa.register_files:
            ours, theirs = m.regs[regfile.name], reference.regs[regfile.name]
            if regfile.kind == "array":
                for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                    np.testing.assert_array_equal(a, b, err_msg=regfile.register_name(k))
            else:
                for k in range(regfile.count):
                    assert _same(ours[k], theirs[k]), regfile.register_name(k)
                if regfile.zero is not None:
                    assert ours[regfile.zero] == 0

    check()


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or (a != a and b != b))


def test_every_instruction_is_tested() -> None:
    """Data instructions are covered above; the rest need a named test in test_<platform>.py."""
    import importlib

    for name, platform in PLATFORMS.items():
        module = importlib.import_module(f"tests.accel.test_{name}")
        covered: set[str] = set(module.BINDER_TESTS)
        binders = {ins.mnemonic for ins in platform.isa.instructions if ins.binder is not None}
        assert binders == covered, f"{name}: untested {sorted(binders - covered)}"
