"""What the `autotune` agent achieves, and what it costs, beside `baseline` and `expert`.

    python3 scripts/bench_autotune.py --tuned --device-kind sim --out autotune.md
    python3 scripts/bench_autotune.py --tuned --device-kind cpu
    python3 scripts/bench_autotune.py --tuned --device cuda:0 --others '' \\
        --options calls=4,time_cap=2 --time-cap 2 --no-compile-reference --parallel 4 \\
        --run-dir runs/autotune-gpu --out autotune-gpu.md --json autotune-gpu.json
    python3 scripts/bench_autotune.py --tuned --device-kind sim --from-run runs/<make run's id>

Runs `baseline`, `expert` (`--others`) and `autotune[:OPTIONS]` through `gauntlet.start_run`
(the same path as `gauntlet run`: each agent in its child process, each submission judged by the
full protocol with the run's secret seed, hidden configs included) on the chosen tasks, then
prints (and writes with `--out`) a markdown table per task: each agent's status and speedups of
the final verdict (visible configs, then hidden), autotune's judge calls and wall seconds (its
search and its final judgment), and whether autotune improved on the baseline (passed with a
speedup above 1). The header names the machine, the date, the options and the counts; the last
lines sum what the autotune attempts cost, which is what adding the agent adds to a run of the
same tasks (`make run`) before parallelism. `--tuned` keeps only tasks that declare knobs;
`--device-kind` keeps tasks judged on that kind of device here (`sim`, `cpu`, `cuda`).
`--time-cap` and `--no-compile-reference` are the run's (its final judgments'; autotune's own
search judgments are feedback judgments, at most 0.25 s of timing a config).

`--out` and `--json` (the same figures, one object per task) are rewritten after every attempt,
so a run stopped part way leaves what it finished. SIGTERM (a time limit) stops the run as
Ctrl-C does: the running attempts and their workers stop, the recorded ones stay, and the
script exits 3. A `--run-dir` that holds a run is resumed: its finished attempts stay, the rest
run (carry the folder to the next call). `--from-run` runs nothing: it reads a run (a
`make run`, whose agents are these with `autotune:calls=5`) and tables its attempts of the
chosen tasks, with the run's own commit and time span. The header gives the git commit and,
for a run it made to the end, the load average (1 minute) at its end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gauntlet import devices, process, suites
from gauntlet.errors import RunInterrupted
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.runner import RunConfig, resume_run, start_run
from gauntlet.store import AttemptRecord, RunStore


def _tasks(args: argparse.Namespace) -> list[str]:
    chosen = []
    for task in suites.select(suite=args.suite, pattern=args.tasks or None):
        device = devices.device_for(task, args.device)
        kind = devices.kind_of(device).split(":")[0] if device is not None else None
        if kind is None or (args.device_kind and kind != args.device_kind):
            continue
        if args.tuned and task.spec.autotune is None:
            continue
        chosen.append(task.task_id)
    return chosen


def _cell(record: AttemptRecord | None) -> str:
    if record is None:
        return "-"
    verdict = record.verdict
    shown = str(record.status)
    if verdict is not None and verdict.speedup is not None:
        shown += f" {verdict.speedup:.3f}"
    if verdict is not None and verdict.hidden_speedup is not None:
        shown += f" (hidden {verdict.hidden_speedup:.3f})"
    return shown


def _commit() -> str:
    done = process.run(
        ["git", "describe", "--always", "--dirty"], timeout_s=10, cwd=Path(__file__).parent
    )
    return done.stdout.strip() or "unknown"


def _seconds(record: AttemptRecord) -> float:
    return float((record.finished_at - record.started_at).total_seconds())


class TaskFigure(BaseModel):
    """One task's row, as `--json` holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    status: str
    speedup: float | None
    """The final verdict's geometric mean speedup over the baseline, visible configs."""
    hidden_speedup: float | None
    judge_calls: int
    seconds: float
    """The autotune attempt's wall seconds: its search and its final judgment."""
    improved: bool
    """Passed with a visible speedup above 1."""
    choice: str
    """What the agent said it submitted (the knobs, or why the baseline)."""
    finished_at: str
    """When the attempt ended (UTC): which call of a resumed run, on which machine, made it."""


