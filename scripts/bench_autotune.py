"""What the `autotune` agent achieves, and what it costs, beside `baseline` and `expert`.

    python3 scripts/bench_autotune.py --tuned --device-kind sim --out autotune.md
    python3 scripts/bench_autotune.py --tuned --device-kind cpu
    python3 scripts/bench_autotune.py --tuned --device cuda:0 --others '' \\
        --options calls=4,time_cap=2 --run-dir runs/autotune-gpu --out autotune-gpu.md
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
`--device-kind` keeps tasks judged on that kind of device here (`sim`, `cpu`, `cuda`). A
`--run-dir` that holds a run is resumed: its finished attempts stay, the rest run.
`--from-run` runs nothing: it reads a finished run (a `make run`, whose agents are these with
`autotune:calls=5`) and tables its attempts of the chosen tasks, with the run's own commit and
time span. The header gives the git commit and, for a run it made, the load average (1 minute)
at its end.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
from pathlib import Path

from gauntlet import devices, process, suites
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


def _cpu() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


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
    parser.add_argument("--run-dir", type=Path, default=None, help="default: a temporary one")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
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
    config = RunConfig(
        pattern=task_ids,
        agents=[*filter(None, args.others.split(",")), autotune],
        device=args.device,
        parallel=args.parallel,
        seed=args.seed,
    )
    commit = _commit()
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
        )
        load = ""
    else:
        if (run_dir / "run.json").is_file():
            # A run cut short (a device call's time limit): its finished attempts are kept.
            records = resume_run(run_dir, parallel=args.parallel).attempts()
        else:
            records = start_run(config, run_dir).attempts()
        parallel = args.parallel
        span = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
        load = f"load average {os.getloadavg()[0]:.1f} at the end; "
    by = {(r.task_id, r.agent): r for r in records}
    lines = [
        f"Machine: {_cpu()} ({platform.machine()}, {os.cpu_count()} cores), "
        f"{', '.join(d.description for d in devices.list_devices())}; "
        f"{span}; commit {commit}; {load}"
        f"agent `{autotune}`; run {run_dir}, --parallel {parallel}.",
        "",
        "| task | baseline | expert | autotune | judge calls | autotune s | improved |",
        "| --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    improved = 0
    costs = []
    for task_id in task_ids:
        tuned = by.get((task_id, autotune))
        if tuned is None:
            continue
        speedup = tuned.verdict.speedup if tuned.verdict is not None else None
        better = tuned.status == "pass" and speedup is not None and speedup > 1.0
        improved += better
        costs.append(_seconds(tuned))
        lines.append(
            f"| {task_id} | {_cell(by.get((task_id, 'baseline')))} | "
            f"{_cell(by.get((task_id, 'expert')))} | {_cell(tuned)} | {tuned.usage.turns} | "
            f"{_seconds(tuned):.1f} | {'yes' if better else 'no'} |"
        )
    lines += [
        "",
        f"autotune improved on the baseline on {improved} of {len(costs)} tasks; its attempts "
        f"took {sum(costs):.0f} s in all (median {statistics.median(costs):.1f} s a task).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
