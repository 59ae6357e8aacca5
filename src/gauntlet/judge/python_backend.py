"""The judge's backend for Python submissions (Triton, and PyTorch around them).

Guards run on the AST here; the build gate compiles the source to bytecode without running it;
evaluation starts two worker processes at once: a `reference` worker with only trusted task code
and a `candidate` worker with the submission (see `worker.py`). The outputs of both come back
over non-inherited pipes, and the comparison happens here, in the trusted orchestrator.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import random
import resource
import shutil
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from gauntlet import process, settings
from gauntlet.errors import JudgeError
from gauntlet.judge import correctness, devicelock, guards
from gauntlet.judge.backend import BuildResult, EvalRequest, Evaluation, Submission
from gauntlet.judge.channel import (
    ChannelClosed,
    ChannelTimeout,
    FrameReader,
    ProtocolError,
    write_frame,
)
from gauntlet.judge.seeds import derive_seed
from gauntlet.judge.timing import TimingPlan
from gauntlet.judge.verdict import ConfigResult, Timing
from gauntlet.task import Config, Task

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

#: Seconds a worker may take to start and import its code (torch, triton, the submission).
STARTUP_S = 120.0


class PythonBackend:
    """Triton and PyTorch submissions."""

    def guard(self, task: Task, submission: Submission) -> str | None:
        """AST guards on every Python file of the submission."""
        reference_modules = [
            Path(task.spec.reference.file).stem,
            Path(task.spec.inputs.file).stem,
        ]
        if task.spec.baseline is not None:
            reference_modules.append(Path(task.spec.baseline.file).stem)
        for name, text in submission.files.items():
            if not name.endswith(".py"):
                continue
            findings = guards.check_python(
                text,
                name,
                task.spec.submission.language,
                forbidden_modules=reference_modules,
                allowed_calls=task.spec.allowed_calls,
            )
            if findings:
                shown = "; ".join(str(f) for f in findings[:5])
                more = f" (and {len(findings) - 5} more)" if len(findings) > 5 else ""
                return f"{name}: {shown}{more}"
        return None

    def build(self, task: Task, submission: Submission, workdir: Path, device: str) -> BuildResult:
        """Write the files to a private folder; Triton compiles at the first call, in the worker.

        The syntax was checked by the contract gate; import errors surface as `build_error`
        from the candidate worker. CUDA submissions are compiled here, by nvcc in a build
        process with no GPU (`cuda_build.py`), so the GPU worker only loads the libraries.
        """
        folder = workdir / "submission"
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in submission.files.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        if task.spec.submission.language == "cuda":
            from gauntlet.judge import cuda_build

            return cuda_build.build(task, submission, folder, device)
        return BuildResult(True, artifact=folder)

    def evaluate(self, request: EvalRequest) -> Evaluation:
        """Run the reference and candidate workers on the configs and compare their outputs."""
        return _Evaluation(request).run()


@dataclass
class _Trial:
    expected: dict[str, Any]
    outputs: list[torch.Tensor]
    grads: list[torch.Tensor]
    baseline_rel_l2: list[float]
    baseline_grad_rel_l2: list[float]
    baseline_max_abs: list[float]
    """The baseline's largest element-wise error per output: the trial's element-wise slack."""
    baseline_grad_max_abs: list[float]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.outputs + self.grads)


@dataclass
class _Sample:
    """The float64 reference of one timed call, and the baseline's error on that call."""

    outputs: list[torch.Tensor]
    baseline_rel_l2: list[float]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.outputs)


@dataclass
class _ConfigState:
    config: Config
    trials: list[dict[str, Any]]
    timing: dict[str, Any] | None = None
    """The timing plan and base inputs for this config, when it is timed."""
    reference: list[_Trial] = field(default_factory=list)
    samples: dict[int, _Sample] = field(default_factory=dict)
    """References of the timed calls whose outputs are checked, by position."""

    def sample_requests(self) -> list[dict[str, Any]]:
        if self.timing is None:
            return []
        plan = self.timing["plan"]
        return [
            {**self.timing["inputs"], "scale": plan["scales"][p], "position": p}
            for p in plan["sample_positions"]
        ]


