"""The report's charts: valid inline SVG, deterministic, sized for many tasks."""

from __future__ import annotations

import re

from gauntlet.report.plots import SOL_LABELLED_TASKS, fast_p_chart, sol_chart, speedup_distribution
from gauntlet.score import TaskScore


def tasks(count: int) -> list[TaskScore]:
    return [
        TaskScore(
            task_id=f"t/{i}",
            track="triton2triton",
            level=1,
            statuses=["pass" if i % 3 else "incorrect"],
            pass_speedups=[1.0 + i / 10 if i % 3 else None],
            pass_fraction=1.0 if i % 3 else 0.0,
            speedup=1.0 + i / 10 if i % 3 else 1.0,
            sol_fraction=i / (count + 1) if i % 3 else 0.0,
        )
        for i in range(count)
    ]


def test_charts_are_inline_svg_and_deterministic() -> None:
    sample = tasks(12)
    for chart in (speedup_distribution, fast_p_chart, sol_chart):
        svg = chart(sample, "salt")
        assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert "<?xml" not in svg and "<!DOCTYPE" not in svg
        assert chart(sample, "salt") == svg
        # Another salt gives other hashed ids (clip paths), so charts of one page never clash.
        ids = set(re.findall(r'id="(p[0-9a-f]{10})"', svg))
        assert ids and ids.isdisjoint(re.findall(r'id="(p[0-9a-f]{10})"', chart(sample, "other")))


def test_sol_chart_names_tasks_only_when_few() -> None:
    few = sol_chart(tasks(SOL_LABELLED_TASKS), "few")
    many = sol_chart(tasks(SOL_LABELLED_TASKS + 60), "many")
    assert "t/5" in few and "t/5" not in many
    height = float(re.search(r'height="([0-9.]+)pt"', many).group(1))  # type: ignore[union-attr]
    assert height < 300
