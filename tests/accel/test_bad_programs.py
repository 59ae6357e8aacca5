"""Bad programs get clear verdicts through the real judge pipeline (accel/npu/relu).

The relu task's contract: x (ROWS, COLS) in a0 is the input, y (ROWS, COLS) in a1 the output.
Each case is a program with one mistake; the verdict's status and reason must say what and
where.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.judge import judge
from gauntlet.task import Task, load_task

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "npu"

#: One row of x: rows r2 = 1, cols r3 = COLS, HBM stride r4, SRAM stride r5.
ROW = "li r2, 1\nli r3, COLS\nli r4, COLS * itemsize\nli r5, cdiv(COLS, VLEN) * VLEN\n"


@pytest.fixture(scope="module")
def relu() -> Task:
    return load_task(TASKS / "relu")


def _judge(task: Task, folder: Path, source: str, configs: str = "visible") -> tuple[str, str]:
    (folder / "kernel.asm").write_text(source)
    verdict = judge(task, folder, device="sim:npu", seed=11, configs=configs)  # type: ignore[arg-type]
    return verdict.status, verdict.reason


CASES = {
    "reading SRAM nobody wrote": (
        "li r1, 64\nvadd [r1], [r0], [r1]\n",
        "crash",
        ["config C1", "uninitialized_read at line 2", "vsram[0, 32)", "never written"],
    ),
    "DMA past the end of the input": (
        "li r2, ROWS + 1\nli r3, COLS\nli r4, COLS * itemsize\nli r5, COLS\n"
        "dldv [r0], [a0], r2, r3, r4, r5, 0\n",
        "crash",
        ["out_of_bounds at line 5", "dldv", "of 'x'"],
    ),
    "an endless loop": (
        "top:\n    addi r1, r1, 1\n    b top\n",
        "timeout",
        ["step_limit at line 3", "an endless loop?"],
    ),
    "writing the input region": (
        ROW + "dldv [r0], [a0], r2, r3, r4, r5, 0\ndwait 0\ndstv [a0], [r0], r2, r3, r4, r5, 1\n",
        "crash",
        ["protection at line 7", "input region 'x'"],
    ),
    "writing past the end of the output": (
        ROW + "dldv [r0], [a0], r2, r3, r4, r5, 0\ndwait 0\nla a2, y + ROWS * COLS * itemsize\n"
        "dstv [a2], [r0], r2, r3, r4, r5, 1\n",
        "crash",
        ["out_of_bounds at line 8", "in no region"],
    ),
    "exceeding the vector SRAM": (
        "li r1, VSRAM_WORDS\nvbcast [r1], f0\n",
        "crash",
        ["sram_overflow at line 2", "outside the 65536-word vsram"],
    ),
    "a DMA not waited for": (
        ROW + "dldv [r0], [a0], r2, r3, r4, r5, 0\nvmaxs [r0], [r0], f0\n",
        "crash",
        ["dma_race at line 6", "dwait 0"],
    ),
    "an output never written": (
        "halt\n",
        "incorrect",
        ["config C1", "non-finite value", "elements of 'y' were never written"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_program_verdict(relu: Task, tmp_path: Path, case: str) -> None:
    source, status, needles = CASES[case]
    found_status, reason = _judge(relu, tmp_path, source)
    assert found_status == status, reason
    for needle in needles:
        assert needle in reason, f"{needle!r} not in {reason!r}"


def test_unknown_register_is_a_build_error_with_line_and_column(relu: Task, tmp_path: Path) -> None:
    status, reason = _judge(relu, tmp_path, "nop\n    addi r32, r1, 1\n")
    assert status == "build_error"
    assert "line 2, col 10" in reason and "found 'r32'" in reason and "r0..r31" in reason


def test_unknown_mnemonic_is_a_build_error_with_a_suggestion(relu: Task, tmp_path: Path) -> None:
    status, reason = _judge(relu, tmp_path, "halt\nvmaxx [r0], [r0], f0\n")
    assert status == "build_error"
    assert "line 2, col 1" in reason and "unknown instruction 'vmaxx'" in reason
    assert "did you mean vmax" in reason


def test_a_program_right_only_on_the_visible_configs_overfits(relu: Task, tmp_path: Path) -> None:
    # Every visible config has COLS >= 96; on the hidden H1 (COLS = 5) this copy of the
    # baseline moves rows of 96 elements, longer than the SRAM row it reserved.
    baseline = relu.path("baseline.asm").read_text()
    source = baseline.replace("li r23, COLS", "li r23, max(COLS, 96)")
    assert source != baseline
    status, reason = _judge(relu, tmp_path, source, configs="all")
    assert status == "overfit", reason
    assert reason.startswith("hidden config H1") and "the program faulted" in reason
    assert "DMA row of 96 elements" in reason