def timing_for(task: Task, config: Config, seed: int, plan: TimingPlan) -> dict[str, Any]:
    """A config's timing: base inputs and per-call scales and sampled positions, all secret."""
    timing_seed = derive_seed(seed, task.task_id, config.name, "timing")
    rng = random.Random(timing_seed)
    scales = [rng.uniform(0.5, 2.0) for _ in range(plan.max_pairs)]
    positions = sorted(rng.sample(range(plan.warmup, plan.min_pairs), 3))
    return {
        "inputs": {"distribution": task.spec.inputs.distributions[0], "seed": timing_seed},
        "plan": {**dataclasses.asdict(plan), "scales": scales, "sample_positions": positions},
    }


def trials_for(task: Task, config: Config, seed: int) -> list[dict[str, Any]]:
    """The (distribution, seed) of each trial of a config: every distribution, `trials` times."""
    return [
        {
            "distribution": dist,
            "seed": derive_seed(
                seed, task.task_id, config.name, sorted(config.params.items()), dist, i
            ),
        }
        for i in range(task.spec.trials)
        for dist in task.spec.inputs.distributions
    ]


class _ReferenceCache:
    """The reference worker's results, kept in this (trusted) process for later judgments.

    Every attempt on a task in a run uses the same trials (the run's seed), so the reference is
    computed once per task and config. Kept in memory only: nothing an agent can write to.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.entries: OrderedDict[str, tuple[list[_Trial], dict[int, _Sample], int]] = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def key(task: Task, state: _ConfigState, device: str) -> str:
        files = [task.spec.reference.file, task.spec.inputs.file]
        if task.spec.baseline is not None:
            files.append(task.spec.baseline.file)
        hasher = hashlib.sha256(task.spec.model_dump_json().encode())
        for name in files:
            hasher.update(task.path(name).read_bytes())
        samples = state.sample_requests()
        hasher.update(json.dumps([state.config.params, state.trials, samples, device]).encode())
        return hasher.hexdigest()

    def get(self, key: str) -> tuple[list[_Trial], dict[int, _Sample]] | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return None
            self.entries.move_to_end(key)
            return entry[0], entry[1]

    def put(self, key: str, trials: list[_Trial], samples: dict[int, _Sample]) -> None:
        size = sum(t.nbytes() for t in trials) + sum(s.nbytes() for s in samples.values())
        with self.lock:
            self.entries[key] = (trials, samples, size)
            while sum(e[2] for e in self.entries.values()) > self.limit_bytes and self.entries:
                self.entries.popitem(last=False)


# GPU-sized tasks have float64 references of gigabytes per config; a quarter of the host's
# memory keeps a task's references across its attempts without crowding out the workers.
_REFERENCES = _ReferenceCache(limit_bytes=psutil.virtual_memory().total // 4)


class _Evaluation:
    def __init__(self, request: EvalRequest) -> None:
        self.request = request
        self.task = request.task
        timed = request.timed and request.device.startswith(("cuda", "rocm"))
        plan = TimingPlan(
            scales=[],
            sample_positions=[],
            allow_libraries=request.is_baseline,
            time_cap_s=request.time_cap_s,
        )
        self.states = [
            _ConfigState(
                c,
                trials_for(self.task, c, request.seed),
                timing_for(self.task, c, request.seed, plan) if timed else None,
            )
            for c in request.configs
        ]
        self.tmp = request.workdir / "worker-tmp"

    def _request(self, role: str, states: list[_ConfigState]) -> dict[str, Any]:
        spec = self.task.spec
        build = self.request.build
        assert build.artifact is not None
        return {
            "role": role,
            "device": self.request.device.split(":")[0],
            "language": spec.submission.language,
            "task_root": str(self.task.root),
            "reference": spec.reference.model_dump(),
            "inputs": spec.inputs.model_dump(include={"file", "entry"}),
            "baseline": spec.baseline.model_dump() if spec.baseline else None,
            "wrt": spec.backward.wrt if spec.backward else [],
            "allowed_ops": spec.allowed_calls,
            "watch_dispatch": not self.request.is_baseline,
            # torch.compile of the reference is a record-only figure; compiling costs seconds a
            # shape, so it is timed on the visible configs only.
            "compile_reference": [s.config.name for s in states if not s.config.hidden]
            if spec.track.startswith("torch2") and self.request.compile_reference
            else [],
            "check_determinism": True,
            "memory_limit_bytes": spec.memory_limit_mb << 20 if self.request.device == "cpu" else 0,
            "submission": {
                "dir": str(build.artifact),
                "file": spec.submission.files[0],
                "entry": spec.submission.entry,
            },
            "configs": [
                {
                    "name": s.config.name,
                    "params": s.config.params,
                    "trials": s.trials,
                    "samples": s.sample_requests() if role == "reference" else [],
                }
                for s in states
            ],
            "timing": (
                {s.config.name: s.timing for s in states if s.timing is not None}
                if role == "candidate"
                else {}
            ),
        }

    def run(self) -> Evaluation:
        self.tmp.mkdir(parents=True, exist_ok=True)
        keys = {
            s.config.name: _REFERENCES.key(self.task, s, self.request.device) for s in self.states
        }
        missing = [s for s in self.states if not self._load_cached([s], keys)]
        reference = None
        try:
            if missing:
                reference = _Worker(
                    self._request("reference", missing), self.tmp / "reference", self.request.device
                )
            candidate = _Worker(
                self._request("candidate", self.states), self.tmp / "candidate", self.request.device
            )
        except OSError as err:
            raise JudgeError(
                f"cannot start a judge worker for '{self.task.task_id}': {err}"
            ) from err
        try:
            # The workers import PyTorch (seconds) while another judgment may hold the GPU; they
            # touch it only once told to start, with the device held.
            started = time.monotonic()
            for worker in (reference, candidate):
                if worker is not None:
                    worker.await_ready(started + STARTUP_S)
            phases: dict[str, float] = {"imports": time.monotonic() - started}
            with _device_held(self.request.device) as waited:
                # Under `--parallel` most of a GPU judgment's wall time can be this wait.
                if waited is not None:
                    phases["device_wait"] = waited
                # Another judgment of this task may have computed the references meanwhile.
                if reference is not None and self._load_cached(missing, keys):
                    reference.close()
                    reference = None
                for worker in (reference, candidate):
                    if worker is not None:
                        worker.send({"command": "start"})
                if reference is not None:
                    started = time.monotonic()
                    steps = self._collect_reference(reference)
                    phases["reference"] = time.monotonic() - started
                    phases.update({f"reference.{step}": s for step, s in steps.items()})
                    for state in missing:
                        _REFERENCES.put(keys[state.config.name], state.reference, state.samples)
                evaluation = self._collect_candidate(candidate)
            evaluation.phases_s = {**phases, **evaluation.phases_s}
            return evaluation
        finally:
            if reference is not None:
                reference.close()
            candidate.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    @staticmethod
    def _load_cached(states: list[_ConfigState], keys: dict[str, str]) -> bool:
        """Put the cached references in the states, if every one of them is cached."""
        found = [_REFERENCES.get(keys[s.config.name]) for s in states]
        cached = [entry for entry in found if entry is not None]
        if len(cached) != len(states):
            return False
        for state, (trials, samples) in zip(states, cached, strict=True):
            state.reference, state.samples = list(trials), dict(samples)
        return True

    def _collect_reference(self, worker: _Worker) -> dict[str, float]:
        """Store the reference worker's results; return its own split of its time."""
        by_name = {s.config.name: s for s in self.states}
        budget = STARTUP_S + self.task.spec.timeout_s * max(1, len(self.states))
        deadline = time.monotonic() + budget
        while True:
            try:
                header, tensors = worker.read(deadline)
            except (ChannelClosed, ChannelTimeout, ProtocolError) as err:
                finished = worker.finish()
                raise JudgeError(
                    f"the reference worker of task '{self.task.task_id}' failed "
                    f"({type(err).__name__}; exit {finished.returncode}): {finished.stderr[-3000:]}"
                ) from err
            event = header.get("event")
            _trace(self.task, "reference", header, tensors)
            if event == "done":
                return _phases(header.get("phases"))
            if event == "worker_error":
                raise JudgeError(
                    f"the task's own code failed in the reference worker of "
                    f"'{self.task.task_id}':\n{header.get('traceback', '')}"
                )
            state = by_name[header["config"]]
            if event == "sample":
                state.samples[int(header["position"])] = _Sample(
                    tensors, [float(e) for e in header["baseline_rel_l2"]]
                )
                continue
            n_out = len(header["baseline_rel_l2"])
            state.reference.append(
                _Trial(
                    expected=header["expected"],
                    outputs=tensors[:n_out],
                    grads=tensors[n_out:],
                    baseline_rel_l2=header["baseline_rel_l2"],
                    baseline_grad_rel_l2=header["baseline_grad_rel_l2"],
                    baseline_max_abs=header["baseline_max_abs"],
                    baseline_grad_max_abs=header["baseline_grad_max_abs"],
                )
            )

    def _collect_candidate(self, worker: _Worker) -> Evaluation:
        evaluation = Evaluation()
        by_name = {s.config.name: s for s in self.states}
        results: dict[str, ConfigResult] = {}
        current: _ConfigCheck | None = None
        deadline = time.monotonic() + STARTUP_S
        failure: tuple[str, str] | None = None
        lap = time.monotonic()

        def phase(name: str) -> None:
            nonlocal lap
            now = time.monotonic()
            evaluation.phases_s[name] = evaluation.phases_s.get(name, 0.0) + now - lap
            lap = now

        while failure is None:
            try:
                header, tensors = worker.read(deadline)
            except ChannelTimeout:
                where = f"config {current.config.label()}" if current else "start-up (import)"
                limit = self.task.spec.timeout_s if current else STARTUP_S
                failure = ("timeout", f"no progress within {limit:g} s during {where}")
                break
            except ChannelClosed:
                finished = worker.finish()
                where = f" during config {current.config.label()}" if current else ""
                how = (
                    f"was killed by {finished.signal_name}"
                    if finished.signal_name
                    else f"exited with code {finished.returncode}"
                )
                failure = ("crash", f"the submission's process {how}{where}")
                break
            except ProtocolError as err:
                failure = ("rejected", f"the submission's process broke the result protocol: {err}")
                break
            event = header.get("event")
            _trace(self.task, "candidate", header, tensors)
            if event == "loaded":
                phase("startup")
                deadline = time.monotonic() + STARTUP_S
            elif event == "config_start":
                current = _ConfigCheck(self.task, by_name[header["config"]], self.request.device)
                deadline = time.monotonic() + self.task.spec.timeout_s
            elif event == "trial" and current is not None:
                checking = time.monotonic()
                current.check_trial(header, tensors)
                # The judge's own share of `correctness` (the rest is the candidate's worker).
                spent = time.monotonic() - checking
                evaluation.phases_s["compare"] = evaluation.phases_s.get("compare", 0.0) + spent
            elif event == "config_done" and current is not None:
                results[current.config.name] = current.result()
                current = None
                deadline = time.monotonic() + self.task.spec.timeout_s
            elif event == "done":
                phase("timing" if "correctness" in evaluation.phases_s else "correctness")
                finished = worker.finish(grace_s=10)
                break
            elif event == "checked":
                phase("correctness")
                timed = self._to_time(results)
                worker.send({"command": "time", "configs": timed} if timed else {"command": "stop"})
                deadline = time.monotonic() + self.task.spec.timeout_s
            elif event == "timing_start":
                timing_config = header["config"]
                cap = by_name[timing_config].timing["plan"]["time_cap_s"]  # type: ignore[index]
                deadline = time.monotonic() + cap + self.task.spec.timeout_s
            elif event == "timed":
                name = header["config"]
                results[name], problem = self._timed(by_name[name], results[name], header, tensors)
                # The worker's split of its timing (warm-up, pairs, cross-checks): diagnostics
                # only, from an untrusted process, so nothing is decided on them.
                for step, seconds in _phases(header["summary"].get("phases")).items():
                    key = f"timing.{step}"
                    evaluation.phases_s[key] = evaluation.phases_s.get(key, 0.0) + seconds
                if problem:
                    failure = ("rejected", f"config {by_name[name].config.label()}: {problem}")
                evaluation.environment.update(_clock_environment(name, header.get("clocks", {})))
                deadline = time.monotonic() + self.task.spec.timeout_s
            elif event == "build_error":
                failure = (
                    "build_error",
                    f"importing the submission failed:\n{header['traceback']}",
                )
            elif event == "call_error":
                failure = (
                    "crash",
                    f"the submission raised on config {header['config']} "
                    f"(trial {header['trial']}):\n{header['traceback']}",
                )
            elif event == "forbidden_ops":
                failure = (
                    "rejected",
                    f"on config {header['config']} the submission ran PyTorch operations that do "
                    f"the task's work instead of its own kernels: {', '.join(header['ops'])}",
                )
            elif event == "tampered":
                failure = (
                    "rejected",
                    "the submission replaced functions the judge relies on: "
                    + ", ".join(header["what"]),
                )
            elif event == "worker_error":
                failure = ("crash", f"the submission's process failed:\n{header['traceback']}")
            else:
                failure = ("rejected", f"unexpected message on the result channel: {event!r}")
        finished = worker.finish()
        if current is not None and failure is not None:
            results[current.config.name] = current.result(failure=failure[1])
        evaluation.results = [
            results.get(s.config.name, ConfigResult(config=s.config)) for s in self.states
        ]
        evaluation.stdout, evaluation.stderr = finished.stdout, finished.stderr
        if failure is not None:
            evaluation.failure = failure[0]  # type: ignore[assignment]
            evaluation.reason = failure[1]
        return evaluation

    def _to_time(self, results: dict[str, ConfigResult]) -> list[str]:
        """Configs worth timing: all of them, when every checked config was right."""
        if not all(r.correct for r in results.values()):
            return []
        return [s.config.name for s in self.states if s.timing is not None]

    def _timed(
        self,
        state: _ConfigState,
        result: ConfigResult,
        header: dict[str, Any],
        tensors: list[torch.Tensor],
    ) -> tuple[ConfigResult, str]:
        """The config's result with its timing; a problem that makes the times untrustworthy."""
        summary = header["summary"]
        spec = self.task.spec
        reported = [int(position) for position, _ in header["samples"]]
        if sorted(reported) != sorted(state.samples):
            return result, f"the timed calls kept for checking are {reported}, not the judge's"
        # Timed calls run on scaled inputs, where even the baseline can be further from the
        # float64 reference than the trials' element-wise tolerance: the output of a timed call
        # is held to the relative L2 bound over the baseline's error on that very call, and to
        # the reference's NaN/Inf pattern.
        offset = 0
        for position, count in header["samples"]:
            outputs = tensors[offset : offset + count]
            offset += count
            sample = state.samples[int(position)]
            if len(outputs) != len(sample.outputs):
                return result, f"timed call {position} returned {len(outputs)} outputs"
            for out, want, base_err in zip(
                outputs, sample.outputs, sample.baseline_rel_l2, strict=True
            ):
                bound = correctness.rel_l2_bound(spec.tolerance, state.config.dtype, base_err)
                check = correctness.compare(
                    out,
                    want,
                    correctness.ANY_FINITE,
                    bound,
                    f"timed call {position}",
                    _compare_device(self.request.device),
                )
                if not check.ok:
                    wrong = result.model_copy(
                        update={
                            "correct": False,
                            "reason": f"{check.reason} (the output of a timed call is wrong: "
                            "the kernel computes differently when timed than when checked)",
                        }
                    )
                    return wrong, ""
        sol = _sol_us(self.task, state.config, self.request.device)
        candidate_us = float(summary["candidate"])
        timing_record = Timing(
            unit="us",
            baseline=float(summary["baseline"]),
            candidate=candidate_us,
            baseline_iqr=float(summary["baseline_iqr"]),
            candidate_iqr=float(summary["candidate_iqr"]),
            speedup=float(summary["speedup"]),
            speedup_ci=(float(summary["speedup_ci"][0]), float(summary["speedup_ci"][1])),
            count=int(summary["count"]),
            compiled_baseline=summary.get("compiled"),
            sol=sol,
            sol_fraction=sol / candidate_us if sol is not None and candidate_us > 0 else None,
            kernels=list(summary.get("kernels", [])),
            host_us=summary.get("host_us"),
            event_us=summary.get("event_us"),
            spin_us=summary.get("spin_us"),
        )
        return result.model_copy(update={"timing": timing_record}), str(summary.get("problem", ""))


