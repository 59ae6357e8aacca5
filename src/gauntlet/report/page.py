"""The HTML report of one run: a single self-contained page (styles, script and charts inline).

The page carries a Content-Security-Policy that forbids every network load, so it renders the
same offline, and untrusted text from attempts (submissions, transcripts, messages) is always
escaped by Jinja2's autoescaping.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from gauntlet.errors import RecordError
from gauntlet.report.attempts import AttemptView, attempt_view, highlight_css
from gauntlet.report.formatting import format_value
from gauntlet.report.plots import fast_p_chart, sol_chart, speedup_distribution
from gauntlet.score import (
    DEFAULT_BOOTSTRAP,
    DIMENSIONS,
    METRIC_BY_KEY,
    METRIC_GROUPS,
    Bootstrap,
    Breakdown,
    Dimension,
    GroupScores,
    RunScores,
    Unit,
    score_run,
)
from gauntlet.store import RunStore

logger = logging.getLogger(__name__)

#: Metrics of the overview and breakdown tables (the summary table shows every metric).
OVERVIEW_KEYS = ("pass_rate", "fast_1.0", "deployable_speedup", "hidden_given_visible", "cost_usd")
BREAKDOWN_KEYS = ("pass_rate", "fast_1.0", "deployable_speedup", "passing_speedup")


@dataclass(frozen=True)
class GroupView:
    """One group's part of the page."""

    group: GroupScores
    anchor: str
    plots: dict[str, Markup] = field(default_factory=dict)
    """`speedup`, `fast_p` and `sol` charts over the timed tasks; empty when there are none."""
    timed_tasks: int = 0
    """Tasks judged on a timed device (what the speed charts and metrics are taken over)."""
    breakdowns: list[tuple[Dimension, list[Breakdown]]] = field(default_factory=list)
    overfit: list[tuple[str, str]] = field(default_factory=list)
    """Task id and anchor of each overfit attempt."""

    @property
    def has_accel(self) -> bool:
        """Whether the group has `accel` tasks (k/n is shown)."""
        return any(t.track == "accel" for t in self.group.tasks)


def _exact(value: float | None) -> str:
    # repr round-trips a float exactly: the page carries the scorer's own numbers.
    return "" if value is None else repr(float(value))


def _fmt(value: float | None, unit: Unit) -> str:
    return format_value(value, unit)


def environment() -> jinja2.Environment:
    """The Jinja2 environment of the report and leaderboard templates."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gauntlet.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = _fmt
    env.filters["exact"] = _exact
    return env


def asset(name: str) -> Markup:
    """A style sheet or script of the templates folder, to inline (trusted, not escaped)."""
    return Markup(resources.files("gauntlet.report").joinpath("templates", name).read_text())


def _group_view(number: int, group: GroupScores, anchors: dict[str, str]) -> GroupView:
    plots: dict[str, Markup] = {}
    # The tasks the speed metrics are taken over: those judged on a timed device (the `cpu`
    # device is not), so a run mixing CPU and simulator or GPU tasks still gets its charts.
    timed = [t for t in group.tasks if not t.untimed_device]
    if timed and all(t.timed for t in timed):
        salt = f"group{number}"
        plots["speedup"] = Markup(speedup_distribution(timed, salt + "-speedup"))
        plots["fast_p"] = Markup(fast_p_chart(timed, salt + "-fast"))
        if group.metrics["sol_fraction"].available:
            plots["sol"] = Markup(sol_chart(timed, salt + "-sol"))
    breakdowns = [(d, group.breakdown(d)) for d in DIMENSIONS if group.breakdown(d)]
    return GroupView(
        group=group,
        anchor=f"group-{number}",
        plots=plots,
        timed_tasks=len(timed),
        breakdowns=breakdowns,
        overfit=[
            (task.task_id, anchors[attempt_id])
            for task in group.tasks
            for attempt_id, status in zip(task.attempt_ids, task.statuses, strict=False)
            if status == "overfit"
        ],
    )


#: Characters of an attempt's reason shown in the task table (the attempt's page has it all).
REASON_CHARS = 140


def _first_line(reason: str) -> str:
    line = reason.strip().splitlines()[0] if reason.strip() else ""
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def render_report(
    run_dir: Path | str,
    *,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    scores: RunScores | None = None,
) -> str:
    """The report page of a run, as HTML text.

    Args:
        run_dir: The run directory.
        bootstrap: How confidence intervals are drawn.
        scores: The run's scores when already computed (then `bootstrap` is not used).

    Raises:
        RecordError: The run directory cannot be read.
    """
    if scores is None:
        scores = score_run(run_dir, bootstrap=bootstrap)
    store = RunStore(Path(run_dir))
    info = store.info()
    attempts: list[AttemptView] = [attempt_view(store, r) for r in store.attempts()]
    anchors = {view.record.attempt_id: view.anchor for view in attempts}
    reasons = {view.record.attempt_id: _first_line(view.record.reason) for view in attempts}
    groups = [_group_view(n, group, anchors) for n, group in enumerate(scores.groups)]
    template = environment().get_template("report.html.j2")
    return template.render(
        scores=scores,
        info=info,
        groups=groups,
        attempts=attempts,
        anchors=anchors,
        reasons=reasons,
        specs=METRIC_BY_KEY,
        metric_groups=METRIC_GROUPS,
        overview_keys=OVERVIEW_KEYS,
        breakdown_keys=BREAKDOWN_KEYS,
        css=asset("report.css"),
        highlight_css=Markup(highlight_css()),
        script=asset("report.js"),
    )


def write_report(
    run_dir: Path | str,
    html_path: Path | str | None = None,
    *,
    bootstrap: Bootstrap = DEFAULT_BOOTSTRAP,
    scores: RunScores | None = None,
) -> Path:
    """Write a run's self-contained `report.html`.

    Args:
        run_dir: The run directory.
        html_path: Where to write the page (default: `report.html` in the run directory).
        bootstrap: How confidence intervals are drawn.
        scores: The run's scores when already computed (then `bootstrap` is not used).

    Returns:
        The path written.

    Raises:
        RecordError: The run directory cannot be read or the page cannot be written.
    """
    path = Path(html_path) if html_path is not None else Path(run_dir) / "report.html"
    html = render_report(run_dir, bootstrap=bootstrap, scores=scores)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
    except OSError as err:
        raise RecordError(f"cannot write the report of '{run_dir}' to '{path}': {err}") from err
    logger.info("wrote the report of '%s' to '%s'", run_dir, path)
    return path
