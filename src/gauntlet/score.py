"""Scores of a run: the benchmark's aggregates over all of its tasks, each with a bootstrap CI.

Definitions (DESIGN.md, "Runs, storage, scoring, reports"):

* Scores are per (agent, model) group within a run and are taken over **all** tasks of the run,
  failures included. A task listed in `run.json` with no recorded attempt for a group counts as
  a failure (`missing`): it passes nothing and deploys the baseline.
* A task passes iff its attempt's status is `pass`. With several attempts per task (`--attempts
  K`), each task is scored by the mean over its attempts: the arithmetic mean of indicators
  (pass, fast_p, visible/hidden correct) and of costs, the geometric mean of speedups. Every
  task then weighs the same, however many attempts it has.
* A task's deployable speedup is its verdict's speedup (geometric mean over the visible
  configs) when it passes and 1.0 when it does not (the baseline is kept).
* Speed figures need times. A task judged on a device that is not timed (every verdict of it
  says so: the `cpu` device) has no speed figures, and is left out of the speed metrics — a
  choice made by the device, before any agent acted, so the rest is no set of survivors; the
  metric's task count says how many remain. A passing attempt on a timed device whose verdict
  still carries no speedup makes every speed metric of its group "n/a": a figure over the
  other tasks would be one over survivors, and 1.0 would be invented.
* Fraction of speed-of-light: a passing attempt's verdict figure, 0.0 for an attempt that does
  not pass (it delivers no kernel).
* Generalization: P(hidden correct | visible correct) over the attempts whose visible configs
  were all correct (each task weighted by its share of such attempts), and the hidden/visible
  speedup retention, `hidden_speedup / speedup` of the passing attempts where both exist.
* For `accel` tasks, k/n: how many of the n visible configs are correct.
* Confidence intervals: a percentile bootstrap over tasks (numpy, fixed seed), 95% by default.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from gauntlet.errors import ConfigError, RecordError, UnknownNameError
from gauntlet.judge.pipeline import device_is_timed
from gauntlet.store import AttemptRecord, RunInfo, RunStore

logger = logging.getLogger(__name__)

#: The p of the fast_p metrics: share of tasks that pass and are more than p times faster.
FAST_P: tuple[float, ...] = (1.0, 1.5, 2.0)

#: Visible configs of an `accel` task, for k/n when no verdict of the task says otherwise.
ACCEL_VISIBLE_CONFIGS = 5

#: Status shown for a task of the run that has no recorded attempt.
MISSING = "missing"

#: Resamples are drawn in blocks of this many, to bound memory on large runs.
_BLOCK = 2_000

#: A group's key: (agent, model).
GroupKey = tuple[str, str | None]

Unit = Literal["rate", "speedup", "ratio", "fraction", "seconds", "count", "usd"]
Scope = Literal["all", "defined"]
Dimension = Literal["track", "level", "platform"]

#: The breakdowns every group gets, in display order.
DIMENSIONS: tuple[Dimension, ...] = ("track", "level", "platform")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bootstrap(_Frozen):
    """How confidence intervals are drawn."""

    resamples: int = Field(default=10_000, gt=0)
    """Bootstrap resamples of the tasks."""
    seed: int = 0
    """Seed of numpy's generator; the same seed gives the same intervals."""
    level: float = Field(default=0.95, gt=0, lt=1)
    """Coverage of the percentile interval."""


#: Ten thousand resamples, seed 0, 95%.
DEFAULT_BOOTSTRAP = Bootstrap()


class Metric(_Frozen):
    """One aggregate with its confidence interval, or the reason it has none."""

    key: str
    value: float | None = None
    """None when the metric is n/a (see `reason`)."""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    """Tasks the metric is taken over."""
    reason: str = ""
    """Why the value is n/a; empty when there is a value."""

    @property
    def available(self) -> bool:
        """Whether the metric has a value."""
        return self.value is not None


