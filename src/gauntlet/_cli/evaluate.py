"""`gauntlet eval TASK PATH`: judge one candidate with full diagnostics."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

import typer
from rich.table import Table

from gauntlet import devices, suites
from gauntlet._cli import judge_options
from gauntlet._cli.output import out, styled_status
from gauntlet.errors import ConfigError
from gauntlet.judge import Verdict, judge


def register(app: typer.Typer) -> None:
    """Add the `eval` command."""
    app.command("eval")(evaluate)


def evaluate(
    task_id: str = typer.Argument(..., help="Task id (e.g. triton2triton/softmax) or folder."),
    path: Path = typer.Argument(..., help="The submission: the contract's file, or a folder."),
    device: str = typer.Option(None, "--device", "-d", help="Device (default: the best here)."),
    configs: str = typer.Option("all", "--configs", "-c", help="visible, hidden or all."),
    seed: int = typer.Option(None, "--seed", help="Secret seed for hidden configs and inputs."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict record as JSON."),
    time_cap: float = judge_options.time_cap(),
    compile_reference: bool = judge_options.compile_reference(),
) -> None:
    """Judge a submission; exit 0 on pass, 1 on a failed gate, 2 on bad usage or input."""
    if configs not in ("visible", "hidden", "all"):
        raise ConfigError(f"--configs must be visible, hidden or all, not '{configs}'")
    task = suites.load_by_id(task_id)
    chosen = devices.device_for(task, device)
    if chosen is None:
        raise ConfigError(
            f"task '{task.task_id}' runs on {task.spec.device_kinds()}, "
            f"not on {device or 'any device here'}; see 'gauntlet devices'"
        )
    if not path.exists():
        raise ConfigError(f"submission path '{path}' does not exist")
    with tempfile.TemporaryDirectory(prefix="gauntlet-eval-") as tmp:
        folder = path
        if path.is_file():
            folder = Path(tmp)
            shutil.copyfile(path, folder / task.spec.submission.files[0])
        verdict = judge(
            task,
            folder,
            device=chosen,
            configs=configs,  # type: ignore[arg-type]
            seed=seed if seed is not None else secrets.randbits(62),
            time_cap_s=time_cap,
            compile_reference=compile_reference,
        )
    if as_json:
        out.print_json(verdict.model_dump_json())
    else:
        print_verdict(verdict)
    raise typer.Exit(0 if verdict.passed else 1)


def print_verdict(verdict: Verdict) -> None:
    """The verdict as tables: per config, then the gates and the outcome."""
    table = Table(title=f"{verdict.task_id} on {verdict.device}")
    for column in ("config", "hidden", "correct", "max abs err", "rel L2 (bound)", "speedup"):
        table.add_column(column)
    for result in verdict.configs:
        correct = {True: "[green]yes[/]", False: "[red]no[/]", None: "[dim]-[/]"}[result.correct]
        l2 = (
            f"{result.rel_l2_err:.2g} ({result.rel_l2_bound:.2g})"
            if result.rel_l2_err is not None and result.rel_l2_bound is not None
            else "-"
        )
        speedup = f"{result.timing.speedup:.2f}x" if result.timing else "-"
        abs_err = f"{result.max_abs_err:.3g}" if result.max_abs_err is not None else "-"
        hidden = "yes" if result.config.hidden else ""
        table.add_row(result.config.label(), hidden, correct, abs_err, l2, speedup)
    out.print(table)
    colour = {"passed": "green", "failed": "red", "skipped": "dim"}
    gates = "  ".join(f"{g.name}:[{colour[g.state]}]{g.state}[/]" for g in verdict.gates)
    out.print(gates)
    if verdict.timing_note:
        out.print(f"[dim]{verdict.timing_note}[/]")
    if verdict.speedup is not None:
        out.print(f"speedup (geometric mean over visible configs): {verdict.speedup:.3f}x")
    out.print(f"verdict: {styled_status(verdict.status)}")
    if verdict.reason:
        out.print(verdict.reason)
