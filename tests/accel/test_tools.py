"""The accel feedback tools: text answers over (task, source) on the visible configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.accel import tools
from gauntlet.errors import UnknownNameError
from gauntlet.task import Task, load_task

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "npu"


@pytest.fixture(scope="module")
def softmax() -> Task:
    return load_task(TASKS / "softmax")


@pytest.fixture(scope="module")
def expert(softmax: Task) -> str:
    return softmax.path("expert.asm").read_text()


def test_grep_manual_finds_instruction_entries(softmax: Task) -> None:
    text = tools.grep_manual(softmax, "vredmax")
    assert "### vredmax" in text and "Format: `vredmax fd, [va]`" in text


def test_check_syntax_passes_and_lists_errors(softmax: Task, expert: str) -> None:
    assert tools.check_syntax(softmax, expert).startswith(
        "All checks passed. 0 error(s), 0 warning(s)"
    )
    broken = expert.replace("li r1, 1", "li r99, 1").replace("fli f1, 1.0", "flii f1, 1.0")
    text = tools.check_syntax(softmax, broken, "C3")
    assert "unknown register 'r99'" in text and "unknown instruction 'flii'" in text
    assert text.splitlines()[-1] == "Found problems. 2 error(s), 0 warning(s) (config C3)"


def test_run_eval_reports_matching_elements_per_config(softmax: Task, expert: str) -> None:
    text = tools.run_eval(softmax, expert)
    for name in ("C1", "C2", "C3", "C4", "C5"):
        assert f"{name} (" in text
    assert "matching elements 1.0000" in text and "5/5 visible configs correct" in text
    wrong = tools.run_eval(softmax, expert.replace("vmuls", "vadds"))
    assert "0/5 visible configs correct" in wrong and "wrong: trial 1" in wrong


def test_view_output_shows_rows_with_their_errors(softmax: Task, expert: str) -> None:
    # Skipping the division by the row sum leaves every element too large.
    text = tools.view_output(softmax, expert.replace("vmuls", "vadds"), "C1", rows=4)
    lines = text.splitlines()
    assert lines[0].startswith("C1 (") and "wrong" in lines[0]
    assert "output 'y' (64, 256) float32" in text
    assert "row  | max abs err | wrong/cols" in text
    assert "... 60 more rows" in text
    assert "256/256" in text


def test_view_output_of_a_correct_kernel(softmax: Task, expert: str) -> None:
    text = tools.view_output(softmax, expert, "C2", rows=2)
    assert ": correct" in text.splitlines()[0] and "   0/300" in text


def test_instruction_count_and_profile(softmax: Task, expert: str) -> None:
    counts = tools.instruction_count(softmax, expert, "C1")
    assert "instructions executed" in counts and "vector:" in counts
    assert "the baseline executes" in counts
    text = tools.profile(softmax, expert, "C3")
    for needle in (
        "cycles:",
        "baseline cycles:",
        "roofline bound:",
        "busy cycles per unit",
        "stall cycles by cause",
        "dma_wait:",
        "DMA bytes: ",
    ):
        assert needle in text


def test_faults_are_reported_by_every_simulating_tool(softmax: Task) -> None:
    bad = "li r1, VSRAM_WORDS\nvbcast [r1], f0\n"
    assert "sram_overflow at line 2" in tools.run_eval(softmax, bad)
    assert "sram_overflow" in tools.view_output(softmax, bad, "C1")
    assert "sram_overflow" in tools.profile(softmax, bad, "C1")


def test_unknown_config_names_the_visible_ones(softmax: Task, expert: str) -> None:
    with pytest.raises(UnknownNameError, match="C1"):
        tools.profile(softmax, expert, "H1")
