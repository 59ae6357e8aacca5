"""`gauntlet import kernelbench`: KernelBench problem files to ordinary task folders.

For each problem: parse it (`kbsource`, no execution here); analyse it in a child process
(`kbprobe analyze`, through `gauntlet.process`); write the task (`kbwrite`); load and check it
in a child process (`kbprobe check`: the reference checks and the degeneracy gate); then
rewrite what the gate finds where a rewrite keeps the problem's meaning (drop a distribution
under which the problem is degenerate or leaves its domain; fix at zero a parameter without
effect) or refuse the problem, saying why. The report lists every problem.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ValidationError

from gauntlet import process
from gauntlet.errors import ConfigError
from gauntlet.importers.kbinputs import HE_GAIN
from gauntlet.importers.kbprobe import Analysis, AnalyzeRequest, CheckReport, CheckRequest
from gauntlet.importers.kbsource import ProblemRefused, module_text, parse_problem
from gauntlet.importers.kbwrite import TaskPlan, write_task
from gauntlet.importers.probecache import ProbeCache, probe_key
from gauntlet.importers.report import ImportReport, Outcome, ProblemReport

#: The input distributions an imported task starts with (KernelBench draws U[0, 1) only).
DISTRIBUTIONS = ("normal", "uniform")
#: KernelBench levels this importer reads (level 4 downloads Hugging Face models).
LEVELS = (1, 2, 3)
#: Rounds of check and rewrite before a problem still degenerate is refused.
REWRITE_ROUNDS = 4
#: Largest result a probe may write.
RESULT_LIMIT_BYTES = 8 << 20
#: A probe's wall-clock limit, in multiples of its CPU limit: only a guard against a probe that
#: waits without computing, since a loaded host stretches the wall time of honest work.
WALL_PER_CPU = 20

Result = TypeVar("Result", bound=BaseModel)


class ImportOptions(BaseModel):
    """How to import."""

    levels: list[int] = list(LEVELS)
    ids: list[int] | None = None
    """Problem numbers to import (None: all of the levels)."""
    track: str = "torch2cuda"
    id_prefix: str = "kb"
    """Task ids are `<id_prefix>/l<level>/<number>_<name>`."""
    max_bytes: int = 2 << 30
    """Cap on a config's compulsory bytes; sizes are halved until the first config fits."""
    max_flops: float = 1e12
    cpu_limit_s: float = 600.0
    """CPU seconds each probe may use: its own time, which other work on the host does not
    consume, so a loaded host slows a probe without refusing its problem."""
    jobs: int = 1
    contract: Literal["function", "modelnew"] = "function"
    """The submission contract of KernelBench tasks: a function of the inputs, parameters and
    constants, or KernelBench's own `ModelNew` file (`kbcompat`)."""


def problem_files(
    root: Path, levels: Sequence[int], ids: Sequence[int] | None
) -> list[tuple[int, Path]]:
    """The problem files under a KernelBench checkout (or its `KernelBench/` folder)."""
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    found = []
    for level in levels:
        folder = base / f"level{level}"
        if not folder.is_dir():
            raise ConfigError(
                f"no folder 'level{level}' under '{base}'; give a KernelBench checkout"
            )
        for path in sorted(folder.glob("*.py"), key=_number):
            if ids is None or _number(path) in ids:
                found.append((level, path))
    return found


def _number(path: Path) -> int:
    match = re.match(r"(\d+)_", path.name)
    return int(match.group(1)) if match else -1


def task_name(level: int, path: Path) -> str:
    """`l1/23_softmax` for `level1/23_Softmax.py`."""
    slug = re.sub(r"[^a-z0-9]+", "_", path.stem.lower()).strip("_")
    return f"l{level}/{slug}"


def import_kernelbench(
    root: Path,
    out: Path,
    options: ImportOptions,
    on_problem: Callable[[ProblemReport], None] | None = None,
) -> ImportReport:
    """Import the chosen problems into `out`; writes and returns the report."""
    if options.track not in ("torch2cuda", "torch2triton"):
        raise ConfigError(f"unknown track '{options.track}' (known: torch2cuda, torch2triton)")
    files = problem_files(root, options.levels, options.ids)

    def one(item: tuple[int, Path]) -> ProblemReport:
        report = import_problem(item[0], item[1], out, options)
        if on_problem is not None:
            on_problem(report)
        return report

    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        problems = list(pool.map(one, files))
    report = ImportReport(source="kernelbench", path=str(root), out=str(out),
                          created=datetime.now(UTC), problems=problems)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "import_report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    return report


