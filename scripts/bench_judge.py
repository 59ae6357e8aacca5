"""The judge's cost per candidate: cold (`gauntlet.judge`), warm (`gauntlet.Judge`), feedback.

    python3 scripts/bench_judge.py --device cpu --tasks triton2triton/softmax --repeats 3
    python3 scripts/bench_judge.py --device cuda:0 --suite gpu-quick --out bench.md
    python3 scripts/bench_judge.py --device cuda:0 --out kb.md \\
        --case .kb-kit/tasks/l1/1_square_matrix_multiplication .kb-kit/submissions/l1_1 \\
        --kernelbench-eval .kb-kit/kb_eval_one.py \\
        --kernelbench-case .kb-kit/kb/KernelBench/level1/1_Square_matrix_multiplication_.py \\
            .kb-kit/kernels/matmul_new.py

For each task its expert is judged with the full protocol (hidden configs, timing on a GPU):
first cold, as one `gauntlet.judge` call starts its workers; then `--repeats` times through one
open `Judge` (spare workers started ahead and waited for until imported, references cached per
seed), back to back; then in `feedback` mode (visible configs), back to back. Each judgment
uses a fresh seed, so no reference is reused within a task unless said.
`--case TASK_DIR SUBMISSION_DIR` (repeatable) judges a task folder with a submission folder
the same way (e.g. an imported KernelBench task with a KernelBench kernel:
`scripts/kb_kit.py` builds `.kb-kit/`). Prints and writes (`--out`) a markdown table: wall per
candidate, where the time went (`phases_s`, and the wall no top-level phase accounts for), the
median speedup, and candidates per hour for the warm full protocol, and how the judgments'
candidate workers came (`spare`: imported when
taken; `spare importing`: taken before its imports were done, so the judgment waited for
them; `new`: no spare; and the median seconds a spare's imports took). On a GPU the timing's
columns say where a timed call's host time goes
(`timing.pairs.*`: fresh inputs, queueing the call, waiting for the device, waiting for the
judge's go-ahead, sending sampled outputs: staging them to the host, then in a memory file, in
parts (`.make`: the files made and filled) or inline on the socket; `timing.judge*`: the
judge's own share), with the
timed calls and milliseconds of `timing.pairs` per call, and of them the device's and the
sampled outputs'.
With `--threads N`, each case is then judged by N threads at once through
the same `Judge` (`--repeats` judgments each, full protocol then feedback; `--spares N` keeps
a spare for each), and the footer gives candidates per hour at that parallelism: judgments
share the GPU except while one times (`docs/gpu.md`, the GPU's lock). With
`--kernelbench-eval SCRIPT --kernelbench-case PROBLEM KERNEL`
(repeatable), KernelBench's own evaluation of the same problem and kernel is timed after ours,
as a whole process (`SCRIPT PROBLEM KERNEL BUILD_DIR OUT_JSON`, the anchors' `kb_eval_one.py`
interface), cold (fresh build folder) and warm (same folder), in a second table; where there
are as many cases as KernelBench cases, the i-th of each is compared (issue 18's ratios).
Every row is printed, and `--out` rewritten, as soon as it is measured (`--verdicts`: each
judgment's whole verdict, every phase, appended as a JSON line): a run stopped by a
time-out keeps what it measured. A case our judge cannot judge (its own failure, e.g. the task
needs a device not here) is a row saying so and exit status 1, as is a KernelBench side
whose every warm process failed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gauntlet import process, suites
from gauntlet.errors import GauntletError
from gauntlet.judge import judge
from gauntlet.judge.service import Judge
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.judge.verdict import PHASES, Mode, Verdict
from gauntlet.task import Task, load_task

#: Parts of `correctness`: the configs' first calls (compiling, loading kernels) and the
#: judge's own comparisons, of which moving the tensors to the comparing device; and, where a
#: config's references were too large to hold (docs/gpu.md), the wait for each one streamed
#: from the reference worker (inside `compare` and `timing.judge_check`), of which the worker's
#: computing (`.compute`; the rest is their sending and reading). Of `reference`, the results
#: sent (`reference.send`), of which copied off the GPU (`.stage`) and their memory files made
#: and filled (`.make`).
PARTS = (
    "first_trial",
    "compare",
    "compare.moved",
    "reference.streamed",
    "reference.streamed.compute",
    "reference.streamed.queue",
    "reference.send",
    "reference.send.stage",
    "reference.send.make",
)
#: Parts of `timing` (GPU only): the timed pairs, split per step of a call by the worker
#: (`timing.measure`), and the judge's own share of the exchanges (`timekeeper.follow`).
TIMING_PARTS = (
    "timing.pairs",
    "timing.pairs.prepare",
    "timing.pairs.launch",
    "timing.pairs.sync",
    "timing.pairs.report",
    "timing.pairs.sample",
    "timing.pairs.sample.stage",
    "timing.pairs.sample.file",
    "timing.pairs.sample.parts",
    "timing.pairs.sample.parts.make",
    "timing.pairs.sample.inline",
    "timing.judge",
    "timing.judge_samples",
    "timing.judge_check",
)
COLUMNS = PHASES + PARTS + TIMING_PARTS


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _timed_calls(verdict: Verdict) -> int:
    """The timed calls of a verdict's pairs (two a pair, every config timed)."""
    return sum(2 * c.timing.count for c in verdict.configs if c.timing is not None)