class TaskScore(_Frozen):
    """One task of a group: its attempts reduced to per-task values."""

    task_id: str
    track: str
    level: int
    platform: str | None = None
    attempt_ids: list[str] = Field(default_factory=list)
    statuses: list[str] = Field(default_factory=list)
    """Status of each attempt (`missing` alone when none was recorded)."""
    pass_speedups: list[float | None] = Field(default_factory=list)
    """Per attempt: the verdict's speedup if it passed and was timed, else None."""
    pass_fraction: float = 0.0
    timed: bool = True
    """False when a passing attempt carries no speedup: speed figures are then unknown."""
    untimed_device: bool = False
    """Every verdict of the task is from a device that is not timed (judged by the device, not
    the outcome: a build error on a GPU still counts as timed)."""
    timing_note: str = ""
    """Why a passing attempt carries no speedup."""
    speedup: float | None = None
    """Deployable speedup: geometric mean over attempts, 1.0 for one that does not pass."""
    passing_speedup: float | None = None
    """Geometric mean over the passing attempts only (None if none passed)."""
    sol_fraction: float | None = None
    """Mean over attempts of the fraction of speed-of-light (0.0 for one that does not pass)."""
    sol_note: str = ""
    """Why `sol_fraction` is unknown."""
    visible_ok: float = 0.0
    """Share of attempts correct on all visible configs."""
    hidden_given_visible: float | None = None
    """Among those, the share also correct on the hidden configs."""
    retention: float | None = None
    """Geometric mean of `hidden_speedup / speedup` over passing attempts that have both."""
    visible_configs_correct: float | None = None
    """`accel`: mean number k of visible configs correct."""
    visible_configs: int | None = None
    """`accel`: the number n of visible configs."""
    wall_s: float | None = None
    turns: float | None = None
    tokens: float | None = None
    cost_usd: float | None = None

    @property
    def status(self) -> str:
        """The status, or a summary such as `pass 2/3` when attempts disagree."""
        if len(set(self.statuses)) == 1:
            return self.statuses[0]
        passed = sum(s == "pass" for s in self.statuses)
        return f"pass {passed}/{len(self.statuses)}"

    @property
    def passed(self) -> bool:
        """Whether every attempt of the task passed."""
        return self.pass_fraction == 1.0

    def fast(self, p: float) -> float | None:
        """Share of attempts that pass and are more than `p` times faster (None: not timed)."""
        if not self.timed:
            return None
        return _mean(s is not None and s > p for s in self.pass_speedups)

    def k_of_n(self) -> str | None:
        """`k/n` of an `accel` task (k a mean when attempts disagree)."""
        if self.visible_configs_correct is None or self.visible_configs is None:
            return None
        return f"{self.visible_configs_correct:g}/{self.visible_configs}"


@dataclass(frozen=True)
class MetricSpec:
    """How one metric is computed from task scores, and how it is shown."""

    key: str
    label: str
    unit: Unit
    value: Callable[[TaskScore], float | None]
    """The task's value; None means out of scope ("defined") or unknown ("all")."""
    geometric: bool = False
    """Aggregate as a geometric mean (speedups) rather than an arithmetic one."""
    scope: Scope = "all"
    """`all`: every task counts and one unknown value makes the metric n/a; `defined`: the
    metric is taken over the tasks that have a value."""
    weight: Callable[[TaskScore], float] | None = None
    needs_timing: bool = False
    empty_reason: str = "no task in scope"
    unknown_reason: str = "unknown for task '{task_id}'"
    description: str = ""


def _fast_spec(p: float) -> MetricSpec:
    return MetricSpec(
        key=f"fast_{p:.1f}",
        label=f"fast_{p:.1f}",
        unit="rate",
        value=lambda t: t.fast(p),
        needs_timing=True,
        description=f"share of tasks that pass and are more than {p:g}x faster",
    )