def _device_held(device: str) -> AbstractContextManager[float | None]:
    """The GPU's lock (one judgment at a time per GPU), giving the seconds waited for it.

    Nothing to hold on other devices (None).
    """
    if device.startswith(("cuda", "rocm")):
        return devicelock.exclusive(device)
    return contextlib.nullcontext()


def _trace(task: Task, role: str, header: dict[str, Any], tensors: list[torch.Tensor]) -> None:
    """Each message from a worker, at debug level (`gauntlet -v`): where a slow judgment is."""
    if logger.isEnabledFor(logging.DEBUG):
        size = sum(t.numel() * t.element_size() for t in tensors)
        logger.debug(
            "%s %s worker: %s %s %s (%.1f MB)",
            task.task_id,
            role,
            header.get("event"),
            header.get("config", ""),
            header.get("trial", header.get("position", "")),
            size / 1e6,
        )


def _phases(value: Any) -> dict[str, float]:
    """A worker's phase times, kept only where they are names and finite seconds."""
    if not isinstance(value, dict):
        return {}
    return {
        str(k)[:40]: float(v)
        for k, v in list(value.items())[:20]
        if isinstance(v, int | float) and math.isfinite(v)
    }


def _compare_device(device: str) -> str:
    """Where the orchestrator compares outputs: the judged GPU (this evaluation holds its lock).

    Anything else compares on the host.
    """
    return device if device.startswith("cuda") else "cpu"


