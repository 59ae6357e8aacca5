"""The leaderboard: one row per (agent, model) over one or more runs, ranked by deployable speedup.

A group that appears in several runs is scored over all of its attempts together (a task
attempted in two runs is scored by the mean of its attempts, as within one run). Rows over
different task sets are flagged: their figures are not directly comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field

from gauntlet.errors import ConfigError, RecordError
from gauntlet.report.formatting import NOT_AVAILABLE, format_interval, format_value
from gauntlet.score import (
    DEFAULT_BOOTSTRAP,
    METRIC_BY_KEY,
    Bootstrap,
    GroupKey,
    Metric,
    group_label,
    groups_of,
    load_run,
    score_group,
)
from gauntlet.store import AttemptRecord

#: The leaderboard's metric columns, in order; the first ranks the rows.
LEADERBOARD_KEYS: tuple[str, ...] = (
    "deployable_speedup",
    "pass_rate",
    "fast_1.0",
    "fast_1.5",
    "fast_2.0",
    "hidden_given_visible",
    "retention",
    "wall_s",
    "turns",
    "tokens",
    "cost_usd",
)


#: How a row whose agent ran unsandboxed is flagged.
UNSANDBOXED_FLAG = "[unsandboxed]"


class LeaderboardRow(BaseModel):
    """One (agent, model) on the leaderboard."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int
    agent: str
    model: str | None = None
    runs: list[str]
    """Run ids the row's attempts come from."""
    tasks: int
    attempts: int
    metrics: dict[str, Metric]
    unsandboxed: int = 0
    """Attempts whose agent ran unsandboxed (`GroupScores.unsandboxed`)."""

    @property
    def label(self) -> str:
        """`agent` or `agent@model`."""
        return group_label(self.agent, self.model)

    @property
    def agent_cell(self) -> str:
        """The agent's name, flagged when any of its attempts ran unsandboxed."""
        return f"{self.agent} {UNSANDBOXED_FLAG}" if self.unsandboxed else self.agent


