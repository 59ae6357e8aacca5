"""`gauntlet report`, `gauntlet leaderboard` and `gauntlet compare`: scores, pages and tables."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from gauntlet._cli.output import err, out
from gauntlet.compare import compare_runs
from gauntlet.errors import ConfigError
from gauntlet.report import LEADERBOARD_KEYS, leaderboard, write_report
from gauntlet.report.export import Row, comparison_rows, leaderboard_rows, score_rows, to_csv
from gauntlet.report.formatting import format_difference, format_interval, format_value
from gauntlet.score import METRIC_BY_KEY, METRICS, Bootstrap, Metric, score_run

_RESAMPLES = typer.Option(10_000, "--resamples", min=1, help="Bootstrap resamples.")
_SEED = typer.Option(0, "--seed", help="Seed of the bootstrap.")
_JSON = typer.Option(False, "--json", help="Print the figures as JSON instead of tables.")
_CSV = typer.Option(False, "--csv", help="Print the figures as CSV instead of tables.")
#: Narrower terminals get one small table per leaderboard row instead of one wide table.
WIDE_COLUMNS = 100


def _machine_output(as_json: bool, as_csv: bool, model: BaseModel, rows: list[Row]) -> bool:
    """Print JSON or CSV if asked (and nothing else on stdout); whether it was."""
    if as_json and as_csv:
        raise ConfigError("--json and --csv are alternatives: pass one")
    if as_json:
        print(model.model_dump_json(indent=2))
    elif as_csv:
        print(to_csv(rows), end="")
    return as_json or as_csv


def register(app: typer.Typer) -> None:
    """Add the `report`, `leaderboard` and `compare` commands."""
    app.command("report")(report)
    app.command("leaderboard")(show_leaderboard)
    app.command("compare")(compare)


def _cell(metric: Metric) -> str:
    unit = METRIC_BY_KEY[metric.key].unit
    if metric.value is None:
        return f"[dim]n/a ({escape(metric.reason)})[/]"
    return f"{format_value(metric.value, unit)} [dim]{escape(format_interval(metric, unit))}[/]"


def report(
    run_dir: Path = typer.Argument(..., help="Run directory."),
    html: Path = typer.Option(None, "--html", help="Page to write (default RUN_DIR/report.html)."),
    resamples: int = _RESAMPLES,
    seed: int = _SEED,
    as_json: bool = _JSON,
    as_csv: bool = _CSV,
) -> None:
    """Print a run's scores and write its self-contained HTML report."""
    scores = score_run(run_dir, bootstrap=Bootstrap(resamples=resamples, seed=seed))
    if _machine_output(as_json, as_csv, scores, score_rows(scores)):
        path = write_report(run_dir, html, scores=scores)
        err.print(escape(f"report: {path}"))
        return
    for group in scores.groups:
        table = Table(title=escape(f"{scores.run_id}: {group.label}"))
        for column in ("metric", "value [95% interval]", "tasks"):
            table.add_column(column, overflow="fold")
        for spec in METRICS:
            metric = group.metrics[spec.key]
            table.add_row(spec.label, _cell(metric), str(metric.n))
        out.print(table)
        if group.missing_tasks:
            missing = len(group.missing_tasks)
            out.print(f"[yellow]{missing} task(s) without an attempt count as failures[/]")
    if not scores.groups:
        out.print(escape(f"run '{scores.run_id}' holds no attempt yet"))
    path = write_report(run_dir, html, scores=scores)
    out.print(escape(f"report: {path}"))


def show_leaderboard(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories."),
    html: Path = typer.Option(None, "--html", help="Write the leaderboard page here."),
    markdown: Path = typer.Option(None, "--markdown", "--md", help="Write Markdown here."),
    resamples: int = _RESAMPLES,
    seed: int = _SEED,
    as_json: bool = _JSON,
    as_csv: bool = _CSV,
) -> None:
    """Rank the agents of one or more runs by deployable speedup."""
    board = leaderboard(run_dirs, bootstrap=Bootstrap(resamples=resamples, seed=seed))
    if _machine_output(as_json, as_csv, board, leaderboard_rows(board)):
        return
    if out.width >= WIDE_COLUMNS:
        table = Table(title="leaderboard")
        labels = [METRIC_BY_KEY[key].label for key in LEADERBOARD_KEYS]
        for column in ("#", "agent", "model", "tasks", *labels):
            table.add_column(column, overflow="fold")
        for row in board.rows:
            names = (escape(row.agent_cell), escape(row.model or ""))
            cells = [_cell(row.metrics[key]) for key in LEADERBOARD_KEYS]
            table.add_row(str(row.rank), *names, str(row.tasks), *cells)
        out.print(table)
    else:
        # Fifteen columns squeezed into 80 left two to four characters each: a table per row.
        for row in board.rows:
            title = f"#{row.rank} {row.agent_cell}" + (f" @ {row.model}" if row.model else "")
            table = Table(title=escape(f"{title} ({row.tasks} tasks)"), title_justify="left")
            table.add_column("metric")
            table.add_column("value [95% interval]", overflow="fold")
            for key in LEADERBOARD_KEYS:
                table.add_row(METRIC_BY_KEY[key].label, _cell(row.metrics[key]))
            out.print(table)
    for note in board.caveats():
        out.print(f"[dim]{escape(note)}[/]")
    if html is not None:
        out.print(escape(f"wrote {board.write_html(html)}"))
    if markdown is not None:
        out.print(escape(f"wrote {board.write_markdown(markdown)}"))


def compare(
    run_a: Path = typer.Argument(..., help="Run directory A."),
    run_b: Path = typer.Argument(..., help="Run directory B (may be A, with other agents)."),
    group_a: str = typer.Option(None, "--a", help="AGENT or AGENT@MODEL in run A."),
    group_b: str = typer.Option(None, "--b", help="AGENT or AGENT@MODEL in run B."),
    resamples: int = _RESAMPLES,
    seed: int = _SEED,
    as_json: bool = _JSON,
    as_csv: bool = _CSV,
) -> None:
    """Compare B against A, paired over the tasks both attempted, with significance."""
    bootstrap = Bootstrap(resamples=resamples, seed=seed)
    result = compare_runs(run_a, run_b, group_a=group_a, group_b=group_b, bootstrap=bootstrap)
    if _machine_output(as_json, as_csv, result, comparison_rows(result)):
        return
    out.print(escape(f"A: {result.run_a} ({result.group_a})  B: {result.run_b} ({result.group_b})"))
    shared, only_a, only_b = len(result.tasks), len(result.only_a), len(result.only_b)
    out.print(f"{shared} shared tasks; {only_a} only in A, {only_b} only in B")
    table = Table()
    for column in ("metric", "A", "B", "B vs A [95% interval]", "p", "verdict"):
        table.add_column(column, overflow="fold")
    for diff in result.differences:
        unit = METRIC_BY_KEY[diff.key].unit
        change = format_difference(diff.value, diff.kind, unit)
        if diff.ci_low is not None and diff.ci_high is not None:
            low = format_difference(diff.ci_low, diff.kind, unit)
            high = format_difference(diff.ci_high, diff.kind, unit)
            change += f" [dim]\\[{low} – {high}][/]"
        p_value = "" if diff.p_value is None else f"{diff.p_value:.3f}"
        a, b = format_value(diff.a, unit), format_value(diff.b, unit)
        table.add_row(diff.label, a, b, change, p_value, escape(diff.verdict))
    out.print(table)
