"""Wall time of one `gauntlet eval` per candidate, for two source trees side by side.

    python3 scripts/judge_cost.py --task cuda2cuda/matmul --tree new=src --tree old=/tmp/old/src

Runs `python -m gauntlet eval TASK <task>/expert --device cuda:0 --configs visible --json` with
each tree's package first on PYTHONPATH, alternating trees (A B A B ...) so drift on the machine
falls on both, after one untimed warm-up each (builds cached). Prints and writes (`--out`) the
wall times, the medians and the ratio of the medians: the judge's cost per candidate before and
after a change, measured the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from gauntlet import process


def _eval_once(
    tree: Path, task: str, device: str, tasks: Path
) -> tuple[float, str, dict[str, float]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{tree}{os.pathsep}{env.get('PYTHONPATH', '')}"
    # Every tree judges this checkout's tasks (a tree unpacked elsewhere has none beside it).
    env["GAUNTLET_TASKS_DIR"] = str(tasks.resolve())
    expert = tasks / task / "expert"
    argv = [sys.executable, "-m", "gauntlet", "eval", task, str(expert), "--device", device]
    started = time.monotonic()
    finished = process.run(
        [*argv, "--configs", "visible", "--json"], timeout_s=1200, env=env, output_limit=1 << 22
    )
    wall = time.monotonic() - started
    try:
        verdict = json.loads(finished.stdout)
    except json.JSONDecodeError:
        return wall, f"no verdict (exit {finished.returncode}): {finished.stderr[-300:]}", {}
    return wall, str(verdict.get("status")), dict(verdict.get("phases_s") or {})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cuda2cuda/matmul")
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a src tree")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=Path("tasks"),
        help="the task folders (an older tree may not read the newest task format)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = dict(item.split("=", 1) for item in args.tree)
    walls: dict[str, list[float]] = {name: [] for name in trees}
    statuses: dict[str, list[str]] = {name: [] for name in trees}
    phases: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for path in trees.values():
        # Warm-up: builds, caches.
        _eval_once(Path(path).resolve(), args.task, args.device, args.tasks_dir)
    for _ in range(args.repeats):
        for name, path in trees.items():
            wall, status, split = _eval_once(
                Path(path).resolve(), args.task, args.device, args.tasks_dir
            )
            walls[name].append(wall)
            statuses[name].append(status)
            phases[name].append(split)
            print(f"{name}: {wall:.1f} s ({status})", flush=True)
    medians = {name: statistics.median(values) for name, values in walls.items()}
    report = {
        "task": args.task,
        "walls_s": walls,
        "statuses": statuses,
        "medians_s": medians,
        "phases_s": phases,
    }
    names = list(trees)
    if len(names) == 2 and medians[names[1]] > 0:
        report[f"{names[0]}/{names[1]}"] = medians[names[0]] / medians[names[1]]
    print(json.dumps(report, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