def _sol_us(task: Task, config: Config, device: str) -> float | None:
    """The config's speed-of-light time on the device, in microseconds."""
    from gauntlet.judge.roofline import device_peaks, sol_seconds

    return sol_seconds(task, config, device_peaks(device)) * 1e6


def _clock_environment(config: str, clocks: dict[str, dict[str, float]]) -> dict[str, str]:
    return {
        f"clocks.{config}.{when}.{key}": f"{value:g}"
        for when, values in clocks.items()
        for key, value in values.items()
    }


class _ConfigCheck:
    """Accumulates one config's trial checks into a ConfigResult."""

    def __init__(self, task: Task, state: _ConfigState, device: str) -> None:
        self.task = task
        self.state = state
        self.config = state.config
        self.device = device
        self.reason = ""
        self.trials = 0
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.rel_l2 = 0.0
        self.bound = 0.0
        self.match = 1.0

    def _fail(self, reason: str) -> None:
        if not self.reason:
            self.reason = reason

    def check_trial(self, header: dict[str, Any], tensors: list[torch.Tensor]) -> None:
        index = int(header["trial"])
        self.trials += 1
        if self.reason:
            return
        ref = self.state.reference[index]
        trial = self.state.trials[index]
        where = f"trial {index} ({trial['distribution']} inputs)"
        meta_problem = correctness.check_meta(ref.expected, header["output"], self.device)
        if meta_problem:
            self._fail(f"{where}: {meta_problem}")
            return
        if header["mutated"]:
            names = ", ".join(f"'{n}'" for n in header["mutated"])
            self._fail(f"{where}: the submission changed its input {names} in place")
            return
        n_out = len(ref.outputs)
        spec = self.task.spec
        tol = correctness.tolerance_for(spec.tolerance, self.config.dtype)
        pairs: list[tuple[str, torch.Tensor, torch.Tensor, float, float]] = []
        for i in range(n_out):
            label = f"output {i}" if n_out > 1 else "output"
            pairs.append(
                (label, tensors[i], ref.outputs[i], ref.baseline_rel_l2[i], ref.baseline_max_abs[i])
            )
        if spec.backward:
            present = header.get("grads", [])
            missing = [n for n, ok in zip(spec.backward.wrt, present, strict=False) if not ok]
            if missing or len(present) != len(spec.backward.wrt):
                self._fail(f"{where}: no gradient for {missing or spec.backward.wrt}")
                return
            for j, name in enumerate(spec.backward.wrt):
                grad = tensors[n_out + j]
                want = ref.grads[j]
                if list(grad.shape) != list(want.shape):
                    self._fail(
                        f"{where}: gradient of '{name}' has shape {list(grad.shape)}, "
                        f"expected {list(want.shape)}"
                    )
                    return
                pairs.append(
                    (
                        f"gradient of '{name}'",
                        grad,
                        want,
                        ref.baseline_grad_rel_l2[j],
                        ref.baseline_grad_max_abs[j],
                    )
                )
        for label, cand, want, base_err, base_abs in pairs:
            bound = correctness.rel_l2_bound(spec.tolerance, self.config.dtype, base_err)
            result = correctness.compare(
                cand,
                want,
                tol,
                bound,
                label,
                _compare_device(self.device),
                slack=correctness.element_slack(base_abs),
            )
            self.max_abs = max(self.max_abs, result.max_abs_err)
            self.max_rel = max(self.max_rel, result.max_rel_err)
            self.rel_l2 = max(self.rel_l2, result.rel_l2_err)
            self.bound = max(self.bound, result.rel_l2_bound)
            self.match = min(self.match, result.match_fraction)
            if not result.ok:
                self._fail(f"{where}: {result.reason}")
                return
        if "repeat_max_diff" in header:
            diff = header["repeat_max_diff"]
            det = spec.determinism
            if diff is None:
                self._fail(f"{where}: a second call on the same input returned another type")
            elif (det.bitwise and diff != 0.0) or (not det.bitwise and diff > det.bound):
                self._fail(
                    f"{where}: two calls on the same input differ by up to {diff:.3g} "
                    f"({'bitwise equality' if det.bitwise else f'bound {det.bound:g}'} required)"
                )

    def result(self, failure: str | None = None) -> ConfigResult:
        """The config's result; a process failure before any wrong trial leaves it unknown."""
        unknown = failure is not None and not self.reason
        return ConfigResult(
            config=self.config,
            correct=None if unknown else not self.reason,
            reason=self.reason or (failure or ""),
            max_abs_err=self.max_abs,
            max_rel_err=self.max_rel,
            rel_l2_err=self.rel_l2,
            rel_l2_bound=self.bound,
            match_fraction=self.match,
            trials=self.trials,
        )