def _per_call_ms(verdicts: list[Verdict], phase: str) -> str:
    """The median over the verdicts of a phase's milliseconds per timed call ("-": none)."""
    values = [
        1e3 * v.phases_s.get(phase, 0.0) / _timed_calls(v) for v in verdicts if _timed_calls(v)
    ]
    return f"{statistics.median(values):.2f}" if values else "-"


def _row(label: str, walls: list[float], verdicts: list[Verdict]) -> str:
    phases = {
        name: statistics.median(v.phases_s.get(name, 0.0) for v in verdicts) for name in COLUMNS
    }
    statuses = ",".join(sorted({v.status for v in verdicts}))
    cells = " | ".join(f"{phases[name]:.2f}" for name in COLUMNS)
    speedup = _median([v.speedup for v in verdicts if v.speedup is not None])
    shown = f"{speedup:.3f}" if speedup is not None else "-"
    came = Counter(v.environment.get("candidate_worker", "-") for v in verdicts)
    candidates = ", ".join(f"{origin} {n}" for origin, n in sorted(came.items()))
    imports_s = [
        float(v.environment["candidate_imports_s"])
        for v in verdicts
        if "candidate_imports_s" in v.environment
    ]
    if imports_s:
        # How long a candidate spare's imports took (beside the judgments): what sizes the
        # spares a loop needs ahead, against the wall per candidate.
        candidates += f" (spares imported in {statistics.median(imports_s):.1f} s)"
    # The wall no phase accounts for (the judge's own steps around its workers).
    outside = statistics.median(
        wall - sum(v.phases_s.get(name, 0.0) for name in PHASES)
        for wall, v in zip(walls, verdicts, strict=True)
    )
    calls = statistics.median(_timed_calls(v) for v in verdicts)
    # Milliseconds of `timing.pairs` per timed call, and of them the device's (the wait for it)
    # and the sampled outputs': the rest is the host's own per call.
    ms = " | ".join(
        _per_call_ms(verdicts, phase)
        for phase in ("timing.pairs", "timing.pairs.sync", "timing.pairs.sample")
    )
    return (
        f"| {label} | {len(walls)} | {statistics.median(walls):.2f} | {outside:.2f} | {cells} "
        f"| {calls:.0f} "
        f"| {ms} | {shown} | {candidates} | {statuses} |"
    )