#: Every metric, once, in display order; reports, the leaderboard and the CLI loop over it.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        key="pass_rate",
        label="Pass rate",
        unit="rate",
        value=lambda t: t.pass_fraction,
        description="share of tasks whose attempt passes (visible and hidden configs)",
    ),
    *(_fast_spec(p) for p in FAST_P),
    MetricSpec(
        key="deployable_speedup",
        label="Deployable speedup",
        unit="speedup",
        value=lambda t: t.speedup,
        geometric=True,
        needs_timing=True,
        description="geometric mean over all tasks; a task that does not pass counts 1.0",
    ),
    MetricSpec(
        key="passing_speedup",
        label="Speedup (passing tasks)",
        unit="speedup",
        value=lambda t: t.passing_speedup,
        geometric=True,
        scope="defined",
        needs_timing=True,
        empty_reason="no task passes",
        description="geometric mean over the tasks that pass only",
    ),
    MetricSpec(
        key="sol_fraction",
        label="Fraction of speed-of-light",
        unit="fraction",
        value=lambda t: t.sol_fraction,
        needs_timing=True,
        unknown_reason="no speed-of-light for task '{task_id}': {sol_note}",
        description="mean over all tasks; a task that does not pass counts 0",
    ),
    MetricSpec(
        key="hidden_given_visible",
        label="P(hidden correct | visible correct)",
        unit="rate",
        value=lambda t: t.hidden_given_visible,
        scope="defined",
        weight=lambda t: t.visible_ok,
        empty_reason="no attempt is correct on its visible configs",
        description="over the attempts correct on every visible config",
    ),
    MetricSpec(
        key="retention",
        label="Hidden/visible speedup retention",
        unit="ratio",
        value=lambda t: t.retention,
        geometric=True,
        scope="defined",
        needs_timing=True,
        empty_reason="no passing attempt has both visible and hidden speedups",
        description="geometric mean of hidden_speedup / speedup over passing attempts",
    ),
    MetricSpec(
        key="accel_configs",
        label="Visible configs correct (accel k/n)",
        unit="rate",
        value=lambda t: (
            None
            if t.visible_configs_correct is None or not t.visible_configs
            else t.visible_configs_correct / t.visible_configs
        ),
        scope="defined",
        empty_reason="no accel task",
        description="mean over accel tasks of k/n, the visible configs correct",
    ),
    MetricSpec(
        key="wall_s",
        label="Agent wall time per task",
        unit="seconds",
        value=lambda t: t.wall_s,
        scope="defined",
        empty_reason="no attempt recorded",
    ),
    MetricSpec(
        key="turns",
        label="Turns per task",
        unit="count",
        value=lambda t: t.turns,
        scope="defined",
        empty_reason="no attempt recorded",
    ),
    MetricSpec(
        key="tokens",
        label="Tokens per task",
        unit="count",
        value=lambda t: t.tokens,
        scope="defined",
        empty_reason="no attempt recorded",
    ),
    MetricSpec(
        key="cost_usd",
        label="Dollars per task",
        unit="usd",
        value=lambda t: t.cost_usd,
        scope="defined",
        empty_reason="no attempt recorded",
    ),
)

METRIC_BY_KEY: dict[str, MetricSpec] = {spec.key: spec for spec in METRICS}

#: Metric keys by report section.
METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    "outcome": ("pass_rate", *(f"fast_{p:.1f}" for p in FAST_P)),
    "speed": ("deployable_speedup", "passing_speedup", "sol_fraction"),
    "generalization": ("hidden_given_visible", "retention"),
    "accel": ("accel_configs",),
    "cost": ("wall_s", "turns", "tokens", "cost_usd"),
}


class Breakdown(_Frozen):
    """The metrics over the tasks of one track, level or platform."""

    dimension: Dimension
    key: str
    tasks: int
    metrics: dict[str, Metric]


class CostTotals(_Frozen):
    """Sums over every recorded attempt of a group."""

    attempts: int = 0
    wall_s: float = 0.0
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


class GroupScores(_Frozen):
    """The scores of one (agent, model) group."""

    agent: str
    model: str | None = None
    tasks: list[TaskScore]
    metrics: dict[str, Metric]
    breakdowns: list[Breakdown] = Field(default_factory=list)
    totals: CostTotals = CostTotals()
    missing_tasks: list[str] = Field(default_factory=list)
    """Tasks of the run with no recorded attempt (counted as failures)."""
    unsandboxed: int = 0
    """Attempts whose agent ran its processes unsandboxed (sandbox `none`): it could read and
    write whatever the harness's user can, so their results are not to be trusted."""

    @property
    def label(self) -> str:
        """`agent` or `agent@model`, the form selectors take."""
        return group_label(self.agent, self.model)

    def breakdown(self, dimension: Dimension) -> list[Breakdown]:
        """The breakdowns along one dimension."""
        return [b for b in self.breakdowns if b.dimension == dimension]