def worker_env(tmp: Path, device: str = "cpu") -> dict[str, str]:
    """The scrubbed environment of a worker: a short allowlist, private HOME and TMPDIR.

    A worker for `cuda:N` sees only GPU N (as its device 0).
    """
    env = {k: os.environ[k] for k in settings.WORKER_ENV_KEEP if k in os.environ}
    if device.startswith(("cuda:", "rocm:")):
        index = int(device.split(":")[1])
        visible = env.get("CUDA_VISIBLE_DEVICES")
        env["CUDA_VISIBLE_DEVICES"] = visible.split(",")[index] if visible else str(index)
    env.update(
        HOME=str(tmp),
        TMPDIR=str(tmp),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
    )
    # Triton's compiled kernels are keyed by a hash of their source and options, so sharing
    # the cache between candidates on a GPU makes warm builds without letting one submission
    # reach another's kernels. The interpreter (CPU) compiles nothing.
    shared = settings.CACHE_DIR / "triton"
    env.setdefault("TRITON_CACHE_DIR", str(shared if device != "cpu" else tmp / "triton-cache"))
    return env


class _Worker:
    """A worker process with its request sent and its result channel open."""

    def __init__(self, request: dict[str, Any], tmp: Path, device: str) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        request_r, request_w = os.pipe()
        # A socket, so that large frames can pass sealed memory files (channel.py).
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        result_r, result_w = ours.detach(), theirs.detach()
        limit = int(request.get("memory_limit_bytes") or 0)
        preexec: Callable[[], None] | None = None
        if limit:

            def preexec() -> None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        try:
            self.child = process.Child(
                [sys.executable, "-m", "gauntlet.judge.worker", str(request_r), str(result_w)],
                env=worker_env(tmp, device),
                cwd=tmp,
                pass_fds=(request_r, result_w),
                preexec=preexec,
            )
        finally:
            os.close(request_r)
            os.close(result_w)
        self.command_fd = request_w
        self.send(request)
        self.result_fd = result_r
        self.reader = FrameReader(result_r)
        self._finished: process.Finished | None = None
        self._early: tuple[dict[str, Any], list[torch.Tensor]] | Exception | None = None
        """What came instead of 'ready' (a frame or the channel's error), for the next read."""

    def await_ready(self, deadline: float) -> None:
        """Wait until the worker has imported its trusted code and waits to be started.

        Anything else that comes (an error report, a closed channel, a timeout) is kept for the
        next `read`, where the collectors turn it into a verdict or a judge error.
        """
        try:
            frame = self.reader.read(deadline)
        except (ChannelClosed, ChannelTimeout, ProtocolError) as err:
            self._early = err
            return
        if frame[0].get("event") != "ready":
            self._early = frame

    def read(self, deadline: float | None) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """The next frame from the worker."""
        early, self._early = self._early, None
        if isinstance(early, Exception):
            raise early
        return early if early is not None else self.reader.read(deadline)

    def send(self, header: dict[str, Any]) -> None:
        """A frame on the command pipe (the request, then commands such as 'time')."""
        try:
            write_frame(self.command_fd, header)
        except BrokenPipeError:
            logger.debug("a worker closed its command pipe before reading")

    def finish(self, grace_s: float = 0.0) -> process.Finished:
        """Reap the worker, killing its group after `grace_s` seconds."""
        if self._finished is None:
            self._finished = self.child.wait(timeout_s=grace_s)
        return self._finished

    def close(self) -> None:
        self.finish()
        self.reader.close()
        for fd in (self.result_fd, self.command_fd):
            try:
                os.close(fd)
            except OSError:
                pass