class Table:
    """The markdown output: rows printed, and `out` rewritten, as each is measured."""

    def __init__(self, title: str, out: Path | None, verdicts: Path | None = None) -> None:
        self.lines = [title]
        self.out = out
        self.verdicts = verdicts
        if verdicts is not None:
            verdicts.write_text("")
        print(title, flush=True)
        self._save()

    def add(self, *lines: str) -> None:
        """Print and keep lines (rows, a table's header, a note)."""
        self.lines += lines
        print("\n".join(lines), flush=True)
        self._save()

    def _save(self) -> None:
        if self.out is not None:
            self.out.write_text("\n".join(self.lines) + "\n")

    def keep(self, label: str, wall_s: float, verdict: Verdict) -> None:
        """Append a judgment's whole verdict (every phase, not only the table's) to `verdicts`."""
        if self.verdicts is not None:
            line = {"judgment": label, "wall_s": wall_s, "verdict": verdict.model_dump(mode="json")}
            with self.verdicts.open("a") as out:
                out.write(json.dumps(line) + "\n")


@dataclass
class Timed:
    """One case's medians, for the per-hour figure and the comparison with KernelBench."""

    label: str
    cold_s: float | None = None
    warm_s: float | None = None
    feedback_s: float | None = None
    side_by_side_s: float | None = None
    """With `--threads N`: the wall of the full-protocol judgments made N at a time, per
    candidate (the whole wall over their count)."""


def bench_case(
    task: Task,
    submission: Path,
    label: str,
    table: Table,
    *,
    device: str,
    repeats: int,
    seed: int,
    time_cap_s: float,
    cold: bool = True,
    spares: int = 2,
    threads: int = 1,
) -> Timed:
    """Judge one submission of one task cold, warm and in feedback mode; rows go to `table`.

    With `threads` over 1, then as many threads judge `repeats` candidates each through the
    same `Judge` (full protocol, then feedback): judgments side by side on one device.
    """
    timed = Timed(label)
    if cold:
        started = time.monotonic()
        verdict = judge(
            task, submission, device=device, seed=seed, compile_reference=False,
            time_cap_s=time_cap_s,
        )  # fmt: skip
        timed.cold_s = time.monotonic() - started
        table.keep(f"{label} cold", timed.cold_s, verdict)
        table.add(_row(f"{label} cold", [timed.cold_s], [verdict]))
    with Judge(device=device, time_cap_s=time_cap_s, spare_workers=spares) as service:
        if not service.warm(device, wait_s=120, imported=True):
            table.add(f"(the spares on {device} were not imported within 120 s)")
        modes: tuple[Mode, ...] = ("final", "feedback")
        for mode in modes:
            walls: list[float] = []
            verdicts: list[Verdict] = []
            for k in range(repeats):
                started = time.monotonic()
                verdicts.append(service.eval(task, submission, seed=seed + 1 + k, mode=mode))
                walls.append(time.monotonic() - started)
            suffix = "warm" if mode == "final" else "warm feedback"
            for wall, verdict in zip(walls, verdicts, strict=True):
                table.keep(f"{label} {suffix}", wall, verdict)
            table.add(_row(f"{label} {suffix}", walls, verdicts))
            if mode == "final":
                timed.warm_s = statistics.median(walls)
            else:
                timed.feedback_s = statistics.median(walls)
        for mode in modes if threads > 1 else ():
            walls, verdicts, whole_s = _side_by_side(
                service, task, submission, mode, threads, repeats, seed + 1 + repeats
            )
            suffix = "warm" if mode == "final" else "warm feedback"
            table.add(_row(f"{label} {suffix} x{threads}", walls, verdicts))
            if mode == "final":
                timed.side_by_side_s = whole_s / len(verdicts)
    return timed


