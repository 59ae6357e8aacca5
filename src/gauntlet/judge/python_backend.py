"""The judge's backend for Python submissions (Triton, and PyTorch around them).

Guards run on the AST here; the build gate compiles the source to bytecode without running it;
evaluation starts two worker processes at once: a `reference` worker with only trusted task code
and a `candidate` worker with the submission (see `worker.py`). The outputs of both come back
over non-inherited pipes, and the comparison happens here, in the trusted orchestrator.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import math
import random
import re
import shutil
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from gauntlet import confine, devices, memcg, process, settings
from gauntlet.errors import JudgeError, WorkerLost
from gauntlet.judge import (
    attribution,
    correctness,
    cuda_build,
    devicelock,
    footprint,
    guards,
    kernel_cache,
    protocol,
    spares,
    timekeeper,
    workers,
)
from gauntlet.judge.backend import BuildResult, EvalRequest, Evaluation, Submission
from gauntlet.judge.channel import (
    ChannelClosed,
    ChannelTimeout,
    ProtocolError,
    UnmappedGpuMemory,
    write_frame,
)
from gauntlet.judge.seeds import derive_seed
from gauntlet.judge.timing import (
    FEEDBACK_TARGET_CI,
    FEEDBACK_TIME_CAP_S,
    TimingPlan,
    clock_disagreement,
)
from gauntlet.judge.verdict import ConfigResult, Timing
from gauntlet.task import Config, Task

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

#: Seconds a worker may take to start and import its code (torch, triton, the submission).
STARTUP_S = 120.0
#: Seconds a kept reference worker may take to reset after a judgment (`resident.py`).
RESET_S = 60.0


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
        if task.spec.check is not None:
            reference_modules.append(Path(task.spec.check.file).stem)
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
        The workers' zygote starts meanwhile, where this process has none yet
        (`workers.warm_zygote`): a cold judgment waits for the longer of the two, not both.
        """
        workers.warm_zygote(device)
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
        """Run the reference and candidate workers on the configs and compare their outputs.

        A worker lost where only the judge's code ran (`WorkerLost`: killed, or out of memory
        before the submission was started) costs the judgment a second try with new workers,
        never a verdict against the submission; a second loss is the judge's error.
        """
        try:
            return _Evaluation(request).run()
        except WorkerLost as lost:
            logger.warning("judging '%s' again with new workers: %s", request.task.task_id, lost)
            evaluation = _Evaluation(request, spares_allowed=False).run()
            evaluation.environment["rejudged"] = f"the first try's {lost}"
            return evaluation


@dataclass
class _Trial:
    expected: protocol.OutputInfo
    outputs: list[torch.Tensor]
    grads: list[torch.Tensor]
    baseline_rel_l2: list[float]
    baseline_grad_rel_l2: list[float]
    baseline_max_abs: list[float]
    """The baseline's largest element-wise error per output: the trial's element-wise slack."""
    baseline_grad_max_abs: list[float]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.outputs + self.grads)

    @classmethod
    def of(cls, event: protocol.ReferenceTrial, tensors: list[torch.Tensor]) -> _Trial:
        """A reference worker's trial; JudgeError where its tensors do not add up."""
        n_out = len(event.baseline_rel_l2)
        if len(tensors) != n_out + len(event.baseline_grad_rel_l2):
            raise JudgeError(
                f"reference trial {event.trial} of config {event.config} has {len(tensors)} "
                "tensors, not its outputs and gradients"
            )
        return cls(
            expected=event.expected,
            outputs=tensors[:n_out],
            grads=tensors[n_out:],
            baseline_rel_l2=list(event.baseline_rel_l2),
            baseline_grad_rel_l2=list(event.baseline_grad_rel_l2),
            baseline_max_abs=list(event.baseline_max_abs),
            baseline_grad_max_abs=list(event.baseline_grad_max_abs),
        )


@dataclass
class _Sample:
    """The float64 reference of one timed call, and the baseline's error on that call.

    Of the elements the judge checks (`sampling`), flat, or the whole outputs.
    """

    outputs: list[torch.Tensor]
    baseline_rel_l2: list[float]
    shapes: list[tuple[int, ...]]
    """The reference outputs' shapes."""

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.outputs)

    @classmethod
    def of(cls, event: protocol.ReferenceSample, tensors: list[torch.Tensor]) -> _Sample:
        """A reference worker's sample; JudgeError where its tensors do not add up."""
        if not len(tensors) == len(event.baseline_rel_l2) == len(event.shapes):
            raise JudgeError(
                f"reference sample {event.position} of config {event.config} has "
                f"{len(tensors)} tensors for {len(event.baseline_rel_l2)} errors and "
                f"{len(event.shapes)} shapes"
            )
        return cls(tensors, list(event.baseline_rel_l2), [tuple(s) for s in event.shapes])


@dataclass
class _ReferenceFeed:
    """The reference worker's results of a judgment, read as the judgment comes to need them.

    A config's trials are compared as soon as their references are in, while the worker makes
    the next config's: its memory files (0.4 s of a warm KernelBench L1/1 judgment on an H200)
    and the judge's comparisons (0.3 s) overlap instead of adding up. Everything is read before
    the candidate is timed, before any order to the worker, and at the candidate's end.
    """

    worker: _Worker
    wanted: set[tuple[str, str, int]]
    """The results still to come: (config, `trial` or `sample`, index)."""
    deadline: float
    limit_bytes: int
    """What the judge may hold of references (`footprint.reference_budget_bytes`)."""
    held_bytes: int = 0
    steps: dict[str, float] | None = None
    """The worker's own split of its time, from its `Done`: None until every result is in."""
    seconds: float = 0.0
    """The judgment's time reading these results, waits included (the `reference` phase)."""


@dataclass
class _Ahead:
    """A streamed result ordered before it was needed (`_Evaluation._order_ahead`)."""

    order: protocol.ReferenceOrder
    answer: tuple[protocol.Event, list[torch.Tensor]] | None = None
    """Its answer, where it came while the judge read the results sent whole (`_store`)."""


@dataclass
class _ConfigState:
    config: Config
    trials: list[protocol.TrialSpec]
    timing: protocol.TimingSpec | None = None
    """The timing plan and base inputs for this config, when it is timed."""
    sampled: list[int] = field(default_factory=list)
    """Candidate calls (pairs) whose outputs the judge checks: secret, never sent to it."""
    elements: dict[int, int] = field(default_factory=dict)
    """Per sampled call, the seed of the elements checked (`sampling`), told to the candidate
    once the call is made; a call without one is checked whole (a task with a checker)."""
    reference: list[_Trial] = field(default_factory=list)
    samples: dict[int, _Sample] = field(default_factory=dict)
    """References of the timed calls whose outputs are checked, by position."""
    streamed: protocol.ReferenceStreamed | None = None
    """Where the config's references are past the judge's budget: the reference worker's word
    for it, and the config's results are asked of it one at a time (`_Evaluation.reference_trial`,
    `reference_sample`) instead of `reference` and `samples`."""

    def expected(self) -> protocol.OutputInfo:
        """The reference's outputs as the first trial returned them (container, types)."""
        return self.streamed.expected if self.streamed else self.reference[0].expected

    def nbytes(self) -> int:
        """The references held so far."""
        return sum(t.nbytes() for t in self.reference) + sum(
            s.nbytes() for s in self.samples.values()
        )

    def sample_requests(self) -> list[protocol.SampleSpec]:
        if self.timing is None:
            return []
        base = self.timing.inputs
        return [
            protocol.SampleSpec(
                distribution=base.distribution,
                seed=base.seed,
                call_seed=self.timing.plan.call_seeds[p],
                position=p,
                elements=self.elements.get(p),
            )
            for p in self.sampled
        ]


#: Timed calls whose outputs the judge checks, per config.
SAMPLED_CALLS = 3
#: A streamed config's next trial is ordered ahead only where the GPU's free memory is this
#: many times a trial's references: the worker's computing held about three (KernelBench's
#: softmax: the inputs as drawn and in float64, the reference, the native run, the baseline),
#: and the new trial one more, beside the one the judge compares.
AHEAD_ROOM = 4
#: ATen operations one call of a submission may run (allocations, views and glue included).
#: Kernels launched from Python loops over heads, experts or chunks stay far below; work done
#: element by element through PyTorch's scalar reads and writes does not.
MAX_OPS_PER_CALL = 10_000
#: The sampled timed outputs a judgment keeps, in bytes, to check once its timing is over and
#: the GPU is shared again; past it, a config's are checked at once, the GPU still held alone.
DEFERRED_SAMPLE_BYTES = 4 << 30


def sampled_elements(task: Task, config: Config, seed: int, sampled: list[int]) -> dict[int, int]:
    """Per sampled timed call, the secret seed of the elements its check compares."""
    return {p: derive_seed(seed, task.task_id, config.name, "sampled elements", p) for p in sampled}


def timing_for(
    task: Task, config: Config, seed: int, plan: TimingPlan
) -> tuple[protocol.TimingSpec, list[int]]:
    """A config's timing (base inputs, per-call seeds) and its secret sampled positions."""
    timing_seed = derive_seed(seed, task.task_id, config.name, "timing")
    rng = random.Random(timing_seed)
    call_seeds = [rng.getrandbits(62) for _ in range(plan.max_pairs)]
    # From a seed of their own: the candidate knows `timing_seed` (its inputs' seed).
    secret = random.Random(derive_seed(seed, task.task_id, config.name, "sampled calls"))
    positions = sorted(secret.sample(range(plan.warmup, plan.min_pairs), SAMPLED_CALLS))
    fields = {
        k: v
        for k, v in dataclasses.asdict(plan).items()
        if k in protocol.PlanSpec.model_fields and k != "call_seeds"
    }
    spec = protocol.TimingSpec(
        inputs=protocol.TrialSpec(distribution=task.spec.inputs.distributions[0], seed=timing_seed),
        plan=protocol.PlanSpec(call_seeds=call_seeds, **fields),
    )
    return spec, positions


