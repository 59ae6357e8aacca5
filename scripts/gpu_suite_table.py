"""The per-task GPU suite table of docs/gpu_suite.md, from one or more run directories.

    python scripts/gpu_suite_table.py RUN_DIR [RUN_DIR...] > table.md

For every task judged with the `baseline` and `expert` agents: both statuses, the baseline's and
the expert's median times (geometric mean over the visible configs, from the expert's attempt,
where both ran interleaved), the expert's speedup (geometric mean over the visible configs, and
over the hidden ones), and the fraction of speed of light of each (sol / time, geometric mean).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from gauntlet import suites
from gauntlet.judge.verdict import ConfigResult
from gauntlet.store import AttemptRecord, RunStore


def geomean(values: list[float]) -> float | None:
    kept = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def timed(record: AttemptRecord | None, hidden: bool) -> list[ConfigResult]:
    if record is None or record.verdict is None:
        return []
    return [c for c in record.verdict.configs if c.timing and c.config.hidden == hidden]


def row(task: str, base: AttemptRecord | None, expert: AttemptRecord | None) -> str:
    base_status = base.status if base else "not run"
    expert_status = expert.status if expert else "no expert"
    visible = timed(expert, hidden=False) or timed(base, hidden=False)
    base_us = geomean([c.timing.baseline for c in visible if c.timing])
    base_sol = geomean(
        [c.timing.sol / c.timing.baseline for c in visible if c.timing and c.timing.sol]
    )
    if expert is not None and timed(expert, hidden=False):
        expert_us = geomean([c.timing.candidate for c in visible if c.timing])
        speedup = geomean([c.timing.speedup for c in visible if c.timing])
        hidden = geomean([c.timing.speedup for c in timed(expert, True) if c.timing])
        expert_sol = geomean([c.timing.sol_fraction or 0.0 for c in visible if c.timing])
    else:
        expert_us = speedup = hidden = expert_sol = None
    return (
        f"| {task} | {base_status} | {expert_status} | {fmt(base_us, '.1f')} | "
        f"{fmt(expert_us, '.1f')} | {fmt(speedup, '.2f', '×')} | {fmt(hidden, '.2f', '×')} | "
        f"{fmt(base_sol, '.0%')} | {fmt(expert_sol, '.0%')} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    cells: dict[str, dict[str, AttemptRecord]] = {}
    for run in args.runs:
        for record in RunStore(run).attempts():
            cells.setdefault(record.task_id, {})[record.agent] = record
    print(
        "| task | baseline agent | expert agent | baseline µs | expert µs | speedup (visible) "
        "| speedup (hidden) | baseline SOL | expert SOL |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for task in sorted(cells):
        # The expert agent of a task that ships no expert submits the untouched template.
        ships_expert = suites.load_by_id(task).spec.expert is not None
        expert = cells[task].get("expert") if ships_expert else None
        print(row(task, cells[task].get("baseline"), expert))
    return 0


if __name__ == "__main__":
    sys.exit(main())