def _side_by_side(
    service: Judge,
    task: Task,
    submission: Path,
    mode: Mode,
    threads: int,
    repeats: int,
    seed: int,
) -> tuple[list[float], list[Verdict], float]:
    """`threads` judgments at a time, `threads * repeats` in all, each with a seed of its own.

    Returns each judgment's wall, its verdict, and the wall of them all.
    """

    def one(index: int) -> tuple[float, Verdict]:
        started = time.monotonic()
        verdict = service.eval(task, submission, seed=seed + index, mode=mode)
        return time.monotonic() - started, verdict

    started = time.monotonic()
    with ThreadPoolExecutor(threads, thread_name_prefix="bench-judgment") as pool:
        judged = list(pool.map(one, range(threads * repeats)))
    return (
        [wall for wall, _ in judged],
        [verdict for _, verdict in judged],
        time.monotonic() - started,
    )


def bench_kernelbench(
    script: Path, problem: Path, kernel: Path, repeats: int, table: Table
) -> Timed:
    """KernelBench's own evaluation of a problem and kernel, as a whole process."""
    timed = Timed(f"KernelBench {problem.stem}")
    warm: list[float] = []
    warm_eval: list[float] = []
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
            phases = {k: round(v, 2) for k, v in result.get("phases", {}).items()}
            eval_s = result.get("t_eval_total")
            speedup = result.get("speedup")
            error = (result.get("error") or "").strip().splitlines()[-1:] or [""]
            if finished.returncode != 0 and not error[0]:
                error = finished.stderr.strip().splitlines()[-1:] or [""]
            table.add(
                f"| {timed.label} {label} | {wall:.2f} | "
                f"{f'{eval_s:.2f}' if isinstance(eval_s, float) else '-'} | "
                f"{json.dumps(phases)} | {result.get('correctness', '-')} | "
                f"{f'{speedup:.3f}' if isinstance(speedup, float) else '-'} | "
                f"exit {finished.returncode} {error[0][:200]} |"
            )
            if finished.returncode != 0:
                continue
            if label == "cold":
                timed.cold_s = wall
            else:
                warm.append(wall)
                if isinstance(eval_s, float):
                    warm_eval.append(eval_s)
            timed.warm_s, timed.feedback_s = _median(warm), _median(warm_eval)
    return timed


def _ratio(ours: float | None, theirs: float | None) -> str:
    return f"{ours / theirs:.3f}" if ours and theirs else "-"