class RunScores(_Frozen):
    """The scores of every group of one run."""

    run_id: str
    run_dir: str
    device: str
    suite: str | None = None
    created_at: datetime
    bootstrap: Bootstrap
    groups: list[GroupScores]

    def group(self, selector: str | None = None) -> GroupScores:
        """The group named `agent` or `agent@model`; with no selector, the run's only group."""
        return select_group(self.groups, selector, where=self.run_dir)


def group_label(agent: str, model: str | None) -> str:
    """The label of a group: `agent`, or `agent@model` when a model is known."""
    return f"{agent}@{model}" if model else agent


def select_group(groups: Sequence[GroupScores], selector: str | None, where: str) -> GroupScores:
    """Pick a group by `agent` or `agent@model` (`where` names the run in errors)."""
    key = select_key([(g.agent, g.model) for g in groups], selector, where)
    return next(g for g in groups if (g.agent, g.model) == key)


def select_key(keys: Sequence[GroupKey], selector: str | None, where: str) -> GroupKey:
    """Pick a group key by `agent` or `agent@model`; with no selector, the only one.

    Raises:
        ConfigError: No selector and not exactly one group.
        UnknownNameError: No group, or more than one, matches the selector.
    """
    labels = [group_label(*key) for key in keys]
    if selector is None:
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise ConfigError(f"run '{where}' holds no attempt yet; nothing to score")
        raise ConfigError(
            f"run '{where}' holds several agents ({', '.join(labels)}); "
            "name one as AGENT or AGENT@MODEL"
        )
    matches = [key for key, label in zip(keys, labels, strict=True) if selector in (label, key[0])]
    if len(matches) != 1:
        hint = f"in run '{where}'" + ("; several match, add @MODEL" if matches else "")
        raise UnknownNameError("group", selector, labels, hint)
    return matches[0]


# --- statistics -------------------------------------------------------------------------------


