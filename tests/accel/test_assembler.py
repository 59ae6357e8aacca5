"""The assembler's strictness and diagnostics, and assemble -> disassemble -> assemble."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gauntlet.accel import (
    AsmError,
    Diagnostic,
    Platform,
    assemble,
    check_syntax,
    disassemble,
    get_platform,
    platform_names,
)
from gauntlet.accel.isa import Enum, FImm, Imm, Instruction, Label, Mem, Reg

PLATFORMS = {name: get_platform(name) for name in platform_names()}
ALL = [
    pytest.param(name, ins, id=f"{name}.{ins.mnemonic}")
    for name, platform in PLATFORMS.items()
    for ins in platform.isa.instructions
]


def _errors(platform: Platform, source: str, **symbols: int) -> list[Diagnostic]:
    with pytest.raises(AsmError) as caught:
        assemble(platform, source, symbols)
    return [d for d in caught.value.diagnostics if d.severity == "error"]


def _one(platform: Platform, source: str, **symbols: int) -> Diagnostic:
    errors = _errors(platform, source, **symbols)
    assert len(errors) == 1, errors
    return errors[0]


# -- round trips -------------------------------------------------------------------------------


@st.composite
def _operand_text(draw: st.DrawFn, ins: Instruction) -> str:
    texts = []
    for f in ins.fields:
        kind = f.kind
        if isinstance(kind, Reg):
            value: Any = draw(st.integers(0, kind.file.count - 1))
        elif isinstance(kind, Imm):
            align = kind.align
            value = draw(st.integers(-(-kind.lo // align), kind.hi // align)) * align
        elif isinstance(kind, FImm):
            value = draw(st.floats(width=32))
        elif isinstance(kind, Enum):
            value = draw(st.sampled_from(kind.choices))
        elif isinstance(kind, Mem):
            lo, hi = kind.offset_range
            offset = draw(st.integers(lo // kind.align, hi // kind.align)) * kind.align
            value = (draw(st.integers(0, kind.base.count - 1)), offset)
        elif isinstance(kind, Label):
            texts.append("target")
            continue
        else:
            raise AssertionError(f"no strategy for {kind!r}")
        texts.append(kind.format(value, {}))
    return ", ".join(texts)


def _key(program: Any) -> list[tuple[Any, ...]]:
    def bits(value: Any) -> Any:
        if isinstance(value, float):
            return struct.pack("<f", value)
        return value

    return [
        (d.instruction.mnemonic, tuple(bits(v) for v in d.operands), d.partner)
        for d in program.instructions
    ]


@pytest.mark.parametrize(("platform_name", "ins"), ALL)
def test_round_trip(platform_name: str, ins: Instruction) -> None:
    platform = PLATFORMS[platform_name]
    # Platforms without hardware loops (rvv) have no block instructions to wrap.
    opener = next((i for i in platform.isa.instructions if i.block == "open"), None)
    closer = next((i for i in platform.isa.instructions if i.block == "close"), None)
    around_text = _operand_text(opener) if opener is not None else st.just("")

    @settings(max_examples=8, deadline=None, derandomize=True)
    @given(operands=_operand_text(ins), around=around_text)
    def check(operands: str, around: str) -> None:
        line = f"{ins.mnemonic} {operands}".strip()
        if ins.block is not None:
            assert opener is not None and closer is not None
        if ins.block == "open":
            source = f"{line}\nnop\n{closer.mnemonic}\n"
        elif ins.block == "close":
            source = f"{opener.mnemonic} {around}\nnop\n{line}\n"
        else:
            source = f"{line}\n"
        source += "target:\nnop\n"
        first = assemble(platform, source)
        text = disassemble(first)
        second = assemble(platform, text)
        assert _key(second) == _key(first)
        assert dict(second.labels) == dict(first.labels)
        assert disassemble(second) == text

    check()


def test_manual_examples_round_trip(npu: Platform) -> None:
    symbols = {"x": 0x10000, "y": 0x20000, "M": 128}
    for ins in npu.isa.instructions:
        program = assemble(npu, ins.example, symbols)
        assert _key(assemble(npu, disassemble(program))) == _key(program), ins.mnemonic


# -- diagnostics -------------------------------------------------------------------------------


def test_unknown_mnemonic_suggests(npu: Platform) -> None:
    d = _one(npu, "li r1, 1\n    vaddd [r1], [r2], [r3]")
    assert (d.line, d.column, d.found) == (2, 5, "vaddd")
    assert "mnemonic" in d.expected and "did you mean vadd" in d.message


def test_unknown_register(npu: Platform) -> None:
    d = _one(npu, "vadd [r1], [r2], [r40]")
    assert (d.line, d.column, d.found) == (1, 19, "r40")
    assert "r0..r31" in d.expected


def test_register_of_the_wrong_file(npu: Platform) -> None:
    d = _one(npu, "fadd f1, r2, f3")
    assert (d.column, d.found) == (10, "r2")
    assert "f0..f31" in d.expected


def test_immediate_out_of_range(npu: Platform) -> None:
    d = _one(npu, "setvli VLEN + 1")
    assert (d.line, d.column, d.found) == (1, 8, "33")
    assert d.expected == "an integer in 1..32"
    assert "out of range" in d.message


def test_misaligned_offset(npu: Platform) -> None:
    d = _one(npu, "vadd [r1 + 3], [r2], [r3]")
    assert (d.column, d.found) == (12, "3")
    assert "misaligned" in d.message and "multiples of 32" in d.message


def test_operand_count(npu: Platform) -> None:
    d = _one(npu, "vadd [r1], [r2]")
    assert (d.column, d.found) == (1, "2 operand(s)")
    assert d.expected == "3 operand(s): vadd [vd], [va], [vb]"
    extra = _one(npu, "nop r1")
    assert (extra.column, extra.found) == (5, "1 operand(s)")


def test_operand_of_the_wrong_kind(npu: Platform) -> None:
    d = _one(npu, "vadd r1, [r2], [r3]")
    assert (d.column, d.found) == (6, "r1")
    assert d.expected.startswith("a vsram address")


def test_labels(npu: Platform) -> None:
    undefined = _one(npu, "b nowhere")
    assert (undefined.column, undefined.found) == (3, "nowhere")
    assert "undefined label" in undefined.message
    duplicate = _one(npu, "top:\nnop\ntop:\nb top")
    assert (duplicate.line, duplicate.column, duplicate.found) == (3, 1, "top")
    assert "line 1" in duplicate.message


def test_hardware_loop_structure(npu: Platform) -> None:
    unmatched = _one(npu, "nop\nendloop")
    assert (unmatched.line, unmatched.found) == (2, "endloop")
    unclosed = _one(npu, "loopi 2\nnop")
    assert (unclosed.line, unclosed.found) == (1, "loopi")
    deep = _one(npu, "loopi 2\n" * 5 + "nop\n" + "endloop\n" * 5)
    assert (deep.line, deep.found) == (5, "nesting depth 5")
    into = _one(npu, "b inside\nloopi 2\ninside:\nnop\nendloop")
    assert (into.line, into.found) == (1, "a branch to pc 2")
    out = _one(npu, "loopi 2\nb after\nendloop\nafter:\nnop")
    assert "hardware loop" in out.message


def test_expressions(npu: Platform) -> None:
    assert assemble(npu, "li r1, M * (K + 1) // 2 - 0x10", {"M": 4, "K": 7}).instructions[
        0
    ].operands == (1, 0)
    unknown = _one(npu, "li r1, FOO + 1")
    assert (unknown.column, unknown.found) == (8, "FOO + 1")
    assert "unknown name 'FOO'" in unknown.message
    division = _one(npu, "li r1, 7 / 2")
    assert "use // for integer division" in division.message
    broken = _one(npu, "li r1, 3 +")
    assert broken.found == "3 +"


def test_equ(npu: Platform) -> None:
    program = assemble(npu, ".equ TILE, MLEN * MLEN\n.equ TWO, TILE * 2\nli r1, TWO")
    assert program.instructions[0].operands == (1, 2048)
    again = _one(npu, ".equ MLEN, 4")
    assert again.found == "MLEN" and "already defined" in again.message
    register_like = _one(npu, ".equ r5, 4")
    assert register_like.found == "r5"
    directive = _one(npu, ".word 4")
    assert directive.found == ".word" and "unknown directive" in directive.message


def test_empty_operand(npu: Platform) -> None:
    d = _one(npu, "vadd [r1], , [r3]")
    assert (d.column, d.found) == (12, "nothing")


def test_every_error_is_reported(npu: Platform) -> None:
    errors = _errors(npu, "vaddd [r1]\nli r1, 1\nsetvli 0\nb nowhere\n")
    assert [e.line for e in errors] == [1, 3, 4]


def test_syntax_is_case_insensitive_and_comments_are_ignored(npu: Platform) -> None:
    program = assemble(npu, "VADD [R1], [r2 + 32], [R3]  ; add\n# a comment line\nNop # end\n")
    assert [d.instruction.mnemonic for d in program.instructions] == ["vadd", "nop"]
    assert program.instructions[0].operands == ((1, 0), (2, 32), (3, 0))


def test_check_syntax(npu: Platform) -> None:
    assert check_syntax(npu, "nop\nhalt\n") == "All checks passed. 0 error(s), 0 warning(s)"
    report = check_syntax(npu, "vadd [r1]\nli r1, 1 / 2\n")
    lines = report.splitlines()
    assert lines[-1] == "Found problems. 2 error(s), 0 warning(s)"
    assert lines[0].startswith("line 1, col 1: error:")
    assert "found '1 operand(s)'" in lines[0]
    warned = check_syntax(npu, "unused:\nnop\n")
    assert warned.splitlines()[-1] == "All checks passed. 0 error(s), 1 warning(s)"
    assert "label 'unused' is never used" in warned


def test_symbols_from_the_caller(npu: Platform) -> None:
    program = assemble(npu, "la a3, out + 64\nli r2, N", {"out": 0x40000, "N": 96})
    assert [d.operands for d in program.instructions] == [(3, 0x40000 + 64), (2, 96)]


def test_float_immediates(npu: Platform) -> None:
    program = assemble(npu, "fli f1, 0.1\nfli f2, -inf\nfli f3, nan\nfli f4, 1 / 3")
    values = [d.operands[1] for d in program.instructions]
    assert values[0] == float(__import__("numpy").float32(0.1))
    assert values[1] == float("-inf") and values[2] != values[2]
    assert "fli f1, 0.10000000149011612" in disassemble(program)
