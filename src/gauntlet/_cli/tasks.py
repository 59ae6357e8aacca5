"""`gauntlet tasks`: list, show and check tasks."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from gauntlet import devices, suites
from gauntlet._cli.output import out
from gauntlet.taskcheck import check_task


def register(app: typer.Typer) -> None:
    """Add the `tasks` command group."""
    group = typer.Typer(help="List, show and check tasks.", no_args_is_help=False)
    group.callback(invoke_without_command=True)(list_tasks)
    group.command("show")(show)
    group.command("check")(check)
    app.add_typer(group, name="tasks")


def list_tasks(
    ctx: typer.Context,
    suite: str = typer.Option(None, "--suite", "-s", help="A suite name (default: all)."),
    track: str = typer.Option(None, "--track", "-t", help="Only this track."),
    device: str = typer.Option(None, "--device", "-d", help="Only tasks that run on this device."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List tasks."""
    if ctx.invoked_subcommand is not None:
        return
    tasks = suites.select(suite, None, track)
    if device:
        devices.check_device(device)
        tasks = [t for t in tasks if devices.device_for(t, device) is not None]
    if as_json:
        out.print_json(json.dumps([t.spec.model_dump(mode="json") for t in tasks]))
        return
    table = Table(title=f"{len(tasks)} tasks" + (f" in suite '{suite}'" if suite else ""))
    table.add_column("id", no_wrap=True)
    for column in ("track", "level", "title", "devices", "configs", "expert"):
        table.add_column(column)
    for task in tasks:
        spec = task.spec
        table.add_row(
            spec.id,
            spec.track,
            str(spec.level),
            spec.title,
            ", ".join(spec.device_kinds()),
            f"{len(spec.configs.visible)} visible",
            "yes" if spec.expert else "no",
        )
    out.print(table)


def show(task_id: str = typer.Argument(..., help="Task id, e.g. triton2triton/softmax.")) -> None:
    """Show one task: its description, contract and visible configs."""
    task = suites.load_by_id(task_id)
    spec = task.spec
    out.print(f"[bold]{spec.id}[/] — {spec.title} ({spec.track}, level {spec.level})")
    out.print(f"folder: {task.root}")
    out.print(spec.description.strip())
    out.print(
        f"\nsubmission: {', '.join(spec.submission.files)} "
        f"(entry '{spec.submission.entry}', {spec.submission.language})"
    )
    table = Table(title="visible configs")
    table.add_column("name")
    table.add_column("parameters")
    for config in task.visible_configs:
        table.add_row(config.name, ", ".join(f"{k}={v}" for k, v in config.params.items()))
    out.print(table)
    hidden = spec.configs.hidden
    out.print(
        f"hidden: {len(hidden.fixed)} fixed, {hidden.count} drawn per run; "
        f"distributions: {', '.join(spec.inputs.distributions)}"
    )


def check(
    task_id: str = typer.Argument(None, help="One task id (default: every task of the suite)."),
    suite: str = typer.Option(None, "--suite", "-s", help="Check this suite's tasks."),
    device: str = typer.Option(None, "--device", "-d", help="Device to check on."),
) -> None:
    """Run the task checks; exit 1 if any task fails one."""
    tasks = [suites.load_by_id(task_id)] if task_id else suites.select(suite)
    table = Table(title="task checks")
    for column in ("task", "check", "result", "detail"):
        table.add_column(column, overflow="fold")
    if device:
        devices.check_device(device)
    failed = skipped = 0
    for task in tasks:
        for result in check_task(task, device):
            failed += not result.ok
            skipped += result.skipped
            shown = "[yellow]skip[/]" if result.skipped else "[green]ok[/]"
            table.add_row(
                task.task_id,
                result.name,
                shown if result.ok else "[bold red]FAIL[/]",
                result.detail,
            )
    out.print(table)
    if skipped:
        out.print(f"{skipped} task(s) skipped: no device here runs them")
    if failed:
        raise typer.Exit(1)