def trials_for(
    task: Task, config: Config, seed: int, repeats: int | None = None
) -> list[protocol.TrialSpec]:
    """The (distribution, seed) of each trial of a config.

    Every distribution, `repeats` times (default: the task's `trials`); fewer repeats are the
    first trials of more.
    """
    repeats = task.spec.trials if repeats is None else repeats
    return [
        protocol.TrialSpec(
            distribution=dist,
            seed=derive_seed(
                seed, task.task_id, config.name, sorted(config.params.items()), dist, i
            ),
        )
        for i in range(repeats)
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
        samples = [sample.model_dump() for sample in state.sample_requests()]
        trials = [trial.model_dump() for trial in state.trials]
        hasher.update(json.dumps([state.config.params, trials, samples, device]).encode())
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


def _candidate_task_files(task: Task) -> list[str]:
    """The task files the candidate's process runs: never the expert, `task.toml` or hidden."""
    spec = task.spec
    files = [spec.reference.file, spec.inputs.file]
    if spec.baseline is not None:
        files.append(spec.baseline.file)
    if spec.submission.adapter is not None:
        files.append(spec.submission.adapter.file)
    return files


@dataclass
class _GpuSharing:
    """Whether this process still asks reference workers for results in GPU memory."""

    failed: str | None = None
    """Why not: the judge could not map one (`channel.UnmappedGpuMemory`)."""


GPU_SHARING = _GpuSharing()


# GPU-sized tasks have float64 references of gigabytes per config; a quarter of the host's
# memory keeps a task's references across its attempts without crowding out the workers.
_REFERENCES = _ReferenceCache(limit_bytes=footprint.reference_budget_bytes())


class _Evaluation:
    def __init__(self, request: EvalRequest, *, spares_allowed: bool = True) -> None:
        self.request = request
        self.spares_allowed = spares_allowed
        """Whether workers may come from the open `Judge`'s spares (not on a second try)."""
        self.task = request.task
        timed = request.timed and request.device.startswith(("cuda", "rocm"))
        feedback = request.mode == "feedback"
        plan = TimingPlan(
            call_seeds=[], allow_libraries=request.is_baseline, time_cap_s=request.time_cap_s
        )
        if feedback:
            plan = dataclasses.replace(
                plan,
                time_cap_s=min(plan.time_cap_s, FEEDBACK_TIME_CAP_S),
                target_ci=FEEDBACK_TARGET_CI,
            )
        # Feedback checks each input distribution once; the final judgment, `trials` times.
        repeats = 1 if feedback else self.task.spec.trials
        self.states = []
        for config in request.configs:
            state = _ConfigState(config, trials_for(self.task, config, request.seed, repeats))
            if timed:
                state.timing, state.sampled = timing_for(self.task, config, request.seed, plan)
                if self.task.spec.check is None:  # a checker judges whole outputs
                    state.elements = sampled_elements(
                        self.task, config, request.seed, state.sampled
                    )
            self.states.append(state)
        self.tmp = request.workdir / "worker-tmp"
        self.containment = ""
        """How the candidate's process was confined (recorded in the verdict's environment)."""
        self.memory_cgroup = ""
        """The candidate's memory cgroup, or why it has none (recorded in the verdict's
        environment; `_contain_memory`)."""
        artifact = request.build.artifact
        self.serving: _Worker | None = None
        """The reference worker, once its references are in, where it serves the judgment on
        through the candidate's run: the task's checker (`[check]`), streamed references."""
        self.streamed_s = 0.0
        """Seconds spent waiting for streamed references (`reference_trial`, `reference_sample`)."""
        self.streamed_compute_s = 0.0
        """Of them, the worker's word for its computing (the rest: sending them, and reading)."""
        self.streamed_queue_s = 0.0
        """Of them, the wait for the worker to take the orders up (`ReferenceTrial.began_at`)."""
        self.streamed_results = 0
        self.streamed_on_gpu = 0
        """Of the streamed results, those that came in GPU memory (`cuda_share`)."""
        self.ahead: _Ahead | None = None
        """A streamed result ordered before it was needed, its answer not yet used."""
        self.ordered_ahead = 0
        self.feed: _ReferenceFeed | None = None
        """The reference worker's first results, where it computes any (`_open_feed`)."""
        self.keys: dict[str, str] = {}
        """Each config's key in `_REFERENCES`."""
        self.shown_paths = (str(artifact) if artifact else "", str(self.task.root))
        """Where the candidate's process sees its submission and the task's files (a spare's
        slot, or where they are), for cutting its tracebacks to the submission's frames."""
        self.hold: devicelock.Hold | None = None
        """The judgment's hold on its GPU (none on other devices): shared, then exclusive to
        time."""
        self.workers_came: dict[str, str] = {}
        """How each worker came, per `reference_worker` and `candidate_worker` (recorded in the
        verdict's environment): `spares.Spare.origin`, or 'new' (started by the judgment); a
        fresh spare's `{role}_imports_s`, the seconds its imports took; and a kept reference
        worker's `reference_reset_s`, the seconds its reset after its last judgment took."""

    def _confinement(self) -> confine.Confinement | None:
        """What the candidate's process may see, or None where this machine cannot confine.

        The interpreter and package (read-only), the task files it runs (inputs, reference,
        baseline: never the expert, `task.toml` or the hidden configs), the built submission,
        prebuilt CUDA units, and its own temporary folder.
        """
        readonly = [self.task.path(f) for f in _candidate_task_files(self.task)]
        artifact = self.request.build.artifact
        if artifact is not None:
            readonly.append(artifact)
        gpu = self.request.device.startswith(("cuda", "rocm"))
        if gpu:
            readonly += workers.shared_caches()
        confined = workers.confinement(
            readonly, [self.tmp / "candidate"], hidden=self.task.root, gpu=gpu
        )
        self.containment = self._containment(confined)
        return confined

    def _contain_memory(self, candidate: _Worker) -> None:
        """Move the candidate's processes into a memory cgroup of their own, before its start.

        Given to a candidate whose cap is its data segment (a GPU's, `protocol.MEMORY_CAPS`),
        which counts no shared mapping and no pinned memory: the cgroup counts every page its
        processes touch, and the kernel kills one of them, not the judge, past its limit. Not
        to a CPU candidate: its address space counts every mapping already, and the memory it
        can hold outside (tmpfs, System V, memory files) is bounded apart (`worker`,
        `confine`); a cgroup would add only the page cache of the files it reads, which the
        kernel reclaims rather than kills for.

        Its limit is the worker's cap as set (`protocol.Ready.memory_cap_bytes`: the task's
        limit plus the data segment its trusted imports hold). The cgroup counts only what its
        processes touch once moved in (charges stay where they were made), so the imports'
        share is room for what the trusted runtime takes after the start and the data segment
        does not count: the CUDA context, the driver's pinned buffers, a compiler's processes.
        Where no cgroup can be made, why is recorded and the judgment goes on without one.
        """
        cap = protocol.MEMORY_CAPS[self.request.device.split(":")[0]]
        ready = candidate.ready
        if cap != "data_segment":
            self.memory_cgroup = "none: the address space caps the candidate"
            return
        if not settings.MEMORY_CGROUP:
            self.memory_cgroup = "none: off (GAUNTLET_MEMORY_CGROUP=on; settings.MEMORY_CGROUP)"
            return
        if ready is None or not ready.memory_cap_bytes:
            # It sent something else than 'ready' (read next, as its failure), or has no cap.
            self.memory_cgroup = "none: the candidate has no memory cap"
            return
        try:
            cgroup = memcg.MemoryCgroup.create(ready.memory_cap_bytes)
        except memcg.CgroupUnavailable as err:
            self.memory_cgroup = f"none: {err}"
            return
        candidate.memory = cgroup
        try:
            cgroup.admit_tree(candidate.child)
        except OSError as err:
            raise JudgeError(
                f"cannot put the candidate of '{self.task.task_id}' in its memory cgroup "
                f"'{cgroup.path}': {err}"
            ) from err
        self.memory_cgroup = str(cgroup)

    @staticmethod
    def _containment(confined: confine.Confinement | None) -> str:
        """How the candidate's process was confined, for the verdict's environment."""
        if confined is None:
            return f"none: {confine.available()}"
        return "namespaces (user, mount, pid, net, ipc)"

    @property
    def watched(self) -> bool:
        """Whether the checks against doing the work in PyTorch apply (not to the baseline)."""
        return not self.request.is_baseline

    @functools.cached_property
    def own_kernels(self) -> attribution.OwnKernels:
        """The kernels the built submission defines, read from its files by the judge."""
        assert self.request.build.artifact is not None
        return attribution.own_kernels(self.request.build.artifact)

    def kernel_problem(self, trial: protocol.CandidateTrial) -> str:
        """Why a trial's calls were not the submission's own kernels' work ("" if they were).

        Decided here, against the names the judge read from the submission, on every call that
        is judged (forward, backward, repeat): the records come from the candidate's process,
        but which of them count as the submission's is never its say.
        """
        if trial.kernels is None:
            raise _Breach(f"trial {trial.trial} of config {trial.config} came without its kernels")
        calls: dict[str, protocol.CallKernels] = {c.call: c for c in trial.kernels}
        expected = ["forward"] + (["repeat"] if trial.repeated else [])
        if trial.grads is not None:
            expected.append("backward")
        missing = [call for call in expected if call not in calls]
        if missing or len(calls) != len(trial.kernels):
            raise _Breach(
                f"trial {trial.trial} of config {trial.config} came without the kernels of its "
                f"{', '.join(missing) or 'calls (one given twice)'} call"
            )
        for call in expected:
            # A backward that launches nothing (an identity gradient) is fine.
            names = [k.name for k in calls[call].kernels]
            problem = self.work_problem(names, f"its {call} call", call == "backward")
            if problem:
                return problem
        return ""

    def work_problem(self, kernels: list[str], where: str, may_be_empty: bool = False) -> str:
        """Why these kernels of one call are not the submission's own work ("" if they are)."""
        library = [n for n in kernels if attribution.is_library(n)]
        if library:
            return f"library kernels do the work in {where}: {library[:3]}"
        if kernels and not any(self.own_kernels.owns(n) for n in kernels):
            return f"none of its own kernels ran in {where} (kernels that did: {kernels[:3]})"
        if not kernels and not may_be_empty:
            return f"no kernel ran on the GPU in {where}"
        return ""

    def shown(self, text: str) -> str:
        """A traceback from the candidate's process, cut to the submission's own frames.

        The verdict's reason reaches the agent (the feedback tools show it): frames of the
        judge, the task's files or libraries are left out, and paths are the submission's
        own file names.
        """
        submission_dir, task_root = self.shown_paths
        shown = shown_traceback(text, submission_dir, task_root)
        # The judge's folders and the interpreter's, as the candidate's process saw them.
        for private in (str(self.request.workdir), sys.prefix, sys.base_prefix):
            shown = shown.replace(private, "<judge>")
        return shown

    def _request(self, role: str, states: list[_ConfigState]) -> protocol.WorkerRequest:
        spec = self.task.spec
        build = self.request.build
        assert build.artifact is not None
        entry = protocol.EntrySpec
        return protocol.WorkerRequest(
            role=role,  # type: ignore[arg-type]
            device=self.request.device.split(":")[0],  # type: ignore[arg-type]
            language=spec.submission.language,
            task_root=str(self.task.root),
            reference=entry(file=spec.reference.file, entry=spec.reference.entry),
            inputs=entry(file=spec.inputs.file, entry=spec.inputs.entry),
            baseline=(
                entry(file=spec.baseline.file, entry=spec.baseline.entry) if spec.baseline else None
            ),
            wrt=spec.backward.wrt if spec.backward else [],
            # The task's own baseline (the reference bound to the entry's name) already takes
            # the task's inputs: only a submission is bound through the adapter.
            adapter=(
                entry(file=spec.submission.adapter.file, entry=spec.submission.adapter.entry)
                if spec.submission.adapter and not self.request.is_baseline
                else None
            ),
            reference_mode=spec.reference.mode,
            outputs=spec.submission.outputs if role == "candidate" else [],
            check=(
                entry(file=spec.check.file, entry=spec.check.entry)
                if spec.check is not None and role == "reference"
                else None
            ),
            reference_budget_bytes=(
                footprint.reference_budget_bytes() if role == "reference" else 0
            ),
            share_device=(
                role == "reference"
                and self.request.device.startswith("cuda")
                and GPU_SHARING.failed is None
            ),
            allowed_ops=spec.allowed_calls,
            watch_dispatch=not self.request.is_baseline,
            # torch.compile of the reference is a record-only figure; compiling costs seconds a
            # shape, so it is timed on the visible configs only.
            compile_reference=[s.config.name for s in states if not s.config.hidden]
            if spec.track.startswith("torch2") and self.request.compile_reference
            else [],
            check_determinism=True,
            # The candidate's host memory is capped on every device (`worker.memory_cap`). The
            # reference runs trusted task code only, capped on the CPU alone: on a GPU the cap
            # is the data segment, which counts the host copy of a candidate's output that a
            # task's checker receives there (gigabytes on GPU-sized configs).
            memory_limit_bytes=(
                spec.memory_limit_mb << 20
                if role == "candidate" or self.request.device == "cpu"
                else 0
            ),
            memory_cap=protocol.MEMORY_CAPS[self.request.device.split(":")[0]],
            # Without it the reference worker rebuilt a CUDA baseline on every judgment (24 s
            # of its setup for cuda2cuda/matmul on an H200).
            prebuilt=str(build.artifact) if spec.submission.language == "cuda" else None,
            submission=protocol.SubmissionSpec(
                dir=str(build.artifact),
                file=spec.submission.files[0],
                entry=spec.submission.entry,
            )
            if role == "candidate"
            else None,
            configs=[
                protocol.ConfigSpec(
                    name=s.config.name,
                    params=s.config.params,
                    trials=s.trials,
                    samples=s.sample_requests() if role == "reference" else [],
                )
                for s in states
            ],
            timing=(
                {s.config.name: s.timing for s in states if s.timing is not None}
                if role == "candidate"
                else {}
            ),
        )

    def _worker(self, role: spares.Role, request: protocol.WorkerRequest) -> _Worker:
        """A started worker for `role`: the open `Judge` service's, else a new one.

        The service's is a spare, or for the reference its worker kept from earlier judgments.
        """
        pool = spares.active() if self.spares_allowed else None
        spare = None
        if pool is not None:
            spare = pool.take(role, self.request.device, self.task.root, wait_s=RESET_S)
        if pool is None or spare is None:
            confinement = self._confinement() if role == "candidate" else None
            # A cold candidate first enters its watch once it is started, while the judge
            # reads the reference worker's results. With every reference cached no reference
            # worker runs, and those seconds would be spent holding the GPU: it pays them
            # before it reports ready instead, as a candidate spare does.
            ahead = role == "candidate" and not self._missing
            self.workers_came[f"{role}_worker"] = "new"
            return _Worker.start(
                request, self.tmp / role, self.request.device, confinement, ahead=ahead
            )
        if role == "candidate":
            request = self._stage(spare, request)
            self.containment = self._containment(spare.confined)
        self.workers_came[f"{role}_worker"] = spare.origin
        if spare.last_reset_s is not None:
            # Its reset after the last judgment, in that judgment's background (`_let_go`).
            self.workers_came[f"{role}_reset_s"] = f"{spare.last_reset_s:.2f}"
        return _Worker.adopt(spare, pool, request)

    def _let_go(self, worker: _Worker) -> None:
        """Done with the reference worker: a kept one resets in the background, any other ends.

        Called where a worker that ran to its end used to exit. Its cached GPU memory went
        back to the device before its last results (`worker.run_reference`); the rest of the
        reset (`resident.ProcessState.restore`: modules, TorchDynamo, a garbage collection)
        takes 0.2 s on this project's 2-core machine and seconds after a fresh worker's first
        judgment on a GPU host, so the judgment goes on meanwhile, and the next judgment that
        wants the worker waits for it (`spares.SparePool.take`). A worker that does not reset
        is let go, never the judgment's failure: its results are in.
        """
        pool, spare = worker.pool, worker.spare
        if pool is None or spare is None:
            worker.close()
            return
        worker.spare = None
        pool.resetting(spare)
        task_id = self.task.task_id
        # A function of the worker alone: the thread must not keep this judgment's tensors.
        threading.Thread(
            target=_reset,
            args=(worker, pool, spare, task_id),
            name=f"judge-reset-{task_id}"[:60],
            daemon=True,
        ).start()

    def _stage(
        self, spare: spares.Spare, request: protocol.WorkerRequest
    ) -> protocol.WorkerRequest:
        """Copy what the candidate runs into the spare's slot; the request, pointed there."""
        for name in _candidate_task_files(self.task):
            target = spare.task_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.task.path(name), target)
        artifact = self.request.build.artifact
        assert artifact is not None and request.submission is not None
        shutil.copytree(artifact, spare.submission_dir, dirs_exist_ok=True)
        self.shown_paths = (str(spare.submission_dir), str(spare.task_dir))
        prebuilt = request.prebuilt
        if prebuilt is not None:
            # The build's manifest names the task's folder (whose code only the baseline's
            # unit serves) and the submission's file; in the slot both are copies.
            cuda_build.relocate_manifest(
                spare.submission_dir,
                task_root=spare.task_dir,
                submission_file=spare.submission_dir / request.submission.file,
            )
            prebuilt = str(spare.submission_dir)
        return request.model_copy(
            update={
                "task_root": str(spare.task_dir),
                "prebuilt": prebuilt,
                "submission": request.submission.model_copy(
                    update={"dir": str(spare.submission_dir)}
                ),
            }
        )

    def run(self) -> Evaluation:
        if self.request.device.startswith("cuda"):
            # Before any worker starts: a config the GPU cannot hold is the task's (or the
            # caller's) problem, named with the bytes it needs, not a worker's OOM crash.
            problem = footprint.too_large(
                self.task, [s.config for s in self.states], _device_bytes(self.request.device)
            )
            if problem:
                raise JudgeError(f"'{self.task.task_id}' cannot be judged here: {problem}")
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.keys = keys = {
            s.config.name: _REFERENCES.key(self.task, s, self.request.device) for s in self.states
        }
        # A task's checker runs in the reference worker, so with one that worker always starts.
        checked = self.task.spec.check is not None
        missing = [s for s in self.states if checked or not self._load_cached([s], keys)]
        self._missing = missing
        reference = None
        evaluation: Evaluation | None = None
        streamed: list[str] = []
        spawning = time.monotonic()
        try:
            if missing:
                reference = self._worker("reference", self._request("reference", missing))
                # Trusted code only, so its frames are bounded by what the judge may hold, not
                # by the fixed cap on what an untrusted writer makes it map: one frame is one
                # trial's references, 12.9 GB in float64 for KernelBench's softmax at its size.
                reference.handle.reader.limit_bytes = footprint.reference_budget_bytes()
                if self.request.device.startswith("cuda"):
                    # Its streamed results may come in GPU memory (`cuda_share`), mapped where
                    # they are compared: never a candidate's reader.
                    reference.handle.reader.device = devices.index_of(self.request.device)
            candidate = self._worker("candidate", self._request("candidate", self.states))
        except OSError as err:
            if reference is not None:
                reference.close()
            raise JudgeError(
                f"cannot start a judge worker for '{self.task.task_id}': {err}"
            ) from err
        kernels = None
        try:
            kernels = self._kept_kernels(candidate)
            # The workers import PyTorch (seconds) while another judgment may hold the GPU; they
            # touch it only once told to start, with the device held.
            started = time.monotonic()
            for worker, role in ((reference, "reference"), (candidate, "candidate")):
                if worker is not None:
                    worker.await_ready(started + STARTUP_S, role)
            phases: dict[str, float] = {
                "spawn": started - spawning,
                "imports": time.monotonic() - started,
            }
            self._contain_memory(candidate)
            for worker, role in ((reference, "reference"), (candidate, "candidate")):
                if worker is not None and worker.ready is not None:
                    # The worker's own split of that wait, from its request to its report.
                    steps = _phases(worker.ready.phases)
                    phases.update({f"imports.{role}.{k}": v for k, v in steps.items()})
                if worker is not None and worker.imported is not None:
                    # How long a spare's imports take here sizes the spares kept ahead.
                    self.workers_came[f"{role}_imports_s"] = f"{worker.imported.import_s:.2f}"
            self.hold = _device_hold(self.task, self.states, self.request.device)
            with self.hold or contextlib.nullcontext():
                if self.hold is not None:
                    # Under `--parallel` much of a GPU judgment's wall time can be this wait.
                    phases["device_wait"] = self.hold.shared()
                # Another judgment of this task may have computed the references meanwhile.
                if reference is not None and not checked and self._load_cached(missing, keys):
                    self._let_go(reference)
                    reference = None
                for worker in (reference, candidate):
                    if worker is not None:
                        worker.send(protocol.Command(command="start"))
                if reference is not None:
                    # Its results are read as the candidate's session needs them (`_feed`).
                    self.serving, reference = reference, None
                    self._open_feed(self.serving)
                evaluation = self._collect_candidate(candidate)
                self._drain()
                if self.feed is not None:
                    assert self.feed.steps is not None, "drained"
                    phases["reference"] = self.feed.seconds
                    phases.update({f"reference.{k}": v for k, v in self.feed.steps.items()})
                streamed = [s.config.name for s in missing if s.streamed is not None]
                if streamed:
                    evaluation.environment["references_streamed"] = ",".join(streamed)
                    evaluation.phases_s["reference.streamed"] = self.streamed_s
                    evaluation.phases_s["reference.streamed.compute"] = self.streamed_compute_s
                    evaluation.phases_s["reference.streamed.queue"] = self.streamed_queue_s
                    evaluation.environment["references_streamed_on_gpu"] = (
                        f"{self.streamed_on_gpu} of {self.streamed_results}"
                    )
                    evaluation.environment["references_ordered_ahead"] = str(self.ordered_ahead)
                if self.serving is not None:
                    self._drop_ahead()
                    self._let_go(self.serving)
                    self.serving = None
            evaluation.phases_s = {**phases, **evaluation.phases_s}
            evaluation.environment["containment"] = self.containment
            evaluation.environment["memory_cgroup"] = self.memory_cgroup
            evaluation.environment.update(self.workers_came)
            return evaluation
        finally:
            closing = time.monotonic()
            for unused in (reference, self.serving):
                if unused is not None:
                    unused.close()
            self.serving = None
            if kernels is not None:
                candidate.finish()
                try:
                    kernel_cache.harvest(
                        kernels, workers.private_triton_cache(candidate.handle.home)
                    )
                except OSError as err:
                    logger.warning("the candidate's compiled kernels were not kept: %s", err)
            candidate.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            if evaluation is not None:
                # Workers' exits (a GPU process releases its memory) and their folders.
                evaluation.phases_s["teardown"] = time.monotonic() - closing

    def time_alone(self, candidate: _Worker) -> bool:
        """Hold the GPU alone for the timing; whether the judgment holds a GPU at all.

        The candidate's process, which runs untrusted code, is stopped while it waits: it could
        otherwise launch work on the GPU while another judgment times. Work queued before the
        stop still runs: the worker synchronises the device after each call it makes, but a
        thread of the submission's may have queued more (`docs/gpu.md`, the GPU's lock).
        """
        if self.hold is None:
            return False
        with candidate.child.stopped():
            self.hold.exclusive()
        return True

    def share_again(self, candidate: _Worker) -> None:
        """The timing is over: the candidate is reaped and the GPU is shared again.

        Reaped first, so that no work of the submission's runs beside another judgment's
        timing; what is left of the judgment (checking the sampled outputs) is shared work.
        """
        if self.hold is None or self.hold.mode != "exclusive":
            return
        candidate.finish()
        # The checks need the GPU's peaks (the speed of light), which a machine's first
        # judgment measures: with the GPU still held alone, as they must be.
        from gauntlet.judge.roofline import device_peaks

        device_peaks(self.request.device)
        self.hold.share()

    def _kept_kernels(self, candidate: _Worker) -> str | None:
        """Seed the candidate's private Triton cache from its files' earlier judgments.

        Returns the key to keep what it compiles under (`kernel_cache.py`), or None where it
        has no private cache (the CPU's interpreter compiles nothing; an unconfined worker
        uses the shared cache). A cache that cannot be read costs a compile, not the judgment.
        """
        if not (self.request.device.startswith("cuda") and candidate.handle.confined):
            return None
        entry = kernel_cache.key(self.task.task_id, self.request.submission_digest)
        try:
            kernel_cache.seed(entry, workers.private_triton_cache(candidate.handle.home))
        except OSError as err:
            logger.warning("the kept compiled kernels were not copied: %s", err)
        return entry

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

    def _open_feed(self, worker: _Worker) -> None:
        """Expect the reference worker's results for the missing configs (`_ReferenceFeed`).

        The reference worker runs only trusted code, but whatever it sends is still checked:
        exactly the trials and samples asked for, each once. Anything else (a dead, hung or
        confused worker) is the judge's failure, never the submission's.
        """
        wanted = {
            (s.config.name, kind, i)
            for s in self._missing
            for kind, indices in (("trial", range(len(s.trials))), ("sample", s.sampled))
            for i in indices
        }
        budget = STARTUP_S + self.task.spec.timeout_s * max(1, len(self.states))
        # Everything here is held until the candidate's outputs are compared, and kept after
        # (`_REFERENCES`): past the budget it would run the host out of memory, late.
        limit_bytes = footprint.reference_budget_bytes()
        self.feed = _ReferenceFeed(worker, wanted, time.monotonic() + budget, limit_bytes)

    def _feed(self, until: Callable[[], bool]) -> None:
        """Read the reference worker's results until `until()` or the last of them."""
        feed = self.feed
        if feed is None or feed.steps is not None:
            return
        started = time.monotonic()
        try:
            while feed.steps is None and not until():
                self._take_reference(feed)
        finally:
            feed.seconds += time.monotonic() - started
        if feed.steps is not None:
            self._fed()

    def _drain(self) -> None:
        """Every result of the reference worker in: before timing, orders, and the verdict."""
        self._feed(lambda: False)

    def fed_seconds(self) -> float:
        """The judgment's time so far reading the reference worker's results."""
        return self.feed.seconds if self.feed is not None else 0.0

    def _fed(self) -> None:
        """All results in: kept for the task's next judgments; the worker let go if not needed.

        It serves on where the task has a checker or a config's references are streamed.
        """
        for state in self._missing:
            if state.streamed is None:
                _REFERENCES.put(self.keys[state.config.name], state.reference, state.samples)
        checked = self.task.spec.check is not None
        if self.serving is not None and not checked:
            if not any(s.streamed is not None for s in self._missing):
                self._let_go(self.serving)
                self.serving = None

    def _take_reference(self, feed: _ReferenceFeed) -> None:
        """Read and store one of the reference worker's frames."""
        worker = feed.worker
        try:
            event, tensors = worker.read_event(feed.deadline)
        except ChannelClosed as err:
            raise _lost(worker, "reference", err) from err
        except (ChannelTimeout, ProtocolError, protocol.BadFrame) as err:
            raise _failed(worker, self.serving_where, err) from err
        self._store(feed, event, tensors)

    def _store(
        self, feed: _ReferenceFeed, event: protocol.Event, tensors: list[torch.Tensor]
    ) -> None:
        """Store one of the reference worker's first results (or its `Done`)."""
        wanted = feed.wanted
        _trace(self.task, "reference", event, tensors)
        if isinstance(event, protocol.Done):
            if wanted:
                raise JudgeError(
                    f"{self.serving_where} ended without "
                    f"{len(wanted)} of the results asked for, e.g. {sorted(wanted)[0]}"
                )
            feed.steps = _phases(event.phases)
            return
        if isinstance(event, protocol.WorkerFailed):
            raise JudgeError(
                f"the task's own code failed in the reference worker of "
                f"'{self.task.task_id}':\n{event.traceback}"
            )
        if isinstance(event, protocol.ReferenceStreamed):
            self._streamed(event, wanted, feed.limit_bytes, feed.held_bytes)
            return
        ahead = self.ahead
        if (
            ahead is not None
            and isinstance(event, protocol.ReferenceTrial)
            and (event.config, event.trial) == (ahead.order.config, ahead.order.trial)
            and ahead.answer is None
        ):
            ahead.answer = (event, tensors)  # ordered ahead, come among the results sent whole
            return
        key: tuple[str, str, int] | None = None
        if isinstance(event, protocol.ReferenceSample):
            key = (event.config, "sample", event.position)
        elif isinstance(event, protocol.ReferenceTrial):
            key = (event.config, "trial", event.trial)
        if key is None or key not in wanted:
            raise JudgeError(
                f"{self.serving_where} sent an unexpected '{event.event}' frame {key or ''}"
            )
        wanted.discard(key)
        state = next(s for s in self.states if s.config.name == key[0])
        size = sum(t.numel() * t.element_size() for t in tensors)
        feed.held_bytes += size
        if feed.held_bytes > feed.limit_bytes:
            raise JudgeError(
                f"'{self.task.task_id}' cannot be judged here: "
                + footprint.references_too_large(
                    state.config.label(),
                    size,
                    len(state.trials) + len(state.sampled),
                    feed.held_bytes - size - state.nbytes(),
                )
            )
        if isinstance(event, protocol.ReferenceSample):
            state.samples[event.position] = _Sample.of(event, tensors)
            return
        assert isinstance(event, protocol.ReferenceTrial)
        if event.trial != len(state.reference):
            raise JudgeError(f"reference trial {key} is out of order")
        state.reference.append(_Trial.of(event, tensors))

    def _streamed(
        self,
        event: protocol.ReferenceStreamed,
        wanted: set[tuple[str, str, int]],
        limit_bytes: int,
        held_bytes: int,
    ) -> None:
        """Take the reference worker's word that a config's references are to be streamed.

        Instead of any of its results, so all of them must still be wanted; one trial's must
        fit the budget alone (each is held until compared, then dropped), else the config
        cannot be judged on this host: a judge error naming the sizes, before any candidate
        output is compared. While it is compared the judge holds the references of the
        configs kept whole as well, so at most the budget and one trial's.
        """
        state = next((s for s in self._missing if s.config.name == event.config), None)
        keys = (
            {(event.config, "trial", i) for i in range(len(state.trials))}
            | {(event.config, "sample", p) for p in state.sampled}
            if state is not None
            else set()
        )
        if state is None or not keys <= wanted:
            raise JudgeError(
                f"{self.serving_where} streamed config "
                f"{event.config!r}, which it was not asked for or already sent results of"
            )
        if max(event.trial_bytes, event.output_bytes) > limit_bytes:
            raise JudgeError(
                f"'{self.task.task_id}' cannot be judged here: "
                + footprint.references_too_large(
                    state.config.label(), event.trial_bytes, 1, held_bytes, streamed=True
                )
            )
        wanted -= keys
        state.streamed = event

    def reference_trial(self, state: _ConfigState, index: int) -> _Trial:
        """A trial's reference: kept, or for a streamed config computed now by the worker."""
        self._feed(lambda: state.streamed is not None or index < len(state.reference))
        if state.streamed is None:
            return state.reference[index]
        return _Trial.of(*self._reference(state, protocol.ReferenceTrial, index))

    def reference_sample(self, state: _ConfigState, position: int) -> _Sample:
        """A sampled timed call's reference: kept, or for a streamed config computed now."""
        self._feed(lambda: state.streamed is not None or position in state.samples)
        if state.streamed is None:
            return state.samples[position]
        return _Sample.of(*self._reference(state, protocol.ReferenceSample, position))

    def _reference(
        self, state: _ConfigState, kind: type[_Streamed], index: int
    ) -> tuple[_Streamed, list[torch.Tensor]]:
        """Result `index` of a streamed config: a trial, or a sampled call's position.

        Asked of the reference worker (trusted code only); a judge error if it answers anything
        else.
        """
        field, what = (
            ("trial", "trial") if kind is protocol.ReferenceTrial else ("position", "timed call")
        )
        name = state.config.name
        order = protocol.ReferenceOrder(command="reference", config=name, **{field: index})
        asking = time.monotonic()
        where = self.serving_where
        # As long as the candidate's worker may take for a trial, and the start-up's again
        # for a slow float64 one on the host. Asked at once: the worker answers between the
        # results it sends whole, which are stored as they come meanwhile.
        limit_s = STARTUP_S + self.task.spec.timeout_s
        if self.ahead is not None and self.ahead.order == order:
            ahead, self.ahead = self.ahead, None
            event, tensors = ahead.answer or self._answer(name, where, asking + limit_s)
        else:
            event, tensors = self._ask(order, [], where, limit_s, answer_to=name)
        waited = time.monotonic() - asking
        self.streamed_s += waited
        if not isinstance(event, kind) or (event.config, getattr(event, field)) != (name, index):
            raise JudgeError(
                f"{where} answered '{event.event}' for {what} {index} of config {name}"
            )
        self.streamed_compute_s += min(event.compute_s, waited)
        # Before the worker took the order up it was busy (a result it sends whole).
        self.streamed_queue_s += min(max(0.0, event.began_at - asking), waited)
        on_gpu = any(t.device.type == "cuda" for t in tensors)
        self.streamed_results += 1
        self.streamed_on_gpu += on_gpu
        if kind is protocol.ReferenceTrial and index + 1 < len(state.trials):
            self._order_ahead(state, index + 1, on_gpu)
        return event, tensors

    def _order_ahead(self, state: _ConfigState, trial: int, on_gpu: bool) -> None:
        """Order a streamed config's next trial now, to be computed while this one is compared.

        Only where its results come in GPU memory and the GPU has room for the worker's
        computing beside the trial the judge holds (`AHEAD_ROOM`): the host's budget is
        sized for one streamed trial at a time.
        """
        assert state.streamed is not None, "only a streamed config's results are ordered"
        if not self._may_order_ahead(state.streamed.trial_bytes, on_gpu):
            return
        order = protocol.ReferenceOrder(command="reference", config=state.config.name, trial=trial)
        self._order(order, [], self.serving_where)
        self.ahead = _Ahead(order)
        self.ordered_ahead += 1

    def _may_order_ahead(self, trial_bytes: int, on_gpu: bool) -> bool:
        """Whether the results come in GPU memory, and the GPU has room for one more trial's."""
        import torch

        if not on_gpu:
            return False
        free, _ = torch.cuda.mem_get_info(torch.device(_compare_device(self.request.device)))
        return free >= AHEAD_ROOM * trial_bytes

    def _drop_ahead(self) -> None:
        """Read and let go of a result ordered ahead and not needed after all."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None and ahead.answer is None:
            limit_s = STARTUP_S + self.task.spec.timeout_s
            self._answer(ahead.order.config, self.serving_where, time.monotonic() + limit_s)

    @property
    def serving_where(self) -> str:
        """The reference worker, as errors name it."""
        return f"the reference worker of task '{self.task.task_id}'"

    def _collect_candidate(self, worker: _Worker) -> Evaluation:
        session = _CandidateSession(self, worker)
        return session.run()

    def checked(
        self, order: protocol.CheckOutput, tensors: list[torch.Tensor]
    ) -> protocol.CheckResult:
        """The task's checker's verdict on a candidate output, from the reference worker.

        The orchestrator forwards the output's bytes only; the checker's failures are the
        task's, so anything but the one result asked for is the judge's error.
        """
        check = self.task.spec.check
        assert check is not None
        where = f"the checker of task '{self.task.task_id}' ({check.file})"
        event, _ = self._ask(order, tensors, where, self.task.spec.timeout_s)
        asked = (order.config, order.trial, order.position)
        if not isinstance(event, protocol.CheckResult):
            raise JudgeError(f"{where} answered {event.event!r} to the output of {asked}")
        if (event.config, event.trial, event.position) != asked:
            raise JudgeError(f"{where} answered about {event.config, event.trial, event.position}")
        return event

    def _ask(
        self,
        order: protocol.CheckOutput | protocol.ReferenceOrder,
        tensors: list[torch.Tensor],
        where: str,
        limit_s: float,
        answer_to: str | None = None,
    ) -> tuple[protocol.Event, list[torch.Tensor]]:
        """One order to the serving reference worker, and its answer (a judge error if it fails).

        `answer_to`: a streamed config's, whose result the worker sends between those it
        sends whole (`worker._serve_waiting`): the frames before the answer are stored as
        results (`_store`). Any other order waits for all of those first. A result ordered
        ahead and not needed after all is read first (the worker answers in order).
        """
        if answer_to is None:
            self._drain()  # its answer comes after the results it sends first
        self._drop_ahead()
        self._order(order, tensors, where)
        return self._answer(answer_to, where, time.monotonic() + limit_s)

    def _order(
        self,
        order: protocol.CheckOutput | protocol.ReferenceOrder,
        tensors: list[torch.Tensor],
        where: str,
    ) -> None:
        worker = self.serving
        assert worker is not None, "orders go to the reference worker kept to serve them"
        try:
            write_frame(worker.handle.command_fd, protocol.frame(order), tensors)
        except (BrokenPipeError, ConnectionResetError) as err:
            raise _lost(worker, "reference", err) from err
        except OSError as err:
            raise _failed(worker, where, err) from err

    def _answer(
        self, answer_to: str | None, where: str, deadline: float
    ) -> tuple[protocol.Event, list[torch.Tensor]]:
        """The serving worker's answer to the last order; results sent whole before it, stored."""
        worker = self.serving
        assert worker is not None, "orders go to the reference worker kept to serve them"
        feed = self.feed
        try:
            event, answer = worker.read_event(deadline)
            while (
                answer_to is not None
                and feed is not None
                and feed.steps is None
                and not (
                    isinstance(event, protocol.ReferenceTrial | protocol.ReferenceSample)
                    and event.config == answer_to
                )
            ):
                self._store(feed, event, answer)
                if feed.steps is not None:
                    self._fed()
                event, answer = worker.read_event(deadline)
        except (ChannelClosed, BrokenPipeError, ConnectionResetError) as err:
            # Died (the pipe closed on the frame, or the channel after it): a lost worker.
            raise _lost(worker, "reference", err) from err
        except UnmappedGpuMemory as err:
            # A driver (or container) that exports GPU memory and cannot map it: the result is
            # nowhere else, so the judgment goes again, and every later one, through the host.
            GPU_SHARING.failed = str(err)
            raise WorkerLost(
                f"{where} sent a result in GPU memory that this process cannot map ({err}); "
                "from now on such results go through the host"
            ) from err
        except (OSError, ChannelTimeout, ProtocolError, protocol.BadFrame) as err:
            raise _failed(worker, where, err) from err
        if isinstance(event, protocol.WorkerFailed):
            raise JudgeError(f"{where} failed in the reference worker:\n{event.traceback}")
        return event, answer

    def _to_time(self, results: dict[str, ConfigResult]) -> list[str]:
        """Configs worth timing: all of them, when every checked config was right."""
        if not all(r.correct for r in results.values()):
            return []
        return [s.config.name for s in self.states if s.timing is not None]

    def _timed(
        self,
        state: _ConfigState,
        result: ConfigResult,
        event: protocol.Timed,
        followed: timekeeper.Followed,
    ) -> tuple[ConfigResult, str]:
        """The config's result with its timing; a problem that makes the times untrustworthy."""
        summary = event.summary
        sampled, walls = followed.sampled, followed.walls
        pairs = len(summary.candidate_us)
        if len(summary.baseline_us) != pairs or summary.count != pairs or pairs == 0:
            return result, (
                f"the timing reports {summary.count} pairs with {len(summary.baseline_us)} "
                f"baseline and {pairs} candidate times"
            )
        if len(walls["candidate"]) + 1 < pairs:
            return result, f"the timing reports {pairs} pairs; the judge saw fewer calls"
        missing = [p for p in state.sampled if p not in sampled]
        if missing:
            return result, f"the outputs of the checked timed calls {missing} never came"
        # Timed calls run on perturbed inputs, where even the baseline can be further from the
        # float64 reference than the trials' element-wise tolerance: the output of a timed call
        # is held to the relative L2 bound over the baseline's error on that very call, and to
        # the reference's NaN/Inf pattern.
        for position in state.sampled:
            # One at a time, each reference let go before the next is asked for: a streamed
            # config's are computed on demand, each of them GPU-sized.
            ended = self._check_sample(
                state, position, sampled[position], followed.shapes[position], result
            )
            if ended is not None:
                return ended
        disagreement = clock_disagreement(
            summary.baseline_us, summary.candidate_us, walls["baseline"], walls["candidate"]
        )
        sol = _sol_us(self.task, state.config, self.request.device)
        candidate_us = float(summary.candidate)
        timing_record = Timing(
            unit="us",
            baseline=float(summary.baseline),
            candidate=candidate_us,
            baseline_iqr=float(summary.baseline_iqr),
            candidate_iqr=float(summary.candidate_iqr),
            speedup=float(summary.speedup),
            speedup_ci=(float(summary.speedup_ci[0]), float(summary.speedup_ci[1])),
            count=pairs,
            compiled_baseline=summary.compiled,
            sol=sol,
            sol_fraction=sol / candidate_us if sol is not None and candidate_us > 0 else None,
            kernels=list(summary.kernels),
            host_us=summary.host_us,
            event_us=summary.event_us,
            spin_us=summary.spin_us,
        )
        # The worker's profiler pass reports the kernels of a timed call; whose they are is
        # decided here, as for the checked calls.
        attributed = (
            self.work_problem(list(summary.kernels), "the profiled timed call")
            if self.watched and not summary.problem
            else ""
        )
        return result.model_copy(update={"timing": timing_record}), (
            summary.problem or attributed or disagreement
        )

    def _check_sample(
        self,
        state: _ConfigState,
        position: int,
        outputs: list[torch.Tensor],
        shapes: list[tuple[int, ...]],
        result: ConfigResult,
    ) -> tuple[ConfigResult, str] | None:
        """A sampled timed call's output against its reference; None where it is right.

        Otherwise the config's result and the problem that end its timing's checks. Without a
        checker, the outputs and references are the elements `state.elements` chose, flat
        (`sampling`), and the bound is the baseline's error on those same elements.
        """
        spec = self.task.spec
        if spec.check is not None:
            # The task's checker judges a timed call's output as it judges a trial's, after
            # the checks no checker may waive.
            reference = self.reference_sample(state, position).outputs
            problems = [
                correctness.unchecked_output(
                    out, want, f"timed call {position}", _compare_device(self.request.device)
                )
                for out, want in zip(outputs, reference, strict=False)
            ]
            problem = next((p for p in problems if p), None)
            if len(outputs) != len(reference) or problem:
                problem = problem or f"timed call {position} returned {len(outputs)} outputs"
                wrong = result.model_copy(update={"correct": False, "reason": problem})
                return wrong, ""
            order = protocol.CheckOutput(
                command="check",
                config=state.config.name,
                position=position,
                container=state.expected().container,
            )
            del reference  # held one at a time
            verdict = self.checked(order, outputs)
            if not verdict.ok:
                wrong = result.model_copy(
                    update={
                        "correct": False,
                        "reason": f"timed call {position}: the task's checker refused the "
                        f"output: {verdict.message} (the kernel computes differently when "
                        "timed than when checked)",
                    }
                )
                return wrong, ""
            return None
        sample = self.reference_sample(state, position)
        if len(outputs) != len(sample.outputs):
            return result, f"timed call {position} returned {len(outputs)} outputs"
        for index, (out, want, base_err, shape, want_shape) in enumerate(
            zip(
                outputs,
                sample.outputs,
                sample.baseline_rel_l2,
                shapes,
                sample.shapes,
                strict=True,
            )
        ):
            if shape != want_shape:
                return result, (
                    f"timed call {position} returned shape {list(shape)}, not {list(want_shape)}"
                )
            if out.shape != want.shape:
                return result, (
                    f"timed call {position} sent {list(out.shape)} of output {index}, not the "
                    f"{list(want.shape)} elements asked for"
                )
            total = math.prod(want_shape)
            what = f"timed call {position}" + (
                f" ({want.numel()} of its {total} elements sampled)"
                if want.numel() != total
                else ""
            )
            bound = correctness.rel_l2_bound(spec.tolerance, state.config.dtype, base_err)
            check = correctness.compare(
                out,
                want,
                correctness.ANY_FINITE,
                bound,
                what,
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
        return None


class _CandidateSession:
    """Reads the candidate worker's events, each checked against the one expected next.

    The candidate's process ran untrusted code that can write to this channel: a frame out of
    order, repeated, forged or missing is a breach of the protocol and a verdict naming it,
    never a pass and never a traceback.
    """

    def __init__(self, evaluation: _Evaluation, worker: _Worker) -> None:
        self.ev = evaluation
        self.task = evaluation.task
        self.worker = worker
        self.states = evaluation.states
        self.result = Evaluation()
        self.results: dict[str, ConfigResult] = {}
        self.current: _ConfigCheck | None = None
        self.lap = time.monotonic()
        self.fed_at_lap = evaluation.fed_seconds()
        """Where the judge's reading of references stood at the last lap: that reading is the
        `reference` phase, so every other phase leaves it out."""

    def phase(self, name: str) -> None:
        now, fed = time.monotonic(), self.ev.fed_seconds()
        phases = self.result.phases_s
        phases[name] = phases.get(name, 0.0) + now - self.lap - (fed - self.fed_at_lap)
        self.lap, self.fed_at_lap = now, fed

    def run(self) -> Evaluation:
        failure: tuple[str, str] | None
        try:
            failure = self._converse()
        except _Breach as breach:
            failure = ("rejected", f"the submission's process broke the result protocol: {breach}")
        except _Ended as ended:
            failure = (ended.status, ended.reason)
        finished = self.worker.finish()
        self.phase("exit")
        if self.current is not None and failure is not None:
            self.results[self.current.config.name] = self.current.result(failure=failure[1])
        self.result.results = [
            self.results.get(s.config.name, ConfigResult(config=s.config)) for s in self.states
        ]
        self.result.stdout, self.result.stderr = finished.stdout, finished.stderr
        if failure is None and any(r.correct is None for r in self.result.results):
            # A result never reported is never a pass.
            failure = ("rejected", "the submission's process ended without reporting every config")
        if failure is not None:
            self.result.failure = failure[0]  # type: ignore[assignment]
            self.result.reason = failure[1]
        return self.result

    def _next(self, limit_s: float, where: str) -> tuple[protocol.Event, list[torch.Tensor]]:
        """The next event; a failure event ends the session with its verdict."""
        try:
            event, tensors = self.worker.read_event(time.monotonic() + limit_s)
        except ChannelTimeout:
            raise _Ended("timeout", f"no progress within {limit_s:g} s during {where}") from None
        except ChannelClosed:
            finished = self.worker.finish()
            if finished.returncode == protocol.BREACH_EXIT:
                said = finished.stderr.strip().splitlines()
                raise _Ended(
                    "rejected",
                    "the submission's process was stopped reaching around the judge during "
                    f"{where}: {said[-1][:300] if said else 'no message'}",
                ) from None
            memory = self.worker.memory
            if memory is not None and memory.oom_kills():
                raise _Ended(
                    "crash",
                    f"the submission's process was killed past its memory cap during {where}: "
                    f"its processes may touch {memory.limit_bytes >> 20} MiB of host memory in "
                    f"all, shared mappings and pinned memory included (the task's "
                    f"memory_limit_mb, {self.task.spec.memory_limit_mb} MiB, plus what its "
                    "trusted imports hold)",
                ) from None
            how = (
                f"was killed by {finished.signal_name}"
                if finished.signal_name
                else f"exited with code {finished.returncode}"
            )
            raise _Ended("crash", f"the submission's process {how} during {where}") from None
        except (ProtocolError, protocol.BadFrame) as err:
            raise _Breach(str(err)) from None
        _trace(self.task, "candidate", event, tensors)
        self._raise_failure(event)
        return event, tensors

    def _raise_failure(self, event: protocol.Event) -> None:
        if isinstance(event, protocol.BuildFailed):
            raise _Ended(
                "build_error",
                f"importing the submission failed:\n{self.ev.shown(event.traceback)}",
            )
        if isinstance(event, protocol.CallFailed):
            raise _Ended(
                "crash",
                f"the submission raised on config {event.config} (trial {event.trial}):\n"
                f"{self.ev.shown(event.traceback)}",
            )
        if isinstance(event, protocol.ForbiddenOps):
            raise _Ended(
                "rejected",
                f"on config {event.config} the submission ran PyTorch operations that do the "
                f"task's work instead of its own kernels: {', '.join(event.ops)}",
            )
        if isinstance(event, protocol.Tampered):
            raise _Ended(
                "rejected",
                "the submission replaced functions the judge relies on: " + ", ".join(event.what),
            )
        if isinstance(event, protocol.WorkerFailed):
            raise _Ended(
                "crash", f"the submission's process failed:\n{self.ev.shown(event.traceback)}"
            )

    def _expect(self, event: protocol.Event, kind: type[_E], what: str) -> _E:
        if not isinstance(event, kind):
            raise _Breach(f"expected {what}, got a '{event.event}' frame")
        return event

    def _converse(self) -> tuple[str, str] | None:
        timeout = self.task.spec.timeout_s
        event, _ = self._next(STARTUP_S, "start-up (import)")
        self._expect(event, protocol.Loaded, "'loaded'")
        self.phase("startup")
        for state in self.states:
            name = state.config.name
            event, _ = self._next(STARTUP_S, f"config {state.config.label()}")
            start = self._expect(event, protocol.ConfigStart, f"the start of config {name}")
            if start.config != name:
                raise _Breach(f"expected the start of config {name}, got {start.config!r}")
            checker = self.ev.checked if self.task.spec.check is not None else None
            self.current = check = _ConfigCheck(
                self.task, state, self.ev.request.device, self.ev.reference_trial, checker
            )
            for index in range(len(state.trials)):
                waiting = time.monotonic()
                event, tensors = self._next(timeout, f"config {state.config.label()}")
                if index == 0:
                    # The wait for a config's first trial, where its kernels are compiled and
                    # loaded (none where the worker ran ahead of the judge's reads).
                    phases = self.result.phases_s
                    phases["first_trial"] = phases.get("first_trial", 0.0) + (
                        time.monotonic() - waiting
                    )
                trial = self._expect(event, protocol.CandidateTrial, f"trial {index} of {name}")
                if trial.config != name or trial.trial != index:
                    raise _Breach(
                        f"expected trial {index} of config {name}, got trial {trial.trial} of "
                        f"{trial.config!r}"
                    )
                checking, fed = time.monotonic(), self.ev.fed_seconds()
                moved = check.moved_s
                check.check_trial(trial, tensors)
                if self.ev.watched and (trial.most_ops or 0) > MAX_OPS_PER_CALL:
                    # Each element read into Python (`item`, `float`, `tolist`, a storage's
                    # values) or written back one by one is an operation: an answer computed
                    # element by element in Python beside a decoy kernel shows up here.
                    raise _Ended(
                        "rejected",
                        f"on config {state.config.label()} (trial {index}) one call of the "
                        f"submission ran {trial.most_ops} PyTorch operations (at most "
                        f"{MAX_OPS_PER_CALL} are allowed): the work was done element by element "
                        "in Python, not by its kernels",
                    )
                problem = (
                    self.ev.kernel_problem(trial)
                    if self.ev.watched and self.ev.request.device.startswith("cuda")
                    else ""
                )
                if not check.reason and problem:
                    raise _Ended(
                        "rejected", f"on config {state.config.label()} (trial {index}) {problem}"
                    )
                if not check.reason and trial.own_kernels == 0 and self.ev.watched:
                    # Right, but not by the submission's own kernels (correctness comes first:
                    # a wrong answer is `incorrect` however it was made).
                    raise _Ended(
                        "rejected",
                        f"on config {state.config.label()} (trial {index}) the submission "
                        "launched none of its own Triton kernels: the work was done some other way",
                    )
                # The judge's own share of `correctness` (the rest is the candidate's worker).
                phases = self.result.phases_s
                phases["compare"] = phases.get("compare", 0.0) + (
                    time.monotonic() - checking - (self.ev.fed_seconds() - fed)
                )
                # Of it, moving outputs and references to the comparing device (a GPU's copies).
                phases["compare.moved"] = phases.get("compare.moved", 0.0) + (check.moved_s - moved)
            event, _ = self._next(timeout, f"config {state.config.label()}")
            done = self._expect(event, protocol.ConfigDone, f"the end of config {name}")
            if done.config != name:
                raise _Breach(f"expected the end of config {name}, got {done.config!r}")
            self.results[name] = check.result()
            self.current = None
        timed = [s for s in self.states if s.timing is not None]
        event, _ = self._next(timeout, "the end of the checks")
        if not timed:
            self._expect(event, protocol.Done, "'done'")
            self.phase("correctness")
            return None
        self._expect(event, protocol.Checked, "'checked'")
        # The reference worker's work ends before the GPU is held alone to time (its last
        # results, the sampled calls', are checked once the timing is over): nothing of it
        # may run beside the timed calls, a trial ordered ahead and never needed included.
        self.ev._drain()
        self.ev._drop_ahead()
        self.phase("correctness")
        names = self.ev._to_time(self.results)
        if names and self.ev.time_alone(self.worker):
            self.phase("device_wait_exclusive")
        self.worker.send(protocol.Command(command="time" if names else "stop", configs=names))
        # The checks of the sampled timed outputs wait until the timing is over and the GPU is
        # shared again, so they do not hold it from another judgment's timing; unless the
        # samples kept would grow past `DEFERRED_SAMPLE_BYTES`.
        pending: list[tuple[_ConfigState, timekeeper.Followed]] = []
        for index, name in enumerate(names):
            if index:
                # The worker waits between configs until the judge says so: none of its timed
                # calls runs beside the judge's checks of the last config, where those run here.
                self.worker.send(protocol.Command(command="next"))
            state = next(s for s in self.states if s.config.name == name)
            pending.append((state, self._time(state)))
            if sum(_sampled_bytes(f) for _, f in pending) > DEFERRED_SAMPLE_BYTES:
                failure = self._check_timings(pending)
                pending = []
                if failure is not None:
                    return failure
        event, _ = self._next(timeout, "the end of timing")
        self._expect(event, protocol.Done, "'done'")
        if pending:
            self.ev.share_again(self.worker)
        failure = self._check_timings(pending)
        self.phase("timing")
        return failure

    def _time(self, state: _ConfigState) -> timekeeper.Followed:
        """One config's timed calls: every call bracketed by the judge's clock, secret samples."""
        assert state.timing is not None
        name = state.config.name
        timeout = self.task.spec.timeout_s
        cap = state.timing.plan.time_cap_s
        where = f"the timing of config {state.config.label()}"
        event, _ = self._next(timeout, where)
        start = self._expect(event, protocol.TimingStart, f"the start of timing {name}")
        if start.config != name:
            raise _Breach(f"expected the timing of config {name}, got {start.config!r}")
        try:
            return timekeeper.follow(
                name,
                # A call may take the config's whole cap; a sampled output comes right away.
                lambda sampled: self._next(timeout if sampled else cap + timeout, where),
                self.worker.handle.send,
                {p: state.elements.get(p) for p in state.sampled},
                state.timing.plan.max_pairs,
            )
        except timekeeper.Breach as breach:
            raise _Breach(str(breach)) from None

    def _check_timings(
        self, followed: list[tuple[_ConfigState, timekeeper.Followed]]
    ) -> tuple[str, str] | None:
        """Each config's timing checked in turn; the first that makes its times untrustworthy."""
        for state, one in followed:
            failure = self._check_timing(state, one)
            if failure is not None:
                return failure
        return None

    def _check_timing(
        self, state: _ConfigState, followed: timekeeper.Followed
    ) -> tuple[str, str] | None:
        """A config's timing checked: its sampled outputs and clocks; its result recorded."""
        name = state.config.name
        timed = followed.timed
        checking = time.monotonic()
        self.results[name], problem = self.ev._timed(state, self.results[name], timed, followed)
        phases = self.result.phases_s
        # The judge's own share of the timing, measured here: the timed calls' exchanges
        # (`timekeeper.Followed`) and its checks of a config's timing (the sampled outputs
        # against their references, on the GPU, and the clock), while the worker waits to
        # start the next config.
        for key, seconds in (
            ("timing.judge", followed.judge_s),
            ("timing.judge_samples", followed.samples_s),
            ("timing.judge_check", time.monotonic() - checking),
        ):
            phases[key] = phases.get(key, 0.0) + seconds
        # The worker's split of its timing (warm-up, pairs and the steps of its calls,
        # cross-checks): diagnostics only, from an untrusted process, so nothing is decided
        # on them.
        for step_name, seconds in _phases(timed.summary.phases).items():
            key = f"timing.{step_name}"
            phases[key] = phases.get(key, 0.0) + seconds
        self.result.environment.update(_clock_environment(name, timed.clocks))
        if problem:
            return ("rejected", f"config {state.config.label()}: {problem}")
        return None


def _sampled_bytes(followed: timekeeper.Followed) -> int:
    """The bytes of a config's sampled timed outputs that the judge holds."""
    return sum(int(t.nbytes) for outputs in followed.sampled.values() for t in outputs)


_E = TypeVar("_E", bound=BaseModel)
_Streamed = TypeVar("_Streamed", protocol.ReferenceTrial, protocol.ReferenceSample)


class _Breach(Exception):
    """The candidate's worker broke the protocol (the message says how)."""


class _Ended(Exception):
    """The candidate's evaluation ended with a verdict (a failure the worker reported)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_FRAME = re.compile(r'^  File "(?P<path>[^"]*)", line (?P<line>\d+)(?:, in (?P<func>.*))?$')
#: Characters of an exception's message kept in a reason.
MESSAGE_CHARS = 2000


def shown_traceback(text: str, submission_dir: str, task_root: str) -> str:
    """`text` (a Python traceback) with only the frames in `submission_dir`, paths shortened."""
    lines = text.splitlines()
    kept: list[str] = []
    hidden = 0
    index = 0
    prefix = submission_dir.rstrip("/") + "/" if submission_dir else None
    while index < len(lines):
        line = lines[index]
        frame = _FRAME.match(line)
        if frame is None:
            if not line.startswith("    ") or not kept or kept[-1].startswith("  File"):
                kept.append(line)
            index += 1
            continue
        # A frame's source line (and its ^^^ marker) follow it, indented by four.
        body = []
        index += 1
        while index < len(lines) and lines[index].startswith("    "):
            body.append(lines[index])
            index += 1
        path = frame["path"]
        if prefix is not None and path.startswith(prefix):
            if hidden:
                kept.append(f"  [{hidden} frame(s) outside the submission]")
                hidden = 0
            func = f", in {frame['func']}" if frame["func"] else ""
            kept.append(f'  File "{path.removeprefix(prefix)}", line {frame["line"]}{func}')
            kept.extend(body)
        else:
            hidden += 1
    if hidden:
        kept.append(f"  [{hidden} frame(s) outside the submission]")
    shown = "\n".join(kept)
    for secret in (task_root, submission_dir):
        if secret:
            shown = shown.replace(secret, "<judge>")
    return shown if len(shown) <= MESSAGE_CHARS * 3 else shown[: MESSAGE_CHARS * 3] + "\n[...]"


def _device_hold(task: Task, states: list[_ConfigState], device: str) -> devicelock.Hold | None:
    """The judgment's hold on its GPU, with the slots its memory takes; None off a GPU."""
    if not device.startswith(("cuda", "rocm")):
        return None
    # Without a footprint to size its share (the memory is read through CUDA), a judgment
    # takes every slot: it has the GPU's memory to itself, as before judgments shared a GPU.
    slots = settings.JUDGMENTS_PER_GPU
    if device.startswith("cuda"):
        configs = [s.config for s in states]
        slots = footprint.slots_needed(task, configs, _device_bytes(device), slots)
    return devicelock.Hold(device, slots)


def _trace(task: Task, role: str, event: protocol.Event, tensors: list[torch.Tensor]) -> None:
    """Each message from a worker, at debug level (`gauntlet -v`): where a slow judgment is."""
    if logger.isEnabledFor(logging.DEBUG):
        size = sum(t.numel() * t.element_size() for t in tensors)
        logger.debug(
            "%s %s worker: %s %s %s (%.1f MB)",
            task.task_id,
            role,
            event.event,
            getattr(event, "config", ""),
            getattr(event, "trial", getattr(event, "position", "")),
            size / 1e6,
        )


def _reset(worker: _Worker, pool: spares.SparePool, spare: spares.Spare, task_id: str) -> None:
    """Tell a kept reference worker to reset, and give it back to `pool` (`_let_go`)."""
    idle = None
    try:
        worker.send(protocol.Command(command="stop"))
        event, _ = worker.read_event(time.monotonic() + RESET_S)
        if isinstance(event, protocol.Idle):
            idle = event
        else:
            logger.warning("a reference worker answered 'stop' with '%s'", event.event)
    except (ChannelClosed, ChannelTimeout, ProtocolError, protocol.BadFrame, OSError) as err:
        logger.warning("a reference worker did not reset after '%s': %s", task_id, err)
    finally:
        pool.give_back(spare, idle)


def _phases(value: dict[str, float]) -> dict[str, float]:
    """A worker's phase times, kept only where they are finite seconds."""
    return {k[:40]: float(v) for k, v in list(value.items())[:20] if math.isfinite(v)}


def _compare_device(device: str) -> str:
    """Where the orchestrator compares outputs: the judged GPU (this evaluation holds its lock).

    Anything else compares on the host.
    """
    return device if device.startswith("cuda") else "cpu"


def _device_bytes(device: str) -> int:
    """The GPU's total memory (the orchestrator compares outputs on it, so CUDA is up anyway)."""
    import torch

    return int(torch.cuda.get_device_properties(devices.index_of(device)).total_memory)


def _sol_us(task: Task, config: Config, device: str) -> float | None:
    """The config's speed-of-light time on the device, in microseconds."""
    from gauntlet.judge.roofline import device_peaks, sol_seconds

    return sol_seconds(task, config, device_peaks(device)) * 1e6


def _clock_environment(config: str, clocks: Mapping[str, Mapping[str, float]]) -> dict[str, str]:
    return {
        f"clocks.{config}.{when}.{key}": f"{value:g}"
        for when, values in clocks.items()
        for key, value in values.items()
    }


#: The orchestrator's way to the task's checker (`_Evaluation.checked`).
_Checker = Callable[[protocol.CheckOutput, list["torch.Tensor"]], protocol.CheckResult]


class _ConfigCheck:
    """Accumulates one config's trial checks into a ConfigResult."""

    def __init__(
        self,
        task: Task,
        state: _ConfigState,
        device: str,
        reference: Callable[[_ConfigState, int], _Trial],
        checker: _Checker | None = None,
    ) -> None:
        self.task = task
        self.reference = reference
        """A trial's reference (`_Evaluation.reference_trial`): kept, or streamed."""
        self.checker = checker
        """The task's checker, which then decides the values instead of the comparison."""
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
        self.moved_s = 0.0
        """Seconds its comparisons spent moving tensors to the comparing device
        (`correctness.Comparison.moved_s`)."""

    def _fail(self, reason: str) -> None:
        if not self.reason:
            self.reason = reason

    def check_trial(self, event: protocol.CandidateTrial, tensors: list[torch.Tensor]) -> None:
        index = event.trial
        self.trials += 1
        if self.reason:
            return
        # Let go when the trial is checked: a streamed config's is computed for this trial.
        ref = self.reference(self.state, index)
        trial = self.state.trials[index]
        where = f"trial {index} ({trial.distribution} inputs)"
        meta_problem = correctness.check_meta(
            ref.expected, event.output, self.device, values=self.checker is None
        )
        if meta_problem:
            self._fail(f"{where}: {meta_problem}")
            return
        if event.mutated:
            names = ", ".join(f"'{n}'" for n in event.mutated)
            self._fail(f"{where}: the submission changed its input {names} in place")
            return
        if self.checker is not None:
            self._task_check(event, tensors, ref, where)
            self._check_repeat(event, where)
            return
        n_out = len(ref.outputs)
        spec = self.task.spec
        n_grads = len(spec.backward.wrt) if spec.backward else 0
        present = event.grads or []
        expected_tensors = n_out + sum(present)
        if len(tensors) != expected_tensors or (spec.backward and len(present) != n_grads):
            self._fail(
                f"{where}: the result holds {len(tensors)} tensors, not the {n_out} outputs"
                + (f" and {n_grads} gradients" if spec.backward else "")
                + " asked for"
            )
            return
        for i, (arrived, info) in enumerate(zip(tensors, ref.expected.items, strict=False)):
            # The bytes that came, not the worker's description of them, must fit.
            dtype = str(arrived.dtype).removeprefix("torch.")
            if dtype != info.dtype or list(arrived.shape) != info.shape:
                self._fail(
                    f"{where}: output {i} arrived as {dtype} {list(arrived.shape)}, expected "
                    f"{info.dtype} {info.shape}"
                )
                return
        tol = correctness.tolerance_for(spec.tolerance, self.config.dtype)
        pairs: list[tuple[str, torch.Tensor, torch.Tensor, float, float]] = []
        for i in range(n_out):
            label = f"output {i}" if n_out > 1 else "output"
            pairs.append(
                (label, tensors[i], ref.outputs[i], ref.baseline_rel_l2[i], ref.baseline_max_abs[i])
            )
        if spec.backward:
            missing = [n for n, ok in zip(spec.backward.wrt, present, strict=True) if not ok]
            if missing:
                self._fail(f"{where}: no gradient for {missing}")
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
            self.moved_s += result.moved_s
            if not result.ok:
                self._fail(f"{where}: {result.reason}")
                return
        self._check_repeat(event, where)

    def _task_check(
        self,
        event: protocol.CandidateTrial,
        tensors: list[torch.Tensor],
        ref: _Trial,
        where: str,
    ) -> None:
        """The trial's output judged by the task's checker (in the reference worker)."""
        assert self.checker is not None
        expected = ref.expected
        if len(tensors) != len(expected.items):
            self._fail(
                f"{where}: the result holds {len(tensors)} tensors, not {len(expected.items)}"
            )
            return
        for i, (out, want) in enumerate(zip(tensors, ref.outputs, strict=False)):
            label = f"output {i}" if len(tensors) > 1 else "output"
            problem = correctness.unchecked_output(out, want, label, _compare_device(self.device))
            if problem:
                self._fail(f"{where}: {problem}")
                return
        # The reference's container, not the candidate's word for its own.
        order = protocol.CheckOutput(
            command="check",
            config=self.config.name,
            trial=event.trial,
            container=expected.container,
        )
        verdict = self.checker(order, tensors)
        if not verdict.ok:
            self._fail(f"{where}: the task's checker refused the output: {verdict.message}")

    def _check_repeat(self, event: protocol.CandidateTrial, where: str) -> None:
        """Two calls on the same input agree as the task's `[determinism]` asks."""
        spec = self.task.spec
        if event.trial == 0 and not event.repeated:
            self._fail(f"{where}: the repeated call on the same input was not reported")
        elif event.repeated:
            diff = event.repeat_max_diff
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


def _failed(worker: _Worker, where: str, err: Exception) -> JudgeError:
    """The error for a trusted worker that hung or broke its protocol, with its last words.

    A hung one says where (its stacks) and is lost (`WorkerLost`: judged again once with new
    workers): only trusted code ran in it, so neither the hang nor its cost is the submission's.
    """
    if isinstance(err, ChannelTimeout):
        worker.handle.dump_stacks()
    finished = worker.finish()
    message = (
        f"{where} failed ({type(err).__name__}: {err}; exit {finished.returncode}): "
        f"{finished.stderr[-3000:]}"
    )
    return WorkerLost(message) if isinstance(err, ChannelTimeout) else JudgeError(message)


def _lost(worker: _Worker, role: str, err: Exception) -> JudgeError:
    """The error for a worker that died where only the judge's code ran, with its last words.

    A confinement that cannot be set up is this machine's lasting problem, not a loss that a
    second try would mend.
    """
    finished = worker.finish()
    if finished.returncode == confine.SETUP_FAILED and "confine:" in finished.stderr:
        return JudgeError(f"cannot confine the {role}'s process: {finished.stderr.strip()[-500:]}")
    how = (
        f"killed by {finished.signal_name}"
        if finished.signal_name
        else f"exited with code {finished.returncode}"
    )
    said = finished.stderr.strip()[-1500:]
    return WorkerLost(f"{role} worker {how} ({err})" + (f": {said}" if said else ""))


class _Worker:
    """A reference or candidate worker (`workers.WorkerHandle`) with its request sent."""

    def __init__(
        self,
        handle: workers.WorkerHandle,
        request: protocol.WorkerRequest,
        spare: spares.Spare | None = None,
        pool: spares.SparePool | None = None,
    ) -> None:
        self.handle = handle
        self.spare = spare
        """The spare the worker came from (its slot goes with it), if any."""
        self.pool = pool
        """The pool the spare came from, which takes it back."""
        self._early: tuple[protocol.Event, list[torch.Tensor]] | Exception | None = None
        """What came instead of 'ready' (a frame or the channel's error), for the next read."""
        self.imported: protocol.Imported | None = None
        """A spare's report that its imports were done, where this judgment read it."""
        self.ready: protocol.Ready | None = None
        """Its report that it waits to be started (`await_ready`), once read."""
        self.memory: memcg.MemoryCgroup | None = None
        """A candidate's memory cgroup, removed with it (`_Evaluation._contain_memory`)."""
        self.send(request)

    @classmethod
    def start(
        cls,
        request: protocol.WorkerRequest,
        tmp: Path,
        device: str,
        confinement: confine.Confinement | None = None,
        *,
        ahead: bool = False,
    ) -> _Worker:
        """A new worker process, given its request (`ahead`: `workers.python_worker`'s)."""
        tmp.mkdir(parents=True, exist_ok=True)
        return cls(workers.python_worker(tmp, device, confinement, ahead=ahead), request)

    @classmethod
    def adopt(
        cls, spare: spares.Spare, pool: spares.SparePool, request: protocol.WorkerRequest
    ) -> _Worker:
        """A spare worker (imports done, waiting for its request), given its request."""
        return cls(spare.handle, request, spare, pool)

    @property
    def child(self) -> process.Child:
        """The worker's process."""
        return self.handle.child

    def await_ready(self, deadline: float, role: str) -> None:
        """Wait until the worker has imported its trusted code and waits to be started.

        Raises:
            WorkerLost: It died or was not ready by `deadline` (its stacks in the message):
                only the judge's code had run in it (a submission runs after 'start'), so the
                loss is never the submission's.

        Anything else that comes (an error report, a bad frame) is kept for the next
        `read_event`, where the collectors turn it into a verdict or a judge error. A spare's
        report that its imports are done (`protocol.Imported`, its first frame) is read past.
        """
        try:
            frame = self.read_event(deadline)
            if isinstance(frame[0], protocol.Imported):
                self.imported = frame[0]
                frame = self.read_event(deadline)
        except ChannelClosed as err:
            raise _lost(self, role, err) from err
        except ChannelTimeout as err:
            # Still importing the judge's own code at the deadline (a starved or stuck start).
            self.handle.dump_stacks()
            raise _lost(
                self, role, ChannelTimeout(f"not ready {STARTUP_S:g} s after its start")
            ) from err
        except (ProtocolError, protocol.BadFrame) as err:
            self._early = err
            return
        if isinstance(frame[0], protocol.Ready):
            self.ready = frame[0]
        else:
            self._early = frame

    def read_event(self, deadline: float | None) -> tuple[protocol.Event, list[torch.Tensor]]:
        """The next event from the worker, validated (`protocol.BadFrame` if it is none)."""
        early, self._early = self._early, None
        if isinstance(early, Exception):
            raise early
        if early is not None:
            return early
        header, tensors = self.handle.read(deadline)
        return protocol.parse_event(header), tensors

    def send(self, message: protocol.WorkerRequest | protocol.Command) -> None:
        """A frame on the command pipe (the request, then commands such as 'time')."""
        self.handle.send(message)

    def finish(self, grace_s: float = 0.0) -> process.Finished:
        """Reap the worker, killing its group after `grace_s` seconds."""
        return self.handle.finish(grace_s)

    def close(self) -> None:
        """Stop the worker (a spare's slot goes with it; a kept one was given back already).

        Its memory cgroup goes after it, with whatever its processes left in it.
        """
        try:
            if self.spare is not None:
                assert self.pool is not None, "a spare comes with its pool (`adopt`)"
                self.pool.give_back(self.spare, None)
            else:
                self.handle.close()
        finally:
            if self.memory is not None:
                self.memory.remove()
                self.memory = None