def import_problem(
    level: int, path: Path, out: Path, options: ImportOptions, cache: ProbeCache | None = None
) -> ProblemReport:
    """One problem: analysed, written, checked, rewritten or refused.

    `cache`: probe results kept between runs (`probecache`), reused and added to.
    """
    problem = f"level{level}/{path.name}"
    name = task_name(level, path)
    folder = out / name
    try:
        source = parse_problem(path.read_text(encoding="utf-8"), problem)
    except (ProblemRefused, UnicodeDecodeError) as err:
        return refused(problem, folder, str(err))
    plan = TaskPlan(task_id=f"{options.id_prefix}/{name}", problem=problem, level=level,
                    track=options.track, source=source, analysis=Analysis(),
                    distributions=list(DISTRIBUTIONS), contract=options.contract)  # fmt: skip
    return import_plan(plan, folder, options, cache=cache)


def refused(
    problem: str, folder: Path, reason: str, findings: list[str] | None = None
) -> ProblemReport:
    """A refusal: the report line, and no task folder left behind."""
    shutil.rmtree(folder, ignore_errors=True)
    return ProblemReport(problem=problem, outcome="refused", reason=reason,
                         source_findings=findings or [])  # fmt: skip


def import_plan(
    plan: TaskPlan,
    folder: Path,
    options: ImportOptions,
    configs: Sequence[dict[str, int | float]] = (),
    cache: ProbeCache | None = None,
) -> ProblemReport:
    """A parsed problem analysed, written, checked, then rewritten or refused.

    `configs`: the source's own configs, the visible configs instead of C1..C3 (robust-kbench).
    `cache`: probe results kept between runs (`probecache`), reused and added to.
    """
    problem, source = plan.problem, plan.source

    def refuse(reason: str, findings: list[str] | None = None) -> ProblemReport:
        return refused(problem, folder, reason, findings)

    request = AnalyzeRequest(module_text=module_text(source), constants=source.constants,
                             forward_args=source.forward_args, max_bytes=options.max_bytes,
                             max_flops=options.max_flops, configs=list(configs))  # fmt: skip
    analysis = _probe("analyze", request, Analysis, options.cpu_limit_s, cache)
    if isinstance(analysis, str):
        return refuse(analysis)
    if analysis.refused is not None:
        return refuse(analysis.refused)
    plan.analysis = analysis
    rewrites: list[str] = list(analysis.rewrites)
    found = analysis.kernelbench_findings
    for _ in range(REWRITE_ROUNDS):
        try:
            write_task(plan, folder)
        except ProblemRefused as err:
            return refuse(str(err), found)
        checked = _probe(
            # Absolute: the probe runs in a folder of its own, where a relative `out` names nothing.
            "check", CheckRequest(task_dir=str(folder.resolve())), CheckReport,
            options.cpu_limit_s, cache,
        )  # fmt: skip
        if isinstance(checked, str):
            return refuse(checked, found)
        problems = _rewrite(plan, checked, rewrites)
        if problems is None:
            outcome: Outcome = "rewritten" if rewrites else "imported"
            hoisted = (
                [f"size literals of layer calls made constants: {', '.join(source.hoisted)}"]
                if source.hoisted
                else []
            )
            return ProblemReport(problem=problem, outcome=outcome, task_id=plan.task_id,
                                 rewrites=rewrites, notes=[*hoisted, *analysis.notes],
                                 source_findings=found)  # fmt: skip
        if problems != "retry":
            after = f" (after rewriting: {'; '.join(rewrites)})" if rewrites else ""
            return refuse(problems + after, found)
    return refuse(f"still degenerate after rewriting: {'; '.join(rewrites)}", found)


def _rewrite(plan: TaskPlan, checked: CheckReport, rewrites: list[str]) -> str | None:
    """Apply the rewrites the check calls for.

    Returns None when none is needed, 'retry' after one, else the reason to refuse.
    """
    # An input without effect on every measured config and distribution: a parameter is
    # fixed at zero (a bias cancelled by a norm), anything else makes the problem degenerate.
    # Without effect on some only, it is a finding of those configs like the others.
    absent = Counter(f.input_name for f in checked.findings if f.kind == "no_effect")
    dead = {name for name, count in absent.items() if name and count == checked.measured}
    params = plan.parameter_names()
    inert = sorted(dead - set(params))
    if inert:
        scaled = _at_he_scale(plan.analysis)
        if scaled is None:
            return f"degenerate: input {inert[0]!r} has no effect on the output"
        # A deep stack of layers at PyTorch's default scale shrinks its input below the
        # tolerance: the weights are drawn at He's scale instead, once.
        plan.analysis = scaled
        rewrites.append(
            "weights drawn at He's scale (U(-1, 1) sqrt(6 / fan_in)): at PyTorch's default "
            f"scale input {inert[0]!r} had no effect on the output"
        )
        return "retry"
    findings = [f for f in checked.findings if f.input_name not in dead]
    dtype_of = {str(c["name"]): str(c["dtype"]) for c in plan.analysis.visible}
    found_in = {dtype_of[f.config] for f in findings}
    if found_in and "float32" not in found_in and len(plan.analysis.dtypes) > len(found_in):
        # Degenerate only at half precision (a loss that concentrates within 1e-2, softmax
        # values under the atol): the task keeps the dtypes where it is not.
        rewrites.append(f"dtypes {', '.join(sorted(found_in))} dropped: {findings[0].line()}")
        plan.analysis = _without_dtypes(plan.analysis, found_in)
        return "retry"
    bad = {f.distribution: f for f in findings}
    if not bad and not dead:
        if checked.failed_checks:
            return f"task checks fail: {checked.failed_checks[0]}"
        return None
    kept = [d for d in plan.distributions if d not in bad]
    if not kept:
        return "degenerate: " + "; ".join(f.line() for f in bad.values())
    for dist, finding in bad.items():
        rewrites.append(f"distribution '{dist}' dropped: {finding.detail}")
    plan.distributions = kept
    for name in sorted(dead):
        rewrites.append(f"parameter '{params[name]}' fixed at zero: it has no effect on the output")
        plan.zeroed.add(params[name])
    return "retry"