class Table:
    """The figures of the run so far: a markdown table (`--out`) and JSON (`--json`)."""

    def __init__(self, task_ids: list[str], autotune: str, header: str) -> None:
        self.task_ids = task_ids
        self.autotune = autotune
        self.header = header
        self.by: dict[tuple[str, str], AttemptRecord] = {}

    def add(self, record: AttemptRecord) -> None:
        """An attempt's record (a later one of the same task and agent replaces it)."""
        self.by[(record.task_id, record.agent)] = record

    def figures(self) -> list[TaskFigure]:
        """One figure per task whose autotune attempt is recorded, in task order."""
        rows = []
        for task_id in self.task_ids:
            tuned = self.by.get((task_id, self.autotune))
            if tuned is None:
                continue
            verdict = tuned.verdict
            speedup = verdict.speedup if verdict is not None else None
            rows.append(
                TaskFigure(
                    task_id=task_id,
                    status=str(tuned.status),
                    speedup=speedup,
                    hidden_speedup=verdict.hidden_speedup if verdict is not None else None,
                    judge_calls=tuned.usage.turns,
                    seconds=round(_seconds(tuned), 1),
                    improved=tuned.status == "pass" and speedup is not None and speedup > 1.0,
                    choice=tuned.agent_message,
                    finished_at=f"{tuned.finished_at:%Y-%m-%d %H:%M:%S}",
                )
            )
        return rows

    def markdown(self, note: str = "") -> str:
        """The header, one row per task, the count and the cost."""
        figures = self.figures()
        lines = [
            self.header,
            "",
            "| task | baseline | expert | autotune | judge calls | autotune s | improved |",
            "| --- | --- | --- | --- | ---: | ---: | --- |",
        ]
        for row in figures:
            lines.append(
                f"| {row.task_id} | {_cell(self.by.get((row.task_id, 'baseline')))} | "
                f"{_cell(self.by.get((row.task_id, 'expert')))} | "
                f"{_cell(self.by.get((row.task_id, self.autotune)))} | {row.judge_calls} | "
                f"{row.seconds:.1f} | {'yes' if row.improved else 'no'} |"
            )
        costs = [row.seconds for row in figures]
        lines += [
            "",
            f"autotune improved on the baseline on {sum(r.improved for r in figures)} of "
            f"{len(figures)} tasks ({len(self.task_ids)} selected); its attempts took "
            f"{sum(costs):.0f} s in all"
            + (f" (median {statistics.median(costs):.1f} s a task)." if costs else "."),
        ]
        if note:
            lines.append(note)
        return "\n".join(lines)

    def write(self, args: argparse.Namespace, note: str = "") -> str:
        """Write `--out` and `--json` as they stand; the markdown."""
        text = self.markdown(note)
        if args.out is not None:
            args.out.write_text(text + "\n", encoding="utf-8")
        if args.json is not None:
            rows = [row.model_dump() for row in self.figures()]
            data = {"header": self.header, "agent": self.autotune, "note": note, "tasks": rows}
            args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        return text


