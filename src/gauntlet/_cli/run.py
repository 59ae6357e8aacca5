"""`gauntlet run`: tasks x agents x attempts into a run directory, with progress and a summary."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gauntlet._cli import judge_options
from gauntlet._cli.output import out, styled_status
from gauntlet.agents.base import Budget, ModelSettings
from gauntlet.engines import ENGINES
from gauntlet.errors import ConfigError
from gauntlet.judge.pipeline import geomean
from gauntlet.runner import Job, RunConfig, plan_run, resume_run, start_run
from gauntlet.store import AttemptRecord, RunStore

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def register(app: typer.Typer) -> None:
    """Add the `run` command."""
    app.command("run")(run)


def parse_duration(text: str) -> float:
    """'90s', '15m', '1.5h', '1h30m' or '600' (seconds) -> seconds, more than zero.

    Raises:
        ConfigError: Not a duration, or not more than zero.
    """
    word = text.strip().lower()
    examples = "examples: 90s, 15m, 1h30m, 600"
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        seconds = float(word)
    else:
        parts = _DURATION_PART.findall(word)
        units = [unit for _, unit in parts]
        ordered = units == sorted(set(units), key="hms".index)
        if not parts or "".join(v + u for v, u in parts) != word or not ordered:
            raise ConfigError(f"budget '{text}' is not a duration ({examples})")
        seconds = sum(float(value) * _SECONDS[unit] for value, unit in parts)
    if seconds <= 0:
        raise ConfigError(f"budget '{text}' must be more than zero ({examples})")
    return seconds


def run(
    suite: str = typer.Option(None, "--suite", "-s", help="Suite (default: all tasks here)."),
    tasks: list[str] = typer.Option(
        None, "--tasks", help="Glob over task ids, e.g. 'triton2triton/*' (repeatable: any)."
    ),
    track: str = typer.Option(None, "--track", help="Only this track."),
    agent: list[str] = typer.Option(None, "--agent", "-a", help="Agent (repeatable)."),
    model: str = typer.Option(None, "--model", "-m", help="Model for LLM agents."),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
    device: str = typer.Option(None, "--device", "-d", help="Device (default: the best here)."),
    out_dir: Path = typer.Option(None, "--out", "-o", help="Run directory to create."),
    resume: Path = typer.Option(None, "--resume", help="Continue this run directory."),
    redo: list[str] = typer.Option(
        None, "--redo", help="With --resume: make these tasks' attempts again (glob; repeatable)."
    ),
    parallel: int = typer.Option(1, "--parallel", "-j", min=1, help="Attempts at once."),
    budget: str = typer.Option("30m", "--budget", help="Wall-clock budget per attempt."),
    turns: int = typer.Option(0, "--turns", min=0, help="Turn budget (0: per task level)."),
    tokens: int = typer.Option(
        0, "--tokens", min=0, help="Token budget per attempt, input plus output (0: none)."
    ),
    cost: float = typer.Option(0.0, "--cost", min=0.0, help="Dollar budget per attempt (0: none)."),
    attempts: int = typer.Option(1, "--attempts", "-k", min=1, help="Attempts per task/agent."),
    seed: int = typer.Option(None, "--seed", help="Secret seed (default: random)."),
    keep_workspaces: bool = typer.Option(False, "--keep-workspaces", help="Keep workspaces."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="List the attempts the run would make; run and write nothing."
    ),
    time_cap: float = judge_options.time_cap(),
    compile_reference: bool = judge_options.compile_reference(),
    engine: str = typer.Option(
        None,
        "--engine",
        help="Where attempts run: local (a thread pool here, the default) or ray (Ray tasks; "
        "with --resume: the run's own engine unless given).",
    ),
    ray_address: str = typer.Option(
        None,
        "--ray-address",
        help="With --engine ray: join this Ray cluster (default: start a local Ray).",
    ),
    gpus_per_judgment: float = typer.Option(
        None,
        "--gpus-per-judgment",
        help="With --engine ray: the share of a GPU each judgment holds (default 1).",
    ),
) -> None:
    """Run agents on tasks; exit 0 when the run completed, whatever the agents achieved."""
    if redo and resume is None:
        raise ConfigError("--redo needs --resume RUN_DIR: it redoes a recorded run's attempts")
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"unknown engine '{engine}' for --engine (known: {', '.join(ENGINES)})")
    given = {"engine": engine, "ray_address": ray_address, "gpus_per_judgment": gpus_per_judgment}
    engine_options = {key: value for key, value in given.items() if value is not None}
    ray_only = set(engine_options) - {"engine"}
    if ray_only and engine_options.get("engine", "local" if resume is None else None) == "local":
        raise ConfigError("--ray-address and --gpus-per-judgment need --engine ray")
    config = None
    if resume is None:
        config = RunConfig(
            suite=suite,
            pattern=tasks or None,
            track=track,
            agents=agent or ["baseline", "expert"],
            model=ModelSettings(model=model, base_url=base_url),
            device=device,
            attempts=attempts,
            budget=Budget(wall_s=parse_duration(budget), turns=turns, tokens=tokens, cost_usd=cost),
            parallel=parallel,
            seed=seed,
            keep_workspaces=keep_workspaces,
            time_cap_s=time_cap,
            compile_reference=compile_reference,
            **engine_options,
        )
        if dry_run:
            print_plan(*plan_run(config))
            return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=out,
        transient=False,
        disable=not out.is_terminal,
    ) as bar:
        handle = bar.add_task("attempts", total=None, last="")

        def progress(record: AttemptRecord, done: int, total: int) -> None:
            who = escape(f"{record.task_id} [{record.agent}]")
            last = f"{who} {styled_status(record.status)}"
            if out.is_terminal:
                bar.update(handle, completed=done, total=total, last=last)
            else:
                # A log (a pipe, a file, CI): a line per finished attempt, as it finishes.
                out.print(f"[{done}/{total}] {last}", soft_wrap=True)

        if config is None:
            assert resume is not None
            store = resume_run(
                resume, parallel=parallel, progress=progress, redo=redo or (), engine=engine_options
            )
        else:
            stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
            store = start_run(config, out_dir or Path("runs") / stamp, progress=progress)
    print_summary(store)
    out.print(f"run directory: {store.root}")


def print_plan(jobs: list[Job], skipped: list[str]) -> None:
    """The attempts a run would make: task, agent, attempt index and device."""
    table = Table(title=f"dry run: {len(jobs)} attempts")
    for column in ("task", "agent", "attempt", "device"):
        table.add_column(column, overflow="fold")
    for job in jobs:
        table.add_row(job.task.task_id, job.agent, str(job.index), job.device)
    out.print(table)
    if skipped:
        out.print(escape(f"not run here (no device for them): {', '.join(skipped)}"))


def print_summary(store: RunStore) -> None:
    """Per task and agent: the status, visible configs correct, speedup; then per agent totals."""
    records = store.attempts()
    agents = sorted({r.agent for r in records})
    by_cell: dict[tuple[str, str], list[AttemptRecord]] = defaultdict(list)
    for record in records:
        by_cell[(record.task_id, record.agent)].append(record)
    table = Table(title=f"run {store.root.name}: {len(records)} attempts")
    table.add_column("task")
    for name in agents:
        table.add_column(name)
    for task_id in sorted({r.task_id for r in records}):
        cells = []
        for name in agents:
            cell = []
            for record in by_cell.get((task_id, name), []):
                text = styled_status(record.status)
                verdict = record.verdict
                if verdict is not None:
                    visible = verdict.visible()
                    if visible:
                        right = sum(1 for c in visible if c.correct)
                        text += f" {right}/{len(visible)}"
                    if verdict.speedup is not None:
                        text += f" {verdict.speedup:.2f}x"
                cell.append(text)
            cells.append("\n".join(cell) or "-")
        table.add_row(task_id, *cells)
    out.print(table)
    totals = Table(title="per agent")
    for column in ("agent", "platform/track", "attempts", "pass", "geomean speedup (passing)"):
        totals.add_column(column)
    groups: dict[tuple[str, str], list[AttemptRecord]] = defaultdict(list)
    for record in records:
        groups[(record.agent, record.platform or record.track)].append(record)
    for (name, group), items in sorted(groups.items()):
        passing = [r.verdict.speedup for r in items if r.status == "pass" and r.verdict]
        speedup = geomean([s for s in passing if s is not None])
        shown = f"{speedup:.2f}x" if speedup is not None else "not timed"
        passed = sum(r.status == "pass" for r in items)
        totals.add_row(name, group, str(len(items)), f"{passed}/{len(items)}", shown)
    out.print(totals)
