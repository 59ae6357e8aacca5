"""The judge's cost per candidate: cold (`gauntlet.judge`), warm (`gauntlet.Judge`), feedback.

    python3 scripts/bench_judge.py --device cpu --tasks triton2triton/softmax --repeats 3
    python3 scripts/bench_judge.py --device cuda:0 --suite gpu-quick --out bench.md \\
        --kernelbench-eval ../shared/anchors/kb_eval_one.py \\
        --kernelbench-case kb/KernelBench/level1/1_Square_matrix_multiplication_.py \\
            ../shared/anchors/kernels/l1_1_matmul.py

For each task its expert is judged with the full protocol (hidden configs, timing on a GPU):
first cold, as one `gauntlet.judge` call starts its workers; then `--repeats` times through one
open `Judge` (spare workers started ahead, references cached per seed); then in `feedback`
mode (visible configs). Each judgment uses a fresh seed, so no reference is reused within a
task unless said. Prints and writes (`--out`) a markdown table: wall per candidate, where the
time went (`phases_s`), and candidates per hour for the warm full protocol. With
`--kernelbench-eval SCRIPT --kernelbench-case PROBLEM KERNEL`, KernelBench's own evaluation of
the same problem and kernel is timed beside it, as a whole process (`SCRIPT PROBLEM KERNEL
BUILD_DIR OUT_JSON`, the anchors' `kb_eval_one.py` interface), cold (fresh build folder) and
warm (same folder).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gauntlet import process, suites
from gauntlet.judge import judge
from gauntlet.judge.service import Judge
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.judge.verdict import Verdict

PHASES = (
    "build",
    "spawn",
    "imports",
    "reference",
    "startup",
    "correctness",
    "timing",
    "exit",
    "teardown",
)
#: Parts of `correctness`: the configs' first calls (compiling, loading kernels) and the
#: judge's own comparisons.
PARTS = ("first_trial", "compare")


def _row(label: str, walls: list[float], verdicts: list[Verdict]) -> str:
    phases = {
        name: statistics.median(v.phases_s.get(name, 0.0) for v in verdicts)
        for name in PHASES + PARTS
    }
    statuses = ",".join(sorted({v.status for v in verdicts}))
    cells = " | ".join(f"{phases[name]:.2f}" for name in PHASES + PARTS)
    return f"| {label} | {len(walls)} | {statistics.median(walls):.2f} | {cells} | {statuses} |"


def bench_task(
    task_id: str,
    device: str,
    repeats: int,
    seed: int,
    time_cap_s: float,
    cold: bool = True,
    spares: int = 2,
) -> tuple[list[str], float]:
    """Table rows for one task, and the warm full-protocol seconds per candidate."""
    task = suites.load_by_id(task_id)
    expert = task.root / "expert"
    rows = []
    if cold:
        started = time.monotonic()
        verdict = judge(
            task, expert, device=device, seed=seed, compile_reference=False, time_cap_s=time_cap_s
        )
        rows.append(_row(f"{task_id} cold", [time.monotonic() - started], [verdict]))
    warm_walls: list[float] = []
    warm: list[Verdict] = []
    feedback_walls: list[float] = []
    feedback: list[Verdict] = []
    with Judge(device=device, time_cap_s=time_cap_s, spare_workers=spares) as service:
        service.warm(device, wait_s=120)
        for k in range(repeats):
            started = time.monotonic()
            warm.append(service.eval(task, expert, seed=seed + 1 + k))
            warm_walls.append(time.monotonic() - started)
        for k in range(repeats):
            started = time.monotonic()
            feedback.append(service.eval(task, expert, seed=seed + 1 + k, mode="feedback"))
            feedback_walls.append(time.monotonic() - started)
    rows.append(_row(f"{task_id} warm", warm_walls, warm))
    rows.append(_row(f"{task_id} warm feedback", feedback_walls, feedback))
    return rows, statistics.median(warm_walls)


def bench_kernelbench(script: Path, problem: Path, kernel: Path, repeats: int) -> list[str]:
    """KernelBench's own evaluation of a problem and kernel, as a whole process."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="kb-build-") as build:
        for label in ["cold"] + ["warm"] * repeats:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                argv = [sys.executable, str(script), str(problem), str(kernel), build, out.name]
                started = time.monotonic()
                finished = process.run(argv, timeout_s=3600, output_limit=1 << 20)
                wall = time.monotonic() - started
                try:
                    result = json.loads(Path(out.name).read_text() or "{}")
                except json.JSONDecodeError:
                    result = {}
            phases = result.get("phases", {})
            rows.append(
                f"| KernelBench {problem.stem} {label} | 1 | {wall:.2f} | "
                f"{json.dumps(phases)} | exit {finished.returncode} |"
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tasks", action="append", default=[], help="task id (repeatable)")
    parser.add_argument("--suite", help="a suite of tasks/suites.toml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument(
        "--time-cap", type=float, default=DEFAULT_TIME_CAP_S, help="timing seconds per config"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--no-cold", action="store_true", help="skip the cold judgment (builds must be cached)"
    )
    parser.add_argument(
        "--spares",
        type=int,
        default=2,
        help="spare workers per role (back-to-back judgments outrun one spare's imports)",
    )
    parser.add_argument("--kernelbench-eval", type=Path)
    parser.add_argument("--kernelbench-case", nargs=2, type=Path, metavar=("PROBLEM", "KERNEL"))
    args = parser.parse_args()
    task_ids = list(args.tasks)
    if args.suite:
        task_ids += suites.suites()[args.suite]
    if not task_ids:
        parser.error("name --tasks or --suite")
    header = [
        f"Judge cost per candidate on {args.device}, {time.strftime('%Y-%m-%d')}, seconds "
        "(medians; phases from the verdicts' `phases_s`)",
        "",
        "| judgment | n | wall | " + " | ".join(PHASES + PARTS) + " | verdicts |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in PHASES + PARTS) + " | --- |",
    ]
    rows: list[str] = []
    warm_seconds: list[float] = []
    for task_id in task_ids:
        task_rows, seconds = bench_task(
            task_id,
            args.device,
            args.repeats,
            args.seed,
            args.time_cap,
            cold=not args.no_cold,
            spares=args.spares,
        )
        rows += task_rows
        warm_seconds.append(seconds)
        print("\n".join(task_rows), flush=True)
    if args.kernelbench_eval and args.kernelbench_case:
        problem, kernel = args.kernelbench_case
        rows += bench_kernelbench(args.kernelbench_eval, problem, kernel, args.repeats)
    per_hour = 3600 / statistics.mean(warm_seconds)
    footer = [
        "",
        f"Warm full protocol, one judgment at a time: {per_hour:.0f} candidates per hour "
        f"({len(task_ids)} task(s), mean of the per-task medians).",
    ]
    text = "\n".join(header + rows + footer)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