def _at_he_scale(analysis: Analysis) -> Analysis | None:
    """The analysis with its layers' weights at He's scale; None if none is left to scale.

    Weights only (a rule whose fan-in is its own): the biases keep the default bound.
    """
    weights = [
        p for p in analysis.parameters
        if p.rule.kind == "fan_in" and p.rule.of == p.name and p.rule.gain == 1.0
    ]  # fmt: skip
    if not weights:
        return None
    scaled = [
        p.model_copy(update={"rule": p.rule.model_copy(update={"gain": HE_GAIN})})
        if p in weights
        else p
        for p in analysis.parameters
    ]
    return analysis.model_copy(update={"parameters": scaled})


def _without_dtypes(analysis: Analysis, dropped: set[str]) -> Analysis:
    """The analysis with configs of the dropped dtypes moved to the first dtype kept."""
    kept = [d for d in analysis.dtypes if d not in dropped]
    groups: list[list[dict[str, object]]] = [[], []]
    for index, configs in enumerate((analysis.visible, analysis.hidden)):
        seen: set[str] = set()
        for config in configs:
            moved = {**config, "dtype": kept[0]} if config["dtype"] in dropped else dict(config)
            key = repr(sorted((k, v) for k, v in moved.items() if k != "name"))
            if key not in seen:
                seen.add(key)
                groups[index].append(moved)
    return analysis.model_copy(update={"dtypes": kept, "visible": groups[0], "hidden": groups[1]})


def _probe(
    command: str,
    request: BaseModel,
    result: type[Result],
    cpu_limit_s: float,
    cache: ProbeCache | None = None,
) -> Result | str:
    """Run the probe in a child process; its result, or why it gave none.

    The probe limits its own CPU time (`kbprobe.main`: RLIMIT_CPU, one thread); the wall clock
    allows `WALL_PER_CPU` times as much, for a probe that waits without computing. A result
    kept in `cache` for the same probe is returned without running it; a new one is kept.
    """
    key = None
    if cache is not None:
        folder = Path(request.task_dir) if isinstance(request, CheckRequest) else None
        key = probe_key(command, request, folder)
        kept = cache.get(key)
        if kept is not None:
            return result.model_validate_json(kept)
    found = _run_probe(command, request, result, cpu_limit_s)
    if cache is not None and key is not None and not isinstance(found, str):
        cache.put(key, found.model_dump_json())
    return found


def _run_probe(
    command: str, request: BaseModel, result: type[Result], cpu_limit_s: float
) -> Result | str:
    with tempfile.TemporaryDirectory(prefix="gauntlet-kbprobe-") as tmp:
        result_file = Path(tmp) / "result.json"
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
        argv = [sys.executable, "-m", "gauntlet.importers.kbprobe", command, str(result_file),
                f"{cpu_limit_s:g}"]  # fmt: skip
        wall_s = WALL_PER_CPU * cpu_limit_s
        finished = process.run(argv, timeout_s=wall_s, env=env, cwd=Path(tmp),
                               stdin_data=request.model_dump_json().encode())  # fmt: skip
        if finished.timed_out:
            return f"the probe ({command}) ran past {wall_s:g} s of wall-clock time"
        if finished.returncode == -signal.SIGXCPU:
            # The soft limit's signal, which ends the probe; a SIGKILL (the hard limit, but also
            # the kernel's OOM killer) is reported as the failure it is, below.
            return f"the probe ({command}) ran past {cpu_limit_s:g} s of CPU time"
        if finished.returncode != 0 or not result_file.is_file():
            ended = finished.signal_name or f"exit {finished.returncode}"
            tail = finished.stderr.strip().splitlines()[-1:] or [ended]
            return f"the probe ({command}) failed: {tail[0][:300]}"
        try:
            return result.model_validate_json(result_file.read_bytes()[:RESULT_LIMIT_BYTES])
        except ValidationError as err:
            return f"the probe ({command}) wrote no valid result: {err.errors()[0]['msg']}"
