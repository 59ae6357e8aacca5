"""`gauntlet agents` (what can run here) and `gauntlet show` (one attempt, transcript, verdict)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from gauntlet._cli.evaluate import print_verdict
from gauntlet._cli.output import out, styled_status
from gauntlet.agents.catalog import describe_agents, describe_sandboxes
from gauntlet.agents.cli_clients import CHECK_TIMEOUT_S, CHECKED_SANDBOXES, check_clients
from gauntlet.errors import UnknownNameError
from gauntlet.report.attempts import attempt_view
from gauntlet.store import RunStore


def register(app: typer.Typer) -> None:
    """Add the `agents` and `show` commands."""
    app.command("agents")(list_agents)
    app.command("show")(show)


def list_agents() -> None:
    """List every agent and sandbox, and whether it is usable here (else what it needs)."""
    table = Table(title="agents")
    for column in ("agent", "usable", "details"):
        table.add_column(column, overflow="fold")
    for info in describe_agents():
        usable = "[green]yes[/]" if info.usable else "[red]no[/]"
        table.add_row(info.name, usable, escape(info.detail))
    out.print(table)
    table = Table(title="sandboxes (option sandbox=KIND of CLI agents)")
    for column in ("sandbox", "usable", "details"):
        table.add_column(column, overflow="fold")
    for sandbox in describe_sandboxes():
        usable = "[green]yes[/]" if sandbox.usable else "[red]no[/]"
        table.add_row(sandbox.kind, usable, escape(sandbox.detail))
    out.print(table)
    checks = check_clients()
    table = Table(
        title=f"CLI clients: does each start in each sandbox ({CHECK_TIMEOUT_S:g} s check, "
        "no model call)"
    )
    table.add_column("check", no_wrap=True)
    for check in checks:
        table.add_column(check.agent, overflow="fold")
    table.add_row("installed", *(escape(c.executable or f"no: {c.install}") for c in checks))
    table.add_row("version", *(escape(c.version or "") for c in checks))
    for kind in CHECKED_SANDBOXES:
        cells = []
        for check in checks:
            if kind not in check.sandboxes:
                cells.append("")  # not installed
                continue
            problem = check.sandboxes[kind]
            cells.append("[green]yes[/]" if problem is None else f"[red]no[/]: {escape(problem)}")
        table.add_row(f"starts in {kind}", *cells)
    out.print(table)


def show(
    run_dir: Path = typer.Argument(..., help="Run directory."),
    attempt_id: str = typer.Argument(..., help="Attempt id (see attempts.jsonl or the report)."),
) -> None:
    """Print one attempt: how the agent ended, its transcript, and the verdict."""
    store = RunStore(run_dir)
    records = store.attempts()
    record = next((r for r in records if r.attempt_id == attempt_id), None)
    if record is None:
        known = [r.attempt_id for r in records]
        raise UnknownNameError("attempt", attempt_id, known, f"in run '{run_dir}'")
    view = attempt_view(store, record)
    out.print(f"[bold]{escape(record.attempt_id)}[/]: {styled_status(record.status)}")
    usage = record.usage
    out.print(
        escape(
            f"task {record.task_id}, agent {record.agent}"
            + (f", model {record.model}" if record.model else "")
            + f"; agent {record.agent_status or '?'}: {record.agent_message}"
        )
    )
    out.print(
        f"usage: {usage.wall_s:.1f} s, {usage.turns} turns, {usage.tool_calls} tool calls, "
        f"{usage.tokens_in} in / {usage.tokens_out} out tokens, ${usage.cost_usd:.4f}"
    )
    if record.workspace_changes:
        changes = ", ".join(f"{p} {c}" for p, c in record.workspace_changes.items())
        out.print(escape(f"workspace changes: {changes}"))
    for transcript in view.transcripts:
        out.rule(escape(transcript.name))
        for line in transcript.lines:
            out.print(escape(line))
        if transcript.lines_left_out:
            out.print(f"[dim][... {transcript.lines_left_out} more lines][/]")
    if not view.transcripts:
        out.print("[dim]no transcript kept for this attempt[/]")
    out.rule("verdict")
    if record.verdict is not None:
        print_verdict(record.verdict)
    else:
        out.print(f"{styled_status(record.status)}: {escape(record.reason)}")
