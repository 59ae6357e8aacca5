"""Paired comparison of two runs (or two groups) on the tasks both attempted.

Differences are taken per task and resampled together (a paired bootstrap over tasks), which
removes the variation between tasks that an unpaired comparison would carry: two agents on the
same hard tasks differ much less than their separate intervals suggest.

* Pass rate: the mean of `pass_B - pass_A` per task.
* Deployable speedup: the mean of `log speedup_B - log speedup_A` per task, reported as the
  ratio `exp(mean)` (B's geometric mean over A's on the shared tasks).

A difference is significant when its 95% interval excludes 0 (a ratio of 1). The p-value is the
usual bootstrap approximation: twice the share of resamples on the far side of 0.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gauntlet.score import (
    DEFAULT_BOOTSTRAP,
    Bootstrap,
    TaskScore,
    bootstrap_distribution,
    group_label,
    groups_of,
    load_run,
    not_timed,
    percentile_interval,
    score_tasks,
    select_key,
)

ComparedMetric = Literal["pass_rate", "deployable_speedup"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PairedTask(_Frozen):
    """One task both sides attempted."""

    task_id: str
    pass_a: float
    pass_b: float
    speedup_a: float | None = None
    """Deployable speedup of A on the task (None: not timed)."""
    speedup_b: float | None = None


class PairedDifference(_Frozen):
    """B against A on one metric."""

    key: ComparedMetric
    label: str
    kind: Literal["difference", "ratio"]
    """`difference`: B - A; `ratio`: B / A."""
    a: float | None = None
    """A's value over the shared tasks."""
    b: float | None = None
    value: float | None = None
    """The difference or ratio; None when n/a (see `reason`)."""
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    reason: str = ""

    @property
    def verdict(self) -> str:
        """One line: which side is better, or that the difference is not significant."""
        if self.value is None:
            return f"n/a ({self.reason})"
        if not self.significant:
            return "no significant difference"
        better = self.value > (1.0 if self.kind == "ratio" else 0.0)
        return "B is significantly better" if better else "A is significantly better"


class Comparison(_Frozen):
    """Run B against run A."""

    run_a: str
    run_b: str
    group_a: str
    group_b: str
    tasks: list[PairedTask]
    """The tasks both attempted."""
    only_a: list[str] = Field(default_factory=list)
    only_b: list[str] = Field(default_factory=list)
    differences: list[PairedDifference]
    bootstrap: Bootstrap

    def difference(self, key: ComparedMetric) -> PairedDifference:
        """The comparison on one metric."""
        return next(d for d in self.differences if d.key == key)


def _paired(
    key: ComparedMetric,
    label: str,
    a: list[float],
    b: list[float],
    *,
    log: bool,
    bootstrap: Bootstrap,
) -> PairedDifference:
    kind: Literal["difference", "ratio"] = "ratio" if log else "difference"
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if log:
        xa, xb = np.log(xa), np.log(xb)
    deltas = xb - xa
    stats = bootstrap_distribution(deltas, bootstrap=bootstrap)
    low, high = percentile_interval(stats, bootstrap.level)
    mean = float(deltas.mean())
    low, high = min(low, mean), max(high, mean)
    p_value = min(1.0, 2 * min(float(np.mean(stats <= 0)), float(np.mean(stats >= 0))))
    significant = low > 0 or high < 0

    def back(x: float) -> float:
        return math.exp(x) if log else x

    return PairedDifference(
        key=key,
        label=label,
        kind=kind,
        a=back(float(xa.mean())),
        b=back(float(xb.mean())),
        value=back(mean),
        ci_low=back(low),
        ci_high=back(high),
        p_value=p_value,
        significant=significant,
    )


def compare_tasks(
    a: list[TaskScore], b: list[TaskScore], *, bootstrap: Bootstrap = DEFAULT_BOOTSTRAP
) -> tuple[list[PairedTask], list[PairedDifference]]:
    """Pair two groups' task scores on the tasks both attempted and compare them.

    Args:
        a: Task scores of side A.
        b: Task scores of side B.
        bootstrap: Resamples, seed and coverage of the paired bootstrap.

    Returns:
        The paired tasks and one difference per compared metric.
    """
    by_b = {t.task_id: t for t in b if t.attempt_ids}
    pairs = [(t, by_b[t.task_id]) for t in a if t.attempt_ids and t.task_id in by_b]
    tasks = [
        PairedTask(
            task_id=ta.task_id,
            pass_a=ta.pass_fraction,
            pass_b=tb.pass_fraction,
            speedup_a=ta.speedup,
            speedup_b=tb.speedup,
        )
        for ta, tb in pairs
    ]
    if not pairs:
        reason = "no task attempted by both"
        return tasks, [
            PairedDifference(key="pass_rate", label="Pass rate", kind="difference", reason=reason),
            PairedDifference(
                key="deployable_speedup", label="Deployable speedup", kind="ratio", reason=reason
            ),
        ]
    differences = [
        _paired(
            "pass_rate",
            "Pass rate",
            [t.pass_a for t in tasks],
            [t.pass_b for t in tasks],
            log=False,
            bootstrap=bootstrap,
        )
    ]
    untimed = next((t for pair in pairs for t in pair if not t.timed), None)
    if untimed is not None:
        differences.append(
            PairedDifference(
                key="deployable_speedup",
                label="Deployable speedup",
                kind="ratio",
                reason=not_timed(untimed.timing_note),
            )
        )
    else:
        differences.append(
            _paired(
                "deployable_speedup",
                "Deployable speedup",
                [t.speedup_a or 1.0 for t in tasks],
                [t.speedup_b or 1.0 for t in tasks],
                log=True,
                bootstrap=bootstrap,
            )
        )
    return tasks, differences


def compare_runs(
    run_a: Path | str,
    run_b: Path | str,
    *,
    group_a: str | None = None,
    group_b: str | None = None,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
) -> Comparison:
    """Compare run B against run A, paired over the tasks both attempted.

    Args:
        run_a: Run directory A (may be the same directory as B, with other groups).
        run_b: Run directory B.
        group_a: `AGENT` or `AGENT@MODEL` in A; may be left out when A holds one group.
        group_b: The same for B.
        bootstrap: Resamples, seed and coverage of the paired bootstrap.

    Raises:
        RecordError: A run directory cannot be read.
        ConfigError: A run holds several groups and none was named.
        UnknownNameError: A named group is not in its run.
    """
    sides = []
    for run_dir, selector in ((run_a, group_a), (run_b, group_b)):
        info, records = load_run(run_dir)
        groups = groups_of(records)
        key = select_key(list(groups), selector, where=str(run_dir))
        tasks = score_tasks(groups[key], info.task_ids, context=records)
        sides.append((group_label(*key), tasks))
    (label_a, tasks_a), (label_b, tasks_b) = sides
    paired, differences = compare_tasks(tasks_a, tasks_b, bootstrap=bootstrap)
    shared = {t.task_id for t in paired}
    return Comparison(
        run_a=str(run_a),
        run_b=str(run_b),
        group_a=label_a,
        group_b=label_b,
        tasks=paired,
        only_a=[t.task_id for t in tasks_a if t.attempt_ids and t.task_id not in shared],
        only_b=[t.task_id for t in tasks_b if t.attempt_ids and t.task_id not in shared],
        differences=differences,
        bootstrap=bootstrap,
    )
