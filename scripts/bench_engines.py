"""Attempts per minute of a suite through each engine: the local pool and Ray, same seed.

    python3 scripts/bench_engines.py --suite accel --agents expert --parallel 2 --cpus 2
    python3 scripts/bench_engines.py --suite gpu --agents expert autotune --engines ray \\
        --gpus 1 --out one_gpu.md        # then --gpus 8 on an 8-GPU host (issue 25)

Each engine runs the whole selection once into a run directory of its own (`--keep DIR` keeps
them), with the same secret seed, one after the other. The local engine runs `--parallel`
attempts at once; Ray is started here first (`--cpus` CPUs, `--gpus` GPUs; its start is timed
apart and left out of the rate) and runs as many attempts at once as its resources allow.
Prints, and appends to `--out`, a markdown table: attempts, wall seconds, attempts per minute,
the ratio to the first engine, and whether every verdict equals the first engine's (status,
reason and verdict, without durations, environment and stderr).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.runner import RunConfig, start_run
from gauntlet.store import AttemptRecord

#: Not compared: how long, where, and the submission's stderr (the profiler's time stamps).
VOLATILE = {"duration_s", "phases_s", "environment", "stderr"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _verdicts(records: list[AttemptRecord]) -> dict[str, Any]:
    return {
        r.attempt_id: (r.status, r.reason, _stable(r.verdict.model_dump(mode="json")))
        if r.verdict
        else (r.status, r.reason, None)
        for r in records
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="accel")
    parser.add_argument("--tasks", nargs="*", help="globs over task ids instead of --suite")
    parser.add_argument("--agents", nargs="+", default=["expert"])
    parser.add_argument("--engines", nargs="+", default=["local", "ray"])
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cpus", type=int, default=None, help="CPUs of the local Ray")
    parser.add_argument("--gpus", type=int, default=None, help="GPUs of the local Ray")
    parser.add_argument("--gpus-per-judgment", type=float, default=1.0)
    parser.add_argument("--device", default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--time-cap",
        type=float,
        default=DEFAULT_TIME_CAP_S,
        help="timing seconds per config (`gauntlet run`)",
    )
    parser.add_argument("--keep", type=Path, help="keep the run directories under this folder")
    parser.add_argument("--out", type=Path, help="append the table to this markdown file")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-engines-"))
    rows: list[str] = []
    first: dict[str, Any] | None = None
    first_rate = 0.0
    ray_start_s: float | None = None
    for engine in args.engines:
        if engine == "ray":
            import ray

            started = time.monotonic()
            ray.init(
                num_cpus=args.cpus, num_gpus=args.gpus, include_dashboard=False, log_to_driver=False
            )
            ray_start_s = time.monotonic() - started
        config = RunConfig(
            suite=None if args.tasks else args.suite,
            pattern=args.tasks or None,
            agents=args.agents,
            device=args.device,
            parallel=args.parallel if engine == "local" else 1,
            seed=args.seed,
            engine=engine,
            gpus_per_judgment=args.gpus_per_judgment,
            time_cap_s=args.time_cap,
        )
        out = root / engine
        shutil.rmtree(out, ignore_errors=True)
        started = time.monotonic()
        store = start_run(config, out)
        wall_s = time.monotonic() - started
        records = store.attempts()
        rate = len(records) / wall_s * 60
        verdicts = _verdicts(records)
        if first is None:
            first, first_rate, same = verdicts, rate, "-"
        else:
            same = "yes" if verdicts == first else "NO"
        statuses = {s: sum(r.status == s for r in records) for s in {r.status for r in records}}
        label = engine if engine == "local" else f"ray ({args.cpus or 'all'} CPUs"
        if engine == "local":
            label += f" --parallel {args.parallel}"
        else:
            label += f", {args.gpus if args.gpus is not None else 'all'} GPUs)"
        rows.append(
            f"| {label} | {len(records)} | {wall_s:.1f} | {rate:.1f} | "
            f"{rate / first_rate:.2f} | {same} | "
            + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
            + " |"
        )
        print(rows[-1], flush=True)
        if engine == "ray":
            ray.shutdown()
    selection = " ".join(args.tasks) if args.tasks else f"suite {args.suite}"
    header = [
        f"{selection}, agents {' '.join(args.agents)}, seed {args.seed}, time cap "
        f"{config.time_cap_s} s; "
        f"{platform.node()} ({os.cpu_count()} cores), "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; Ray start {ray_start_s or 0:.1f} s (not "
        "in the rates)",
        "",
        "| engine | attempts | wall s | attempts/min | ratio | same verdicts | statuses |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    table = "\n".join(header + rows) + "\n"
    print(table)
    if args.out:
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write("\n" + table)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if all("| NO |" not in row for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
