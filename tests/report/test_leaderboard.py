"""The leaderboard across runs: ranking, merging, Markdown and HTML."""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.errors import ConfigError, RecordError
from gauntlet.report import LEADERBOARD_KEYS, leaderboard
from tests.report.dom import find, number_cells
from tests.support.rundirs import FAST_BOOTSTRAP, RunBuilder, geomean

TASKS = ["t/1", "t/2", "t/3", "t/4"]


Plan = dict[tuple[str, str | None], list[float | None]]


def write_run(root: Path, run_id: str, plan: Plan) -> Path:
    """One run; `plan` maps (agent, model) to one speedup per task of TASKS (None: incorrect)."""
    run = RunBuilder(root, run_id=run_id, task_ids=TASKS)
    for (agent, model), speedups in plan.items():
        for task_id, speedup in zip(TASKS, speedups, strict=True):
            if speedup is None:
                run.add(task_id, "incorrect", agent=agent, model=model)
            else:
                run.add(task_id, "pass", agent=agent, model=model, speedup=speedup)
    return run.write()


def test_rows_are_ranked_by_deployable_speedup(tmp_path: Path) -> None:
    run_a = write_run(
        tmp_path / "a",
        "run-a",
        {("slow", "m"): [1.1, 1.1, None, None], ("fast", "m"): [3.0, 2.0, 1.5, None]},
    )
    run_b = write_run(tmp_path / "b", "run-b", {("mid", None): [2.0, 2.0, None, None]})
    board = leaderboard([run_a, run_b], bootstrap=FAST_BOOTSTRAP)

    assert [(r.rank, r.label) for r in board.rows] == [(1, "fast@m"), (2, "mid"), (3, "slow@m")]
    fast = board.rows[0]
    assert fast.metrics["deployable_speedup"].value == pytest.approx(geomean([3.0, 2.0, 1.5, 1.0]))
    assert fast.metrics["pass_rate"].value == 0.75
    assert fast.runs == ["run-a"] and fast.tasks == 4 and fast.attempts == 4
    assert set(fast.metrics) == set(LEADERBOARD_KEYS)
    assert not board.task_sets_differ


def test_a_group_in_several_runs_is_merged(tmp_path: Path) -> None:
    run_a = write_run(tmp_path / "a", "run-a", {("agent", None): [2.0, None, None, None]})
    run_b = write_run(tmp_path / "b", "run-b", {("agent", None): [2.0, 2.0, None, None]})
    (row,) = leaderboard([run_a, run_b], bootstrap=FAST_BOOTSTRAP).rows
    assert row.runs == ["run-a", "run-b"] and row.attempts == 8 and row.tasks == 4
    # t/1 passes in both runs, t/2 in one of two: (1 + 0.5 + 0 + 0) / 4.
    assert row.metrics["pass_rate"].value == pytest.approx(1.5 / 4)


def test_untimed_rows_rank_last_and_different_task_sets_are_flagged(tmp_path: Path) -> None:
    timed = write_run(tmp_path / "a", "run-a", {("gpu-agent", None): [0.5, None, None, None]})
    untimed = RunBuilder(tmp_path / "b", run_id="run-b", device="cpu")
    untimed.add("t/9", "pass", agent="cpu-agent")
    board = leaderboard([untimed.write(), timed], bootstrap=FAST_BOOTSTRAP)
    assert [r.label for r in board.rows] == ["gpu-agent", "cpu-agent"]
    assert board.rows[1].metrics["deployable_speedup"].value is None
    assert board.task_sets_differ
    markdown = board.to_markdown()
    assert "_Rows are over different task sets: compare their figures with care._" in markdown


def test_markdown_table(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "a", "run-a", {("we|ird", "m"): [2.0, 2.0, 2.0, 2.0], ("b", None): [1.0] * 4}
    )
    board = leaderboard([run], bootstrap=FAST_BOOTSTRAP)
    lines = board.to_markdown().splitlines()
    header, rule, first, second = lines[:4]
    assert header.startswith("| # | Agent | Model | Tasks | Deployable speedup | Pass rate |")
    assert "P(hidden correct \\| visible correct)" in header  # pipes escaped
    assert header.count(" | ") == rule.count("|") - 2  # one rule cell per column
    assert first.startswith("| 1 | we\\|ird | m | 4 | 2.00× [2.00× – 2.00×] | 100.0% [100.0% – ")
    assert second.startswith("| 2 | b |  | 4 | 1.00× [1.00× – 1.00×] |")
    assert "| n/a |" in first  # retention: no hidden speedups were recorded
    assert lines[-1] == "_Runs: run-a_"


def test_html_carries_exact_values(tmp_path: Path) -> None:
    run = write_run(tmp_path / "a", "run-a", {("x", None): [1.5, 2.5, None, 1.0]})
    board = leaderboard([run], bootstrap=FAST_BOOTSTRAP)
    html = board.to_html()
    assert "default-src 'none'" in html and "http" not in html.replace("http-equiv", "")
    cells = number_cells(html)
    (speed,) = find(cells, group="x", metric="deployable_speedup")
    assert speed.context["data-value"] == repr(board.rows[0].metrics["deployable_speedup"].value)
    path = board.write_html(tmp_path / "out" / "board.html")
    assert path.read_text() == html
    assert board.write_markdown(tmp_path / "board.md").read_text() == board.to_markdown()


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no run directory given"):
        leaderboard([])
    run = write_run(tmp_path / "a", "run-a", {("x", None): [1.0] * 4})
    with pytest.raises(RecordError, match="given twice"):
        leaderboard([run, run])
    with pytest.raises(RecordError, match="cannot write the leaderboard"):
        leaderboard([run], bootstrap=FAST_BOOTSTRAP).write_html(tmp_path)
