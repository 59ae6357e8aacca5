"""`judge(task, submission_dir, ...) -> Verdict`: the gates of JUDGE.md, in order.

1. contract: the files exist, are within size limits, are UTF-8 text;
2. guards: static exploit checks on the source;
3. build: compile or assemble (in a separate process where that runs code);
4. correctness on visible configs, then on hidden configs;
5. timing (visible, and hidden for the generalization figures) where the device is timed;
6. roofline: a time below the speed-of-light floor is impossible, so it is rejected.

Each gate that fails stops the pipeline with its reason; later gates are recorded as skipped.
Feedback mode (what agents call while they work) runs on visible configs only.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from gauntlet.judge import bytecode
from gauntlet.judge.backend import Backend, BuildResult, EvalRequest, Failure, Submission
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.judge.verdict import (
    GATES,
    ConfigResult,
    Gate,
    GateName,
    Mode,
    Status,
    Verdict,
)
from gauntlet.task import Config, Task

logger = logging.getLogger(__name__)

ConfigSet = Literal["visible", "hidden", "all"]

#: Slack under the speed-of-light time before a measurement counts as impossible (noise).
ROOFLINE_SLACK = 0.9


def backend_for(task: Task) -> Backend:
    """The backend of a task's submission language."""
    if task.spec.submission.language == "asm":
        from gauntlet.judge.asm_backend import AsmBackend

        return AsmBackend()
    from gauntlet.judge.python_backend import PythonBackend

    return PythonBackend()


def device_is_timed(device: str) -> bool:
    """Whether verdicts on this device carry times (GPUs, and simulators in cycles)."""
    return device.startswith(("cuda", "rocm", "sim:"))