def bootstrap_distribution(
    values: Sequence[float] | NDArray[np.float64],
    *,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    weights: Sequence[float] | NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The weighted mean of each bootstrap resample of the tasks.

    Args:
        values: One value per task.
        bootstrap: Resamples and seed.
        weights: One weight per task (default 1); a resample whose weights sum to 0 gives NaN.

    Returns:
        One mean per resample.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("bootstrap of an empty sample")
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    rng = np.random.default_rng(bootstrap.seed)
    stats = np.empty(bootstrap.resamples)
    for start in range(0, bootstrap.resamples, _BLOCK):
        rows = min(_BLOCK, bootstrap.resamples - start)
        idx = rng.integers(0, x.size, size=(rows, x.size))
        if w is None:
            stats[start : start + rows] = x[idx].mean(axis=1)
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[start : start + rows] = (w[idx] * x[idx]).sum(axis=1) / w[idx].sum(axis=1)
    return stats


def percentile_interval(stats: NDArray[np.float64], level: float) -> tuple[float, float]:
    """The central `level` interval of a bootstrap distribution (NaN resamples ignored)."""
    tail = (1 - level) / 2 * 100
    low, high = np.nanpercentile(stats, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_ci(
    values: Sequence[float] | NDArray[np.float64],
    *,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    geometric: bool = False,
    weights: Sequence[float] | NDArray[np.float64] | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a (weighted, optionally geometric) mean over tasks.

    Args:
        values: One value per task (positive when `geometric`).
        bootstrap: Resamples, seed and coverage.
        geometric: Take the geometric mean (the mean of logs, exponentiated).
        weights: One weight per task; resamples whose weights sum to 0 are dropped.

    Returns:
        The interval's low and high ends.
    """
    x = np.asarray(values, dtype=np.float64)
    stats = bootstrap_distribution(
        np.log(x) if geometric else x, bootstrap=bootstrap, weights=weights
    )
    low, high = percentile_interval(stats, bootstrap.level)
    if geometric:
        return math.exp(low), math.exp(high)
    return low, high


def weighted_mean(
    values: Sequence[float], *, geometric: bool = False, weights: Sequence[float] | None = None
) -> float:
    """The point estimate matching `bootstrap_ci`."""
    x = np.asarray(values, dtype=np.float64)
    if geometric:
        x = np.log(x)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
    estimate = float((w * x).sum() / w.sum())
    return math.exp(estimate) if geometric else estimate


def not_timed(note: str) -> str:
    """The n/a reason of a speed figure, from the verdict's note on why it has no times."""
    if not note:
        return "not timed"
    return note if "not timed" in note else f"not timed ({note})"


def compute_metric(
    spec: MetricSpec, tasks: Sequence[TaskScore], bootstrap: Bootstrap = DEFAULT_BOOTSTRAP
) -> Metric:
    """One metric over the given tasks, with its confidence interval."""
    if spec.needs_timing:
        timed_devices = [t for t in tasks if not t.untimed_device]
        if not timed_devices and tasks:
            return Metric(key=spec.key, n=len(tasks), reason=not_timed(tasks[0].timing_note))
        tasks = timed_devices
        untimed = [t for t in tasks if not t.timed]
        if untimed:
            return Metric(key=spec.key, n=len(tasks), reason=not_timed(untimed[0].timing_note))
    pairs = [(t, spec.value(t)) for t in tasks]
    if spec.scope == "all":
        unknown = [t for t, v in pairs if v is None]
        if unknown:
            first = unknown[0]
            reason = spec.unknown_reason.format(task_id=first.task_id, sol_note=first.sol_note)
            return Metric(key=spec.key, n=len(tasks), reason=reason)
    defined = [(t, v) for t, v in pairs if v is not None]
    if spec.weight is not None:
        defined = [(t, v) for t, v in defined if spec.weight(t) > 0]
    if not defined:
        return Metric(key=spec.key, n=0, reason=spec.empty_reason)
    values = [v for _, v in defined]
    if spec.geometric and min(values) <= 0:
        bad = next(t.task_id for t, v in defined if v <= 0)
        raise RecordError(f"task '{bad}': {spec.key} must be positive, found {min(values)}")
    weights = None if spec.weight is None else [spec.weight(t) for t, _ in defined]
    value = weighted_mean(values, geometric=spec.geometric, weights=weights)
    low, high = bootstrap_ci(values, bootstrap=bootstrap, geometric=spec.geometric, weights=weights)
    # Percentiles of a constant sample can differ from the point estimate by rounding.
    low, high = min(low, value), max(high, value)
    return Metric(key=spec.key, value=value, ci_low=low, ci_high=high, n=len(defined))


def compute_metrics(
    tasks: Sequence[TaskScore], bootstrap: Bootstrap = DEFAULT_BOOTSTRAP
) -> dict[str, Metric]:
    """Every metric of `METRICS` over the given tasks."""
    return {spec.key: compute_metric(spec, tasks, bootstrap) for spec in METRICS}


def fast_p_curve(tasks: Sequence[TaskScore], ps: Iterable[float]) -> list[float] | None:
    """fast_p over all tasks for each p (None when the group is not timed)."""
    tasks = [t for t in tasks if not t.untimed_device]
    if not tasks or any(not t.timed for t in tasks):
        return None
    return [_mean(t.fast(p) or 0.0 for t in tasks) for p in ps]


# --- from attempts to task scores -------------------------------------------------------------


def _mean(values: Iterable[float | bool]) -> float:
    items = [float(v) for v in values]
    return sum(items) / len(items) if items else 0.0


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _tokens(record: AttemptRecord) -> int:
    return record.usage.tokens_in + record.usage.tokens_out


def _visible_counts(records: Iterable[AttemptRecord]) -> dict[str, int]:
    """Number of visible configs per task, from whichever verdicts list them."""
    counts: dict[str, int] = {}
    for record in records:
        if record.verdict is not None and record.verdict.visible():
            counts[record.task_id] = max(
                counts.get(record.task_id, 0), len(record.verdict.visible())
            )
    return counts


def score_task(
    task_id: str,
    records: Sequence[AttemptRecord],
    *,
    track: str = "unknown",
    level: int = 0,
    platform: str | None = None,
    visible_configs: int | None = None,
) -> TaskScore:
    """Reduce the attempts of one task (possibly none) to its task score.

    Args:
        task_id: The task.
        records: Its attempts, all from one group.
        track: Track of a task with no attempt (otherwise read from the records).
        level: Level of a task with no attempt.
        platform: Platform of a task with no attempt.
        visible_configs: For `accel`, the number of visible configs when no verdict of these
            attempts lists them.
    """
    if not records:
        accel = track == "accel"
        return TaskScore(
            task_id=task_id,
            track=track,
            level=level,
            platform=platform,
            statuses=[MISSING],
            pass_speedups=[None],
            speedup=1.0,
            sol_fraction=0.0,
            visible_configs_correct=0.0 if accel else None,
            visible_configs=(visible_configs or ACCEL_VISIBLE_CONFIGS) if accel else None,
        )
    first = records[0]
    passing = [r for r in records if r.status == "pass"]
    verdicts = [r.verdict for r in records if r.verdict is not None]
    untimed = [
        r for r in passing if r.verdict is None or not r.verdict.timed or r.verdict.speedup is None
    ]
    timing_note = ""
    if untimed:
        verdict = untimed[0].verdict
        timing_note = (
            "no verdict recorded"
            if verdict is None
            else verdict.timing_note or "the verdict carries no speedup"
        )
    pass_speedups = [
        r.verdict.speedup if r.status == "pass" and r.verdict is not None else None for r in records
    ]
    timed = not untimed
    speedup = passing_speedup = retention = None
    if timed:
        speedup = _geomean([s if s is not None else 1.0 for s in pass_speedups])
        if passing:
            passing_speedup = _geomean([s for s in pass_speedups if s is not None])
        ratios = [
            r.verdict.hidden_speedup / r.verdict.speedup
            for r in passing
            if r.verdict is not None and r.verdict.hidden_speedup and r.verdict.speedup
        ]
        retention = _geomean(ratios) if ratios else None
    sol_values = [
        (r.verdict.sol_fraction if r.verdict is not None else None) if r.status == "pass" else 0.0
        for r in records
    ]
    sol_fraction = (
        None if any(v is None for v in sol_values) else _mean(v or 0.0 for v in sol_values)
    )
    sol_note = "" if sol_fraction is not None else "the verdict has no speed-of-light figure"
    visible_ok = [r for r in records if r.verdict is not None and r.verdict.visible_correct]
    hidden_given_visible = (
        _mean(r.verdict is not None and r.verdict.hidden_correct is True for r in visible_ok)
        if visible_ok
        else None
    )
    k = n = None
    if first.track == "accel":
        n = visible_configs or ACCEL_VISIBLE_CONFIGS
        k = _mean(
            sum(c.correct is True for c in r.verdict.visible()) if r.verdict is not None else 0
            for r in records
        )
    return TaskScore(
        task_id=task_id,
        track=first.track,
        level=first.level,
        platform=first.platform,
        attempt_ids=[r.attempt_id for r in records],
        statuses=[r.status for r in records],
        pass_speedups=pass_speedups,
        pass_fraction=len(passing) / len(records),
        timed=timed,
        timing_note=timing_note,
        untimed_device=bool(verdicts) and not any(device_is_timed(v.device) for v in verdicts),
        speedup=speedup,
        passing_speedup=passing_speedup,
        sol_fraction=sol_fraction,
        sol_note=sol_note,
        visible_ok=len(visible_ok) / len(records),
        hidden_given_visible=hidden_given_visible,
        retention=retention,
        visible_configs_correct=k,
        visible_configs=n,
        wall_s=_mean(r.usage.wall_s for r in records),
        turns=_mean(r.usage.turns for r in records),
        tokens=_mean(_tokens(r) for r in records),
        cost_usd=_mean(r.usage.cost_usd for r in records),
    )


def score_tasks(
    records: Sequence[AttemptRecord],
    task_ids: Iterable[str] = (),
    *,
    context: Sequence[AttemptRecord] = (),
) -> list[TaskScore]:
    """Task scores of one group's attempts.

    Args:
        records: The group's attempts.
        task_ids: Every task the group should have attempted: one with no attempt in
            `records` is scored as `missing` (a failure).
        context: Other attempts on the same tasks (other groups), from which the track, level
            and platform of a missing task and the visible config count of an `accel` task are
            read.

    Returns:
        One score per task: those of `task_ids` in order, then any other attempted task.
    """
    by_task: dict[str, list[AttemptRecord]] = {}
    for task_id in task_ids:
        by_task.setdefault(task_id, [])
    for record in records:
        by_task.setdefault(record.task_id, []).append(record)
    known = {r.task_id: r for r in [*context, *records]}
    visible = _visible_counts([*context, *records])
    tasks: list[TaskScore] = []
    for task_id, task_records in by_task.items():
        ref = known.get(task_id)
        tasks.append(
            score_task(
                task_id,
                sorted(task_records, key=lambda r: r.index),
                track=ref.track if ref else "unknown",
                level=ref.level if ref else 0,
                platform=ref.platform if ref else None,
                visible_configs=visible.get(task_id),
            )
        )
    return tasks


def score_group(
    agent: str,
    model: str | None,
    records: Sequence[AttemptRecord],
    task_ids: Iterable[str] = (),
    *,
    context: Sequence[AttemptRecord] = (),
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
) -> GroupScores:
    """Score one (agent, model) group: its task scores, metrics and breakdowns.

    Args:
        agent: The agent's name.
        model: The model, if any.
        records: The group's attempts.
        task_ids: Every task the group should have attempted (see `score_tasks`).
        context: Other attempts on the same tasks (see `score_tasks`).
        bootstrap: How confidence intervals are drawn.
    """
    tasks = score_tasks(records, task_ids, context=context)
    breakdowns: list[Breakdown] = []
    for dimension in DIMENSIONS:
        subsets: dict[str, list[TaskScore]] = {}
        for task in tasks:
            key = _dimension_key(task, dimension)
            if key is not None:
                subsets.setdefault(key, []).append(task)
        for key in sorted(subsets):
            breakdowns.append(
                Breakdown(
                    dimension=dimension,
                    key=key,
                    tasks=len(subsets[key]),
                    metrics=compute_metrics(subsets[key], bootstrap),
                )
            )
    totals = CostTotals(
        attempts=len(records),
        wall_s=sum(r.usage.wall_s for r in records),
        turns=sum(r.usage.turns for r in records),
        tokens_in=sum(r.usage.tokens_in for r in records),
        tokens_out=sum(r.usage.tokens_out for r in records),
        cost_usd=sum(r.usage.cost_usd for r in records),
    )
    return GroupScores(
        agent=agent,
        model=model,
        tasks=tasks,
        metrics=compute_metrics(tasks, bootstrap),
        breakdowns=breakdowns,
        totals=totals,
        missing_tasks=[t.task_id for t in tasks if not t.attempt_ids],
        unsandboxed=sum(r.sandbox == "none" for r in records),
    )


def _dimension_key(task: TaskScore, dimension: Dimension) -> str | None:
    if dimension == "track":
        return task.track
    if dimension == "level":
        return str(task.level)
    return task.platform


# --- runs ---------------------------------------------------------------------------------------


def load_run(run_dir: Path | str) -> tuple[RunInfo, list[AttemptRecord]]:
    """Read a run directory's `run.json` and attempts.

    Raises:
        ConfigError: The path is no run directory (bad input).
        RecordError: A record in it cannot be read.
    """
    store = RunStore(Path(run_dir))
    if not store.root.is_dir():
        raise ConfigError(f"run directory '{store.root}' does not exist")
    return store.info(), store.attempts()


def groups_of(records: Iterable[AttemptRecord]) -> dict[GroupKey, list[AttemptRecord]]:
    """Attempts by (agent, model), in order of first appearance."""
    groups: dict[GroupKey, list[AttemptRecord]] = {}
    for record in records:
        groups.setdefault((record.agent, record.model), []).append(record)
    return groups


def score_run(run_dir: Path | str, *, bootstrap: Bootstrap = DEFAULT_BOOTSTRAP) -> RunScores:
    """Score every (agent, model) group of a run directory.

    Args:
        run_dir: The run directory (`run.json`, `attempts.jsonl`).
        bootstrap: How confidence intervals are drawn.

    Returns:
        The scores; a run with no attempt yet has no groups.

    Raises:
        RecordError: The run directory cannot be read.
    """
    info, records = load_run(run_dir)
    groups = [
        score_group(
            agent,
            model,
            group_records,
            info.task_ids,
            context=records,
            bootstrap=bootstrap,
        )
        for (agent, model), group_records in groups_of(records).items()
    ]
    logger.debug("scored run '%s': %d groups, %d attempts", info.run_id, len(groups), len(records))
    return RunScores(
        run_id=info.run_id,
        run_dir=str(run_dir),
        device=info.device,
        suite=info.suite,
        created_at=info.created_at,
        bootstrap=bootstrap,
        groups=groups,
    )
