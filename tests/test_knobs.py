"""Knobs as constants of a source: found once, rewritten in place, in Python, assembly and C."""

from __future__ import annotations

import pytest

from gauntlet.knobs import KnobError, apply, current, template_point

PYTHON = '''"""A kernel."""
import triton

BLOCK = 1024
NUM_WARPS: int = 4  # warps per program
MODE = "fast"


def launch():
    BLOCK = 7  # a local name, not the module's constant
    return BLOCK
'''
ASM = """.equ RB_SPLIT, 4   ; rows per block
.equ RB, cdiv(ROWS, RB_SPLIT)
    halt
"""
CUDA = """#define TILE 32
#define  WARPS  4 // warps per block
__global__ void k() {}
"""


def test_python_constants_are_rewritten_and_nothing_else() -> None:
    tuned = apply(PYTHON, "kernel.py", {"BLOCK": 256, "NUM_WARPS": 8, "MODE": "safe"})
    assert "BLOCK = 256\n" in tuned
    assert "NUM_WARPS: int = 8  # warps per program" in tuned
    assert "MODE = 'safe'" in tuned
    assert "    BLOCK = 7  # a local name" in tuned
    assert tuned.replace("256", "1024").replace("= 8", "= 4").replace("'safe'", '"fast"') == PYTHON


def test_asm_and_c_constants_are_rewritten() -> None:
    assert ".equ RB_SPLIT, 16   ; rows per block" in apply(ASM, "kernel.asm", {"RB_SPLIT": 16})
    assert current(ASM, "kernel.asm", "RB") == "cdiv(ROWS, RB_SPLIT)"
    tuned = apply(CUDA, "kernel.cu", {"TILE": 16, "WARPS": 8})
    assert tuned.splitlines()[:2] == ["#define TILE 16", "#define  WARPS  8 // warps per block"]


def test_the_template_point_reads_python_literals_however_spelled() -> None:
    space = {"BLOCK": [256, 1024], "MODE": ["fast", "safe"], "NUM_WARPS": [4, 8]}
    assert template_point(PYTHON, "kernel.py", space) == {
        "BLOCK": 1024,
        "MODE": "fast",
        "NUM_WARPS": 4,
    }


@pytest.mark.parametrize(
    ("text", "file", "name", "message"),
    [
        (PYTHON, "kernel.py", "ALPHA", "exactly once at the top level of kernel.py (found 0)"),
        (PYTHON + "BLOCK = 2\n", "kernel.py", "BLOCK", "(found 2)"),
        ("BLOCK = 2 * 512\n", "kernel.py", "BLOCK", "must be a literal"),
        ("BLOCK = (\n", "kernel.py", "BLOCK", "not valid Python"),
        (ASM + ".equ RB_SPLIT, 8\n", "kernel.asm", "RB_SPLIT", "(found 2)"),
        (CUDA, "kernel.cu", "BLOCK", "as '#define NAME value' (found 0)"),
        (CUDA, "kernel.txt", "TILE", "not a file whose constants can be tuned"),
    ],
)
def test_a_knob_not_defined_once_as_a_constant_is_an_error(
    text: str, file: str, name: str, message: str
) -> None:
    with pytest.raises(KnobError) as info:
        apply(text, file, {name: 1})
    assert message in str(info.value)


def test_a_template_value_outside_the_space_is_an_error() -> None:
    with pytest.raises(KnobError, match=r"'1024' in kernel.py, which is not one of its values"):
        template_point(PYTHON, "kernel.py", {"BLOCK": [64, 128]})