def _stop(signum: int, frame: object) -> None:
    # A time limit's SIGTERM stops the run as Ctrl-C does: running attempts and their workers
    # are stopped, what was recorded stays for the next call to resume.
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default=None)
    parser.add_argument("--tasks", action="append", default=[], help="task id glob (repeatable)")
    parser.add_argument("--device", default=None, help="e.g. cuda:0 (default: best per task)")
    parser.add_argument("--device-kind", choices=["sim", "cpu", "cuda"], default=None)
    parser.add_argument("--tuned", action="store_true", help="only tasks that declare knobs")
    parser.add_argument("--options", default="", help="autotune options, e.g. calls=8")
    parser.add_argument(
        "--others",
        default="baseline,expert",
        help="agents run beside autotune, comma-separated ('' for none: the speedups are "
        "over the baseline anyway)",
    )
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--time-cap",
        type=float,
        default=DEFAULT_TIME_CAP_S,
        help="seconds of timing per config in the final judgments (the run's --time-cap)",
    )
    parser.add_argument(
        "--no-compile-reference",
        action="store_true",
        help="the final judgments do not time torch.compile of the reference",
    )
    parser.add_argument("--run-dir", type=Path, default=None, help="default: a temporary one")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    parser.add_argument("--json", type=Path, default=None, help="and the figures here")
    parser.add_argument(
        "--from-run", type=Path, default=None, help="table this finished run; run nothing"
    )
    args = parser.parse_args()

    task_ids = _tasks(args)
    if not task_ids:
        print("no task selected", file=sys.stderr)
        return 2
    autotune = "autotune" + (f":{args.options}" if args.options else "")
    run_dir = (
        args.from_run
        or args.run_dir
        or Path(f"/tmp/bench-autotune-{datetime.datetime.now(datetime.UTC):%Y%m%d-%H%M%S}")
    )
    if args.from_run is not None:
        store = RunStore(args.from_run)
        info = store.info()
        records = store.attempts()
        tuned_agents = sorted({r.agent for r in records if r.agent.startswith("autotune")})
        if len(tuned_agents) != 1:
            print(f"the run has {len(tuned_agents)} autotune agents", file=sys.stderr)
            return 2
        autotune = tuned_agents[0]
        commit = info.environment.get("git_revision", "unknown")[:12]
        parallel = info.config.get("parallel", "?")
        span = (
            f"{min(r.started_at for r in records):%Y-%m-%d %H:%M}-"
            f"{max(r.finished_at for r in records):%H:%M} UTC"
            if records
            else "no attempt recorded"
        )
        table = Table(task_ids, autotune, _header(commit, span, autotune, run_dir, parallel))
        for record in records:
            table.add(record)
        print(table.write(args))
        return 0
    config = RunConfig(
        pattern=task_ids,
        agents=[*filter(None, args.others.split(",")), autotune],
        device=args.device,
        parallel=args.parallel,
        seed=args.seed,
        time_cap_s=args.time_cap,
        compile_reference=not args.no_compile_reference,
    )
    span = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    resuming = (run_dir / "run.json").is_file()
    if resuming:
        # A run cut short (a device call's time limit): its finished attempts are kept.
        autotune = _run_autotune(run_dir) or autotune
    table = Table(task_ids, autotune, _header(_commit(), span, autotune, run_dir, args.parallel))
    if resuming:
        for record in RunStore(run_dir).attempts():
            table.add(record)
    table.write(args, "(running)")

    def progress(record: AttemptRecord, finished: int, total: int) -> None:
        table.add(record)
        table.write(args, f"(running: {finished} of {total} attempts of this call recorded)")

    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        if resuming:
            resume_run(run_dir, parallel=args.parallel, progress=progress)
        else:
            start_run(config, run_dir, progress=progress)
    except RunInterrupted as err:
        table.header += f" Stopped: {err}"
        print(table.write(args, f"Stopped before the end; resume with --run-dir {run_dir}."))
        return 3
    finally:
        signal.signal(signal.SIGTERM, previous)
    table.header += f" Load average {os.getloadavg()[0]:.1f} at the end."
    print(table.write(args))
    return 0


def _run_autotune(run_dir: Path) -> str | None:
    """The autotune agent (with its options) of the run in `run_dir`."""
    agents = [a for a in RunStore(run_dir).info().agents if a.startswith("autotune")]
    return agents[0] if len(agents) == 1 else None


def _header(commit: str, span: str, autotune: str, run_dir: Path, parallel: object) -> str:
    return (
        f"Machine: {devices.cpu_model()} ({platform.machine()}, {os.cpu_count()} cores), "
        f"{', '.join(d.description for d in devices.list_devices())}; "
        f"{span}; commit {commit}; agent `{autotune}`; run {run_dir}, --parallel {parallel}."
    )


if __name__ == "__main__":
    raise SystemExit(main())