def compare(ours: Timed, theirs: Timed) -> list[str]:
    """Issue 18's ratios for one case: our wall over KernelBench's (targets in brackets)."""
    return [
        f"- {ours.label} vs {theirs.label}: warm, ours / KernelBench's process "
        f"{_ratio(ours.warm_s, theirs.warm_s)} (target <= 0.1), ours / KernelBench's eval "
        f"{_ratio(ours.warm_s, theirs.feedback_s)} (<= 0.25); feedback / KernelBench's process "
        f"{_ratio(ours.feedback_s, theirs.warm_s)}; cold, ours / KernelBench's process "
        f"{_ratio(ours.cold_s, theirs.cold_s)} (<= 0.33)"
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tasks", action="append", default=[], help="task id (repeatable)")
    parser.add_argument("--suite", help="a suite of tasks/suites.toml")
    parser.add_argument(
        "--case",
        nargs=2,
        action="append",
        default=[],
        type=Path,
        metavar=("TASK_DIR", "SUBMISSION_DIR"),
        help="a task folder and a submission folder to judge (repeatable)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument(
        "--time-cap", type=float, default=DEFAULT_TIME_CAP_S, help="timing seconds per config"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--verdicts", type=Path, help="JSON lines: every judgment's wall and whole verdict"
    )
    parser.add_argument(
        "--no-cold", action="store_true", help="skip the cold judgment (builds must be cached)"
    )
    parser.add_argument(
        "--spares",
        type=int,
        default=2,
        help="spare workers per role (back-to-back judgments outrun one spare's imports)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="also judge with this many threads through one Judge (judgments side by side on "
        "one device): candidates per hour at that parallelism",
    )
    parser.add_argument("--kernelbench-eval", type=Path)
    parser.add_argument(
        "--kernelbench-case",
        nargs=2,
        action="append",
        default=[],
        type=Path,
        metavar=("PROBLEM", "KERNEL"),
        help="a KernelBench problem file and ModelNew kernel (repeatable)",
    )
    args = parser.parse_args()
    task_ids = list(args.tasks)
    if args.suite:
        task_ids += suites.suites()[args.suite]
    if not task_ids and not args.case and not args.kernelbench_case:
        parser.error("name --tasks, --suite, --case or --kernelbench-case")
    if args.kernelbench_case and not args.kernelbench_eval:
        parser.error("--kernelbench-case needs --kernelbench-eval (the anchors' kb_eval_one.py)")
    table = Table(
        f"Judge cost per candidate on {args.device}, {time.strftime('%Y-%m-%d')}, seconds "
        "(medians; phases from the verdicts' `phases_s`)",
        args.out,
        args.verdicts,
    )
    if task_ids or args.case:
        table.add(
            "",
            "| judgment | n | wall | outside phases | "
            + " | ".join(COLUMNS)
            + " | timed calls | ms/call "
            "| ms/call device | ms/call sampled | speedup | candidate workers | verdicts |",
            "| --- | ---: | ---: | ---: | "
            + " | ".join("---:" for _ in COLUMNS)
            + " | ---: | ---: "
            "| ---: | ---: | ---: | --- | --- |",
        )
    options = {
        "device": args.device,
        "repeats": args.repeats,
        "seed": args.seed,
        "time_cap_s": args.time_cap,
        "cold": not args.no_cold,
        "spares": args.spares,
        "threads": args.threads,
    }
    suite_timed: list[Timed] = []
    for task_id in task_ids:
        task = suites.load_by_id(task_id)
        suite_timed.append(bench_case(task, task.root / "expert", task_id, table, **options))
    failed = 0
    case_timed: list[Timed] = []
    for task_dir, submission in args.case:
        label = f"{task_dir.name} + {submission.name}"
        try:
            case_timed.append(bench_case(load_task(task_dir), submission, label, table, **options))
        except GauntletError as err:  # the judge's own failure on a case: say so, go on
            table.add(f"| {label} | - | judge failed: {type(err).__name__}: {err} |")
            case_timed.append(Timed(label))
            failed += 1
    kb_timed: list[Timed] = []
    if args.kernelbench_case:
        table.add(
            "",
            "KernelBench's `eval_kernel_against_ref` (one process each; eval = its call alone)",
            "",
            "| judgment | process wall | eval | phases | correct | speedup | exit |",
            "| --- | ---: | ---: | --- | --- | ---: | --- |",
        )
        for problem, kernel in args.kernelbench_case:
            timed = bench_kernelbench(args.kernelbench_eval, problem, kernel, args.repeats, table)
            kb_timed.append(timed)
            failed += timed.warm_s is None
    footer = []
    for name, group in (("suite tasks' experts", suite_timed), ("cases", case_timed)):
        warm = [t.warm_s for t in group if t.warm_s]
        if warm:
            footer.append(
                f"Warm full protocol, one judgment at a time, {name}: "
                f"{3600 / statistics.mean(warm):.0f} candidates per hour "
                f"({len(warm)} task(s), mean of the per-task medians)."
            )
        side_by_side = [t.side_by_side_s for t in group if t.side_by_side_s]
        if side_by_side:
            footer.append(
                f"Warm full protocol, {args.threads} judgments at a time through one `Judge`, "
                f"{name}: {3600 / statistics.mean(side_by_side):.0f} candidates per hour "
                f"({len(side_by_side)} task(s), each its judgments' whole wall over their count)."
            )
    if case_timed and len(case_timed) == len(kb_timed):
        for ours, theirs in zip(case_timed, kb_timed, strict=True):
            footer += compare(ours, theirs)
    table.add("", *footer)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