def read_submission(task: Task, folder: Path) -> tuple[Submission | None, Status, str]:
    """Read the contract's files; (None, status, reason) when one is missing or not acceptable.

    Links are refused (a link could point at the expert solution or any file of the judge's
    machine), and files are opened without following links, so a link swapped in after the
    check cannot be read either.
    """
    files: dict[str, str] = {}
    spec = task.spec.submission
    root = folder.resolve()
    for name in spec.files:
        path = folder / name
        linked = [p for p in [path, *path.parents] if p.is_symlink() and p.is_relative_to(folder)]
        if linked or not path.resolve().is_relative_to(root):
            return None, "rejected", f"'{name}' is a link or lies outside the submission folder"
        if not path.is_file():
            return None, "no_submission", f"the contract's file '{name}' is missing from {folder}"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as err:
            return None, "rejected", f"'{name}' cannot be opened as a plain file: {err.strerror}"
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(spec.max_bytes + 1)
        if len(data) > spec.max_bytes:
            return None, "build_error", f"'{name}' is over the limit of {spec.max_bytes} bytes"
        if not data:
            return None, "build_error", f"'{name}' is empty"
        try:
            files[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            return None, "build_error", f"'{name}' is not UTF-8 text"
        if "\x00" in files[name]:
            return None, "build_error", f"'{name}' holds NUL bytes: not text"
    return Submission(files=files, source_dir=folder), "pass", ""


def syntax_error(files: dict[str, str]) -> str | None:
    """The first Python syntax error among the files, with its place (compiling runs nothing)."""
    for name, text in files.items():
        if not name.endswith(".py"):
            continue
        try:
            # The bytes, as the import compiles them (an encoding cookie applies to bytes only).
            compile(text.encode("utf-8"), name, "exec", dont_inherit=True)
        except SyntaxError as err:
            return f"{name}, line {err.lineno}, col {err.offset}: {err.msg}"
    return None


def digest(files: dict[str, str]) -> str:
    """sha256 over the submission's files, by name."""
    hasher = hashlib.sha256()
    for name in sorted(files):
        hasher.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return hasher.hexdigest()


class _Verdicts:
    """Builds a Verdict gate by gate."""

    def __init__(self, task: Task, device: str, mode: Mode) -> None:
        self.task = task
        self.device = device
        self.mode = mode
        self.gates: list[Gate] = []
        self.started = time.monotonic()
        self.gate_started = self.started

    def passed(self, name: GateName) -> None:
        self.gates.append(Gate(name=name, state="passed", duration_s=self._lap()))

    def skipped(self, name: GateName, reason: str) -> None:
        self.gates.append(Gate(name=name, state="skipped", reason=reason, duration_s=self._lap()))

    def _lap(self) -> float:
        now = time.monotonic()
        elapsed, self.gate_started = now - self.gate_started, now
        return elapsed

    def stop(
        self,
        name: GateName,
        status: Status,
        reason: str,
        **fields: Any,
    ) -> Verdict:
        self.gates.append(Gate(name=name, state="failed", reason=reason, duration_s=self._lap()))
        return self.finish(status, reason, **fields)

    def finish(self, status: Status, reason: str = "", **fields: Any) -> Verdict:
        done = {g.name for g in self.gates}
        for name in GATES:
            if name not in done:
                self.gates.append(
                    Gate(name=name, state="skipped", reason="an earlier gate failed")
                    if status != "pass"
                    else Gate(name=name, state="skipped", reason="not run in this mode")
                )
        order = {name: i for i, name in enumerate(GATES)}
        self.gates.sort(key=lambda g: order[g.name])
        return Verdict(
            task_id=self.task.task_id,
            device=self.device,
            mode=self.mode,
            status=status,
            reason=reason,
            gates=self.gates,
            duration_s=time.monotonic() - self.started,
            **fields,
        )


def judge(
    task: Task,
    submission_dir: Path | str,
    *,
    device: str = "cpu",
    configs: ConfigSet = "all",
    seed: int = 0,
    mode: Mode = "final",
    workdir: Path | None = None,
    time_cap_s: float = DEFAULT_TIME_CAP_S,
    compile_reference: bool = True,
) -> Verdict:
    """Judge the contract's files in `submission_dir` and return the verdict.

    `time_cap_s` caps the timing of each config on a GPU (the adaptive loop otherwise runs
    until the speedup's 95% CI is within 1%); `compile_reference` also times `torch.compile`
    of the reference on torch2* tasks, for the record.

    Never raises for anything the submission does; raises JudgeError only when the judge's own
    machinery (or the task's trusted code) fails.
    """
    if mode == "feedback":
        configs = "visible"
    # Before any worker imports the judge's modules: none runs tampered bytecode.
    bytecode.check_package()
    verdicts = _Verdicts(task, device, mode)
    with tempfile.TemporaryDirectory(prefix="gauntlet-judge-", dir=workdir) as tmp:
        work = Path(tmp)
        started = time.monotonic()
        prepared = _prepare(task, Path(submission_dir), device, work, verdicts)
        if isinstance(prepared, Verdict):
            return prepared
        submission, backend, build, common = prepared
        common["phases_s"] = {"build": time.monotonic() - started}
        request = EvalRequest(
            task=task,
            build=build,
            configs=_configs(task, configs, seed),
            device=device,
            seed=seed,
            mode=mode,
            timed=device_is_timed(device),
            workdir=work,
            submission_digest=common["submission_digest"],
            time_cap_s=time_cap_s,
            compile_reference=compile_reference,
            is_baseline=submission.files == task.baseline_files(),
        )
        return _check(task, backend, request, verdicts, common)


def check_static(task: Task, submission_dir: Path | str, *, device: str = "cpu") -> Verdict:
    """Only the first gates (contract, guards, build): what an agent's `check` tool runs.

    Status `pass` means those gates passed; the later gates are recorded as not run.
    """
    verdicts = _Verdicts(task, device, "feedback")
    with tempfile.TemporaryDirectory(prefix="gauntlet-check-") as tmp:
        prepared = _prepare(task, Path(submission_dir), device, Path(tmp), verdicts)
    if isinstance(prepared, Verdict):
        return prepared
    return verdicts.finish("pass", **prepared[3])


def _prepare(
    task: Task, folder: Path, device: str, work: Path, verdicts: _Verdicts
) -> Verdict | tuple[Submission, Backend, BuildResult, dict[str, Any]]:
    """Gates 1-3; the verdict where one fails, else what evaluation needs."""
    submission, status, problem = read_submission(task, folder)
    if submission is None:
        return verdicts.stop("contract", status, problem)
    common: dict[str, Any] = {"submission_digest": digest(submission.files)}
    bad_syntax = syntax_error(submission.files)
    if bad_syntax:
        return verdicts.stop("contract", "build_error", bad_syntax, **common)
    verdicts.passed("contract")
    backend = backend_for(task)
    # The guards read untrusted text; the task's own baseline is trusted code (imported
    # problems' references set TF32 off through `torch.backends`, which no submission may).
    if submission.files == task.baseline_files():
        verdicts.skipped("guards", "the task's own baseline: trusted code")
    else:
        finding = backend.guard(task, submission)
        if finding:
            return verdicts.stop("guards", "rejected", finding, **common)
        verdicts.passed("guards")
    build = backend.build(task, submission, work, device)
    if not build.ok:
        return verdicts.stop("build", build.failure, build.reason, stderr=build.log, **common)
    verdicts.passed("build")
    return submission, backend, build, common


def _configs(task: Task, configs: ConfigSet, seed: int) -> list[Config]:
    visible = task.visible_configs if configs in ("visible", "all") else []
    hidden = task.hidden_configs(seed) if configs in ("hidden", "all") else []
    return visible + hidden


def _check(
    task: Task,
    backend: Backend,
    request: EvalRequest,
    verdicts: _Verdicts,
    common: dict[str, Any],
) -> Verdict:
    device, timed = request.device, request.timed
    # A backend that runs on a GPU holds its lock (`devicelock`) while it uses the device.
    evaluation = backend.evaluate(request)
    results = evaluation.results
    fields: dict[str, Any] = {
        **common,
        "configs": results,
        "stdout": evaluation.stdout,
        "stderr": evaluation.stderr,
        "environment": evaluation.environment,
        "phases_s": {**common.get("phases_s", {}), **evaluation.phases_s},
        "timed": timed,
        "timing_note": "" if timed else f"device '{device}' is not timed: correctness only",
    }
    if evaluation.failure == "build_error":
        return verdicts.stop("build", "build_error", evaluation.reason, **fields)
    vis_results = [r for r in results if not r.config.hidden]
    hid_results = [r for r in results if r.config.hidden]

    # The first failure in gate order wins: a wrong visible config, then a failure of the
    # process while visible configs ran, then a wrong hidden config, then a failure after.
    failure = evaluation.failure
    in_hidden = bool(hid_results) and all(r.correct for r in vis_results)
    wrong_visible = next((r for r in vis_results if r.correct is False), None)
    if wrong_visible is not None:
        reason = f"config {wrong_visible.config.label()}: {wrong_visible.reason}"
        return verdicts.stop("correctness_visible", "incorrect", reason, **fields)
    if failure is not None and not in_hidden:
        return verdicts.stop("correctness_visible", failure, evaluation.reason, **fields)
    if vis_results:
        verdicts.passed("correctness_visible")
    else:
        verdicts.skipped("correctness_visible", "visible configs not requested")

    wrong_hidden = next((r for r in hid_results if r.correct is False), None)
    if wrong_hidden is not None:
        status: Status = "overfit" if vis_results else "incorrect"
        reason = f"hidden config {wrong_hidden.config.label()}: {wrong_hidden.reason}"
        return verdicts.stop("correctness_hidden", status, reason, **_speedups(fields, results))
    if failure is not None:
        return verdicts.stop("correctness_hidden", failure, evaluation.reason, **fields)
    if hid_results:
        verdicts.passed("correctness_hidden")
    else:
        verdicts.skipped("correctness_hidden", "hidden configs not checked in this mode")

    if not timed:
        verdicts.skipped("timing", f"device '{device}' is not timed")
        verdicts.skipped("roofline", "no times to check")
        return verdicts.finish("pass", **fields)
    verdicts.passed("timing")
    impossible = _below_roofline(results)
    if impossible is not None:
        return verdicts.stop("roofline", "rejected", impossible, **_speedups(fields, results))
    verdicts.passed("roofline")
    return verdicts.finish("pass", **_speedups(fields, results))


def _below_roofline(results: list[ConfigResult]) -> str | None:
    for result in results:
        timing = result.timing
        if timing is None or timing.sol is None:
            continue
        if timing.candidate < timing.sol * ROOFLINE_SLACK:
            return (
                f"config {result.config.label()}: measured {timing.candidate:.4g} {timing.unit}, "
                f"below the speed-of-light floor of {timing.sol:.4g} {timing.unit}: impossible, "
                "so the measurement was fooled"
            )
    return None


def geomean(values: list[float]) -> float | None:
    """Geometric mean of the positive, finite values (None if there are none)."""
    kept = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


def _speedups(fields: dict[str, Any], results: list[ConfigResult]) -> dict[str, Any]:
    vis = [r.timing for r in results if not r.config.hidden and r.timing is not None]
    hid = [r.timing for r in results if r.config.hidden and r.timing is not None]
    fractions = [t.sol_fraction for t in vis if t.sol_fraction is not None]
    return {
        **fields,
        "speedup": geomean([t.speedup for t in vis]),
        "hidden_speedup": geomean([t.speedup for t in hid]),
        "sol_fraction": sum(fractions) / len(fractions) if fractions else None,
    }


def prebuild(
    task: Task,
    submission_dir: Path | str,
    device: str = "cuda",
    *,
    arch_list: str | None = None,
    timeout_s: float | None = None,
) -> BuildResult:
    """Build a CUDA submission ahead of judging it, e.g. in a pool of CPU workers.

    Runs the gates before the build (contract, syntax, static guards: the build imports the
    submission, so the guards must pass first), then builds into the cache. The judge's build
    gate later finds the units in the cache and returns at once; a GPU never waits on nvcc.
    Safe to run concurrently, also for the same submission.

    Args:
        task: The task.
        submission_dir: The folder with the contract's files.
        device: The target device (`cuda`, `cuda:1`), for its architecture.
        arch_list: The target's TORCH_CUDA_ARCH_LIST (`9.0` for an H100), to build on a machine
            without that GPU.
        timeout_s: Limit of each build process (default `cuda_build.BUILD_TIMEOUT_S`).

    Returns:
        The build's outcome; `artifact` is None (nothing to evaluate from here). A submission
        stopped before the build gets `ok=False` with the earlier gate's reason.
    """
    from gauntlet.judge import cuda_build

    submission, status, problem = read_submission(task, Path(submission_dir))
    if submission is None:
        failure: Failure = "rejected" if status == "rejected" else "build_error"
        return BuildResult(False, reason=problem, failure=failure)
    problem = syntax_error(submission.files) or backend_for(task).guard(task, submission) or ""
    if problem:
        return BuildResult(False, reason=problem, failure="rejected")
    arch = arch_list or cuda_build.arch_list_for(device)
    limit = cuda_build.BUILD_TIMEOUT_S if timeout_s is None else timeout_s
    return cuda_build.build_ahead(task, submission.files, arch, limit)