class Leaderboard(BaseModel):
    """Agents ranked by deployable speedup, each figure with its interval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rows: list[LeaderboardRow]
    runs: list[str] = Field(default_factory=list)
    """Run ids, in the order given."""
    task_sets_differ: bool = False
    """Whether the rows were scored over different task sets."""
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP

    def caveats(self) -> list[str]:
        """Notes a reader needs before comparing rows."""
        notes = [
            f"Ranked by deployable speedup; intervals: {self.bootstrap.level:.0%} percentile "
            f"bootstrap over tasks ({self.bootstrap.resamples} resamples, seed "
            f"{self.bootstrap.seed})."
        ]
        if self.task_sets_differ:
            notes.append("Rows are over different task sets: compare their figures with care.")
        flagged = [row for row in self.rows if row.unsandboxed]
        if flagged:
            notes.append(
                f"{UNSANDBOXED_FLAG}: "
                + ", ".join(f"{row.label} ({row.unsandboxed} of {row.attempts})" for row in flagged)
                + " ran attempts unsandboxed (sandbox 'none'): such an agent could read the "
                "task folder and the run directory, so its figures are not to be trusted."
            )
        return notes

    def to_markdown(self) -> str:
        """The leaderboard as a Markdown table (values with their intervals)."""
        header = ["#", "Agent", "Model", "Tasks"] + [
            METRIC_BY_KEY[k].label for k in LEADERBOARD_KEYS
        ]
        lines = [
            "| " + " | ".join(_markdown_escape(cell) for cell in header) + " |",
            "|" + "|".join(["---:", "---", "---", "---:"] + ["---:"] * len(LEADERBOARD_KEYS)) + "|",
        ]
        for row in self.rows:
            cells = [str(row.rank), row.agent_cell, row.model or "", str(row.tasks)]
            cells += [_markdown_metric(row.metrics[key]) for key in LEADERBOARD_KEYS]
            lines.append("| " + " | ".join(_markdown_escape(c) for c in cells) + " |")
        notes = "\n".join(
            f"_{note}_" for note in [*self.caveats(), "Runs: " + ", ".join(self.runs)]
        )
        return "\n".join(lines) + "\n\n" + notes + "\n"

    def write_markdown(self, path: Path) -> Path:
        """Write `to_markdown()` to a file."""
        return _write(path, self.to_markdown())

    def write_html(self, path: Path) -> Path:
        """Write `to_html()` to a file."""
        return _write(path, self.to_html())

    def to_html(self) -> str:
        """The leaderboard as a self-contained HTML page."""
        from gauntlet.report.page import asset, environment

        template = environment().get_template("leaderboard.html.j2")
        return template.render(
            board=self,
            keys=LEADERBOARD_KEYS,
            specs=METRIC_BY_KEY,
            css=asset("report.css"),
            highlight_css=Markup(""),
            script=asset("report.js"),
        )


def _write(path: Path, text: str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise RecordError(f"cannot write the leaderboard to '{path}': {err}") from err
    return path


def _markdown_metric(metric: Metric) -> str:
    unit = METRIC_BY_KEY[metric.key].unit
    if metric.value is None:
        return NOT_AVAILABLE
    interval = format_interval(metric, unit)
    return f"{format_value(metric.value, unit)} {interval}".strip()


def _markdown_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rank_key(row: LeaderboardRow) -> tuple[bool, float, float, str]:
    speed = row.metrics["deployable_speedup"].value
    passed = row.metrics["pass_rate"].value or 0.0
    return (speed is None, -(speed or 0.0), -passed, row.label)


def leaderboard(
    run_dirs: Sequence[Path | str], *, bootstrap: Bootstrap = DEFAULT_BOOTSTRAP
) -> Leaderboard:
    """Rank every (agent, model) found in the given runs.

    Args:
        run_dirs: Run directories; a group found in several is scored over all its attempts.
        bootstrap: How confidence intervals are drawn.

    Raises:
        ConfigError: No run directory was given.
        RecordError: A run directory cannot be read.
    """
    if not run_dirs:
        raise ConfigError("no run directory given; pass one or more RUN_DIR")
    records: dict[GroupKey, list[AttemptRecord]] = {}
    task_ids: dict[GroupKey, list[str]] = {}
    runs: dict[GroupKey, list[str]] = {}
    every: list[AttemptRecord] = []
    run_ids: list[str] = []
    for run_dir in run_dirs:
        info, attempts = load_run(run_dir)
        if info.run_id in run_ids:
            raise RecordError(f"run '{info.run_id}' is given twice (again as '{run_dir}')")
        run_ids.append(info.run_id)
        every.extend(attempts)
        for key, group_records in groups_of(attempts).items():
            records.setdefault(key, []).extend(group_records)
            tasks = task_ids.setdefault(key, [])
            tasks.extend(t for t in info.task_ids if t not in tasks)
            runs.setdefault(key, []).append(info.run_id)
    rows = []
    for key, group_records in records.items():
        group = score_group(*key, group_records, task_ids[key], context=every, bootstrap=bootstrap)
        rows.append(
            LeaderboardRow(
                rank=0,
                agent=group.agent,
                model=group.model,
                runs=runs[key],
                tasks=len(group.tasks),
                attempts=len(group_records),
                metrics={k: group.metrics[k] for k in LEADERBOARD_KEYS},
                unsandboxed=group.unsandboxed,
            )
        )
    rows.sort(key=_rank_key)
    ranked = [row.model_copy(update={"rank": n}) for n, row in enumerate(rows, start=1)]
    task_sets = {frozenset(task_ids[key]) | {r.task_id for r in records[key]} for key in records}
    return Leaderboard(
        rows=ranked, runs=run_ids, task_sets_differ=len(task_sets) > 1, bootstrap=bootstrap
    )
