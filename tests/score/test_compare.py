"""Paired comparison of two runs on hand-computed run directories."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gauntlet.compare import compare_runs
from gauntlet.errors import ConfigError, UnknownNameError
from tests.support.rundirs import FAST_BOOTSTRAP, RunBuilder, sample_run

FAST = FAST_BOOTSTRAP


def two_runs(
    tmp_path: Path, a: list[tuple[str, float | None]], b: list[tuple[str, float | None]]
) -> tuple[Path, Path]:
    """Runs A and B; each entry is (task_id, speedup), None for an incorrect attempt."""
    dirs = []
    for name, plan in (("a", a), ("b", b)):
        run = RunBuilder(tmp_path / name, run_id=f"run-{name}")
        for task_id, speedup in plan:
            if speedup is None:
                run.add(task_id, "incorrect", agent=f"agent-{name}")
            else:
                run.add(task_id, "pass", agent=f"agent-{name}", speedup=speedup)
        dirs.append(run.write())
    return dirs[0], dirs[1]


def test_paired_over_shared_tasks_only(tmp_path: Path) -> None:
    run_a, run_b = two_runs(
        tmp_path,
        [("t/1", 1.0), ("t/2", None), ("t/3", 2.0), ("t/only-a", 9.0)],
        [("t/1", 2.0), ("t/2", 4.0), ("t/3", 2.0), ("t/only-b", None)],
    )
    comparison = compare_runs(run_a, run_b, bootstrap=FAST)

    assert [t.task_id for t in comparison.tasks] == ["t/1", "t/2", "t/3"]
    assert comparison.only_a == ["t/only-a"] and comparison.only_b == ["t/only-b"]
    assert (comparison.group_a, comparison.group_b) == ("agent-a", "agent-b")
    pass_rate = comparison.difference("pass_rate")
    assert pass_rate.a == pytest.approx(2 / 3) and pass_rate.b == pytest.approx(1.0)
    assert pass_rate.value == pytest.approx(1 / 3)
    speed = comparison.difference("deployable_speedup")
    # Per-task log ratios: log 2, log 4, 0 -> ratio exp(mean) = 8 ** (1/3) = 2.
    assert speed.kind == "ratio"
    assert speed.value == pytest.approx(2.0)
    assert speed.a == pytest.approx(2.0 ** (1 / 3)) and speed.b == pytest.approx(16.0 ** (1 / 3))


def test_consistent_improvement_is_significant(tmp_path: Path) -> None:
    tasks = [f"t/{i}" for i in range(20)]
    run_a, run_b = two_runs(
        tmp_path,
        [(t, 1.0 + 0.1 * i) for i, t in enumerate(tasks)],
        [(t, (1.0 + 0.1 * i) * (1.2 + 0.01 * (i % 3))) for i, t in enumerate(tasks)],
    )
    speed = compare_runs(run_a, run_b, bootstrap=FAST).difference("deployable_speedup")
    assert speed.significant is True
    assert speed.ci_low is not None and speed.ci_low > 1.0
    assert speed.p_value is not None and speed.p_value < 0.01
    assert speed.verdict == "B is significantly better"
    # The same runs swapped: A is better, by the inverse ratio.
    swapped = compare_runs(run_b, run_a, bootstrap=FAST).difference("deployable_speedup")
    assert swapped.value == pytest.approx(1 / speed.value)  # type: ignore[operator]
    assert swapped.verdict == "A is significantly better"


def test_mixed_differences_are_not_significant(tmp_path: Path) -> None:
    tasks = [f"t/{i}" for i in range(10)]
    run_a, run_b = two_runs(
        tmp_path,
        [(t, 1.5) for t in tasks],
        [(t, 3.0 if i % 2 else 0.75) for i, t in enumerate(tasks)],
    )
    comparison = compare_runs(run_a, run_b, bootstrap=FAST)
    speed = comparison.difference("deployable_speedup")
    assert speed.value == pytest.approx(math.sqrt(2.0 * 0.5))
    assert speed.significant is False and speed.verdict == "no significant difference"
    pass_rate = comparison.difference("pass_rate")
    assert pass_rate.value == 0.0 and pass_rate.p_value == 1.0 and not pass_rate.significant


def test_untimed_runs_compare_pass_rates_only(tmp_path: Path) -> None:
    dirs = []
    for name, statuses in (("a", ["pass", "incorrect"]), ("b", ["pass", "pass"])):
        run = RunBuilder(tmp_path / name, device="cpu")
        for number, status in enumerate(statuses):
            run.add(f"t/{number}", status)
        dirs.append(run.write())
    comparison = compare_runs(*dirs, bootstrap=FAST)
    assert comparison.difference("pass_rate").value == pytest.approx(0.5)
    speed = comparison.difference("deployable_speedup")
    assert speed.value is None and "not timed" in speed.reason


def test_groups_of_one_run(tmp_path: Path) -> None:
    run_dir = sample_run(tmp_path / "run")
    with pytest.raises(ConfigError, match="several agents"):
        compare_runs(run_dir, run_dir)
    with pytest.raises(UnknownNameError, match="unknown group 'nobody'"):
        compare_runs(run_dir, run_dir, group_a="nobody", group_b="toolcall")
    comparison = compare_runs(
        run_dir, run_dir, group_a="scripted", group_b="toolcall@gpt-x", bootstrap=FAST
    )
    assert comparison.group_b == "toolcall@gpt-x" and len(comparison.tasks) == 8
    # toolcall passes one more task (cuda/scan) out of 8.
    assert comparison.difference("pass_rate").value == pytest.approx(1 / 8)


def test_nothing_shared(tmp_path: Path) -> None:
    run_a, run_b = two_runs(tmp_path, [("t/1", 1.0)], [("t/2", 1.0)])
    comparison = compare_runs(run_a, run_b, bootstrap=FAST)
    assert comparison.tasks == []
    assert all(d.reason == "no task attempted by both" for d in comparison.differences)
