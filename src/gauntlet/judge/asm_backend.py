"""The judge's backend for accelerator assembly (`accel` track, language `asm`).

Only assembly text is accepted, and nothing the agent wrote ever runs as code: the submission is
data for the trusted assembler and simulator of `gauntlet.accel`. Both still run in a worker
process with a wall-clock limit and a memory limit (`_SimWorker`), because an adversarial
program can make them work hard: `.equ` chains that square huge numbers, loops of the largest
tile instructions. Inputs, the memory contract and the float64 reference are computed here, in
the trusted orchestrator, from the task's own Python files.

How an `accel` task is judged (the conventions are documented for task authors in
`tasks/accel/README.md`):

- the task's input file defines `make_inputs(config, seed, distribution, device)` (NumPy arrays
  by input-region name) and `contract(config) -> MemoryContract`; the reference file defines
  `reference(*inputs)` returning the outputs in the contract's output order;
- a config's parameters named `hw_<name>` override the platform's hardware parameter `<name>`;
  its other numeric parameters, `itemsize` (bytes per element of its dtype) and the contract's
  region names are the assembler's symbols (`config_setup`);
- every config runs every trial (`trials` x `distributions`, seeds from `derive_seed`) of the
  candidate on fresh inputs; a fault or a wrong element fails the config; the task's baseline
  (`baseline.asm`) runs on the first trial's inputs for its cycles and its own error, which
  sets the relative-L2 bound (`correctness.rel_l2_bound`);
- timing is the simulator's cycle count: deterministic, so one run of each is the measurement
  (the candidate's count is its largest over the trials), and the speed of light is the
  platform's roofline for the task's `[roofline]` flops and bytes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import os
import sys
import tempfile
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import ValidationError

from gauntlet import expr, settings
from gauntlet.errors import ConfigError, JudgeError
from gauntlet.judge import correctness, protocol
from gauntlet.judge.backend import BuildResult, EvalRequest, Evaluation, Submission
from gauntlet.judge.seeds import derive_seed
from gauntlet.judge.verdict import ConfigResult, Timing
from gauntlet.task import ITEMSIZE, Config, Task

if TYPE_CHECKING:
    from gauntlet.accel import MemoryContract, Platform, Profile
    from gauntlet.accel.faults import Fault

logger = logging.getLogger(__name__)

#: Prefix of the config parameters that override a hardware parameter (`hw_mlen = 16`).
HW_PREFIX = "hw_"
#: The fewest instructions a candidate may execute before its run stops (`step_limit`).
STEP_FLOOR = 1_000_000
#: A candidate may execute this many times the baseline's instructions on the same config.
STEP_FACTOR = 16
#: Step limit of the task's own baseline (trusted, but a broken task must not hang the judge).
BASELINE_STEP_LIMIT = 50_000_000
#: Longest accepted line of assembly, in characters, and most lines of a submission file.
MAX_LINE_CHARS = 500
MAX_LINES = 50_000
#: Seconds the worker may take to start, and to assemble one source.
STARTUP_S = 60.0
ASSEMBLE_S = 30.0
#: Diagnostics shown in a build reason.
SHOWN_DIAGNOSTICS = 20

Draw = Callable[[Config, int, str], dict[str, Any]]
Reference = Callable[[dict[str, Any]], list[np.ndarray]]


class AsmBackend:
    """Assembly submissions for the simulated accelerators."""

    def guard(self, task: Task, submission: Submission) -> str | None:
        """Text checks: assembly files only, printable text, bounded lines."""
        for name, text in submission.files.items():
            problem = _text_problem(name, text)
            if problem:
                return problem
        return None

    def build(self, task: Task, submission: Submission, workdir: Path, device: str) -> BuildResult:
        """Assemble for the first visible config; the diagnostics are the build reason."""
        folder = workdir / "submission"
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in submission.files.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        name = task.spec.submission.files[0]
        source = submission.files[name]
        config = task.visible_configs[0]
        outcome = assemble_source(task, config, source)
        if outcome.failure is not None:
            return BuildResult(False, reason=outcome.message, failure=outcome.failure)
        if outcome.diagnostics:
            reason = f"{name} does not assemble for config {config.label()}:\n" + _shown(
                name, outcome.diagnostics
            )
            return BuildResult(False, reason=reason, log=reason)
        return BuildResult(True, artifact=folder, log=_shown(name, outcome.warnings))

    def evaluate(self, request: EvalRequest) -> Evaluation:
        """Simulate every config's trials, compare with the reference, count cycles."""
        artifact = request.build.artifact
        if artifact is None:
            raise JudgeError(f"the build of '{request.task.task_id}' left no artifact")
        main = request.task.spec.submission.files[0]
        source = (artifact / main).read_text(encoding="utf-8")
        return _Evaluation(request, source).run()


# -- task code ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskCode:
    """The trusted Python of an accel task, loaded once."""

    make_inputs: Callable[..., Mapping[str, Any]]
    contract: Callable[[dict[str, Any]], MemoryContract]
    reference: Callable[..., Any]


_CODE_LOCK = threading.Lock()
_CODE: dict[tuple[str, tuple[float, ...]], TaskCode] = {}


def task_code(task: Task) -> TaskCode:
    """Load the task's input generator, contract builder and reference (cached by mtime).

    Raises:
        JudgeError: a file does not load or lacks its function.
    """
    spec = task.spec
    files = [task.path(spec.inputs.file), task.path(spec.reference.file)]
    try:
        key = (str(task.root), tuple(f.stat().st_mtime for f in files))
    except OSError as err:
        raise JudgeError(f"task '{task.task_id}': cannot read its files: {err}") from err
    with _CODE_LOCK:
        cached = _CODE.get(key)
        if cached is not None:
            return cached
        tag = hashlib.sha256(str(task.root).encode()).hexdigest()[:12]
        inputs = _load_module(files[0], f"_gauntlet_accel_inputs_{tag}", task)
        reference = _load_module(files[1], f"_gauntlet_accel_reference_{tag}", task)
        code = TaskCode(
            make_inputs=_function(inputs, spec.inputs.entry, task),
            contract=_function(inputs, "contract", task),
            reference=_function(reference, spec.reference.entry, task),
        )
        _CODE[key] = code
        return code


def _load_module(path: Path, name: str, task: Task) -> ModuleType:
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise JudgeError(f"task '{task.task_id}': cannot load {path}")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:  # the task's own code: any failure is a broken task
        raise JudgeError(f"task '{task.task_id}': {path.name} fails to load: {err!r}") from err
    return module


def _function(module: ModuleType, name: str, task: Task) -> Callable[..., Any]:
    value = getattr(module, name, None)
    if not callable(value):
        raise JudgeError(
            f"task '{task.task_id}': {module.__file__} defines no function '{name}' "
            "(accel tasks need make_inputs and contract in the inputs file, see "
            "tasks/accel/README.md)"
        )
    return value  # type: ignore[no-any-return]


# -- configs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSetup:
    """What simulating one config needs: the platform, the memory contract, the symbols."""

    platform_name: str
    overrides: dict[str, int | float]
    platform: Platform
    contract: MemoryContract
    symbols: dict[str, int | float]


def hardware_overrides(config: Config) -> dict[str, int | float]:
    """The config's `hw_<name>` parameters as platform overrides (`{"mlen": 16}`)."""
    found: dict[str, int | float] = {}
    for key, value in config.params.items():
        if key.startswith(HW_PREFIX) and isinstance(value, int | float):
            found[key.removeprefix(HW_PREFIX)] = value
    return found


def config_setup(task: Task, config: Config) -> ConfigSetup:
    """The platform, contract and assembler symbols of one config.

    Raises:
        JudgeError: the task's config or contract is invalid (a broken task, not a submission).
    """
    from gauntlet.accel import get_platform

    name = str(task.spec.platform)
    overrides = hardware_overrides(config)
    try:
        platform = get_platform(name, overrides)
        contract = task_code(task).contract(dict(config.params))
    except (ConfigError, ValueError) as err:
        raise JudgeError(
            f"task '{task.task_id}' config {config.label()}: invalid platform or contract: {err}"
        ) from err
    symbols: dict[str, int | float] = {}
    for key, value in config.params.items():
        if key.startswith(HW_PREFIX) or isinstance(value, str):
            continue
        symbols[key] = int(value) if isinstance(value, bool) else value
    symbols["itemsize"] = ITEMSIZE.get(config.dtype, 4)
    symbols.update(contract.symbols())
    return ConfigSetup(name, overrides, platform, contract, symbols)


def draw_inputs(task: Task, config: Config, seed: int, distribution: str) -> dict[str, np.ndarray]:
    """The task's inputs for one trial, as float arrays in the contract's order.

    Raises:
        JudgeError: the generator fails or returns something other than arrays.
    """
    code = task_code(task)
    try:
        raw = code.make_inputs(dict(config.params), seed, distribution, f"sim:{task.spec.platform}")
    except Exception as err:  # the task's own code
        raise JudgeError(
            f"task '{task.task_id}' config {config.label()}: make_inputs failed: {err!r}"
        ) from err
    inputs: dict[str, np.ndarray] = {}
    for name, value in raw.items():
        if not isinstance(value, np.ndarray):
            raise JudgeError(
                f"task '{task.task_id}': make_inputs returned {type(value).__name__} for "
                f"'{name}'; accel inputs are NumPy arrays"
            )
        inputs[name] = value
    return inputs


def draw_array(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    distribution: str,
    dtype: str = "float32",
) -> np.ndarray:
    """An input array for an accel task's `make_inputs`: float32 values exact in `dtype`.

    The distributions mean what they mean for every track (`gauntlet.taskkit`'s constants):
    `normal`, `uniform` in [-1, 1), `scaled` (N(0, 1) x SCALE + OFFSET), `heavy_tailed`
    (Student's t with 2 degrees of freedom, clipped) and `integers`. Values are rounded to
    bf16 when `dtype` is `bfloat16`, so the reference sees exactly what the kernel loads.

    Raises:
        ValueError: an unknown distribution or dtype.
    """
    from gauntlet import taskkit

    if distribution == "normal":
        values = rng.standard_normal(shape)
    elif distribution == "uniform":
        values = rng.uniform(-1.0, 1.0, shape)
    elif distribution == "scaled":
        values = rng.standard_normal(shape) * taskkit.SCALE + taskkit.OFFSET
    elif distribution == "heavy_tailed":
        z = rng.standard_normal(shape)
        u = np.maximum(rng.uniform(0.0, 1.0, shape), np.finfo(np.float64).tiny)
        limit = taskkit.HEAVY_TAIL_LIMIT
        values = np.clip(z / np.sqrt(-np.log(u)), -limit, limit)
    elif distribution == "integers":
        bound = taskkit.INTEGER_LIMIT
        values = rng.integers(-bound, bound + 1, shape).astype(np.float64)
    else:
        raise ValueError(f"accel inputs cannot draw distribution '{distribution}'")
    out = values.astype(np.float32)
    if dtype == "bfloat16":
        import ml_dtypes

        out = out.astype(ml_dtypes.bfloat16).astype(np.float32)
    elif dtype != "float32":
        raise ValueError(f"accel regions are float32 or bfloat16, not '{dtype}'")
    return out


def reference_outputs(task: Task, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The float64 reference outputs, in the contract's output order."""
    code = task_code(task)
    args = [np.asarray(v, dtype=np.float64) for v in inputs.values()]
    try:
        out = code.reference(*args)
    except Exception as err:  # the task's own code
        raise JudgeError(f"task '{task.task_id}': the reference failed: {err!r}") from err
    outs = out if isinstance(out, tuple | list) else (out,)
    return [np.asarray(o, dtype=np.float64) for o in outs]


def reference_functions(task: Task) -> tuple[Draw, Reference]:
    """`(draw, reference)` for the task checks: inputs of a config, float64 outputs."""

    def draw(config: Config, seed: int, distribution: str) -> dict[str, Any]:
        return dict(draw_inputs(task, config, seed, distribution))

    def reference(inputs: dict[str, Any]) -> list[np.ndarray]:
        return reference_outputs(task, inputs)

    return draw, reference


def trials_for(task: Task, config: Config, seed: int) -> list[tuple[str, int]]:
    """(distribution, seed) of each trial of a config: every distribution, `trials` times."""
    return [
        (dist, derive_seed(seed, task.task_id, config.name, sorted(config.params.items()), dist, i))
        for i in range(task.spec.trials)
        for dist in task.spec.inputs.distributions
    ]


def roofline_cycles(task: Task, config: Config, platform: Platform) -> float:
    """The speed-of-light cycles of a config on its hardware (`[roofline]` flops and bytes)."""
    variables = config.variables()
    flops = float(expr.evaluate(task.spec.roofline.flops, variables))
    hbm_bytes = float(expr.evaluate(task.spec.roofline.bytes, variables))
    return float(platform.roofline_cycles(flops, hbm_bytes))


# -- the simulation worker --------------------------------------------------------------------


@dataclass(frozen=True)
class SimRun:
    """One simulated run of a program."""

    outputs: dict[str, np.ndarray]
    profile: Profile
    fault: Fault | None
    unwritten: dict[str, int]


@dataclass
class Outcome:
    """What the worker made of a source: diagnostics, runs, or a failure of the run itself."""

    diagnostics: list[str] = field(default_factory=list)
    """Assembly errors (`line L, col C: ...`); empty when the source assembled."""
    warnings: list[str] = field(default_factory=list)
    runs: list[SimRun] = field(default_factory=list)
    instructions: int = 0
    """Static instruction count of the assembled program."""
    failure: Literal["timeout", "crash"] | None = None
    message: str = ""
    """Why, when `failure` is set."""


class _SimWorker:
    """A worker process that assembles and simulates, with a wall clock on every job.

    It runs `python -m gauntlet.judge.asm_backend` (trusted code only) through the judge's one
    way of starting workers (`workers.WorkerHandle`: a session of its own, the workers'
    environment allowlist, an address-space limit, typed frames with the arrays as raw bytes);
    workers are pooled and reused across evaluations (`_worker`), since starting one costs the
    imports of NumPy and the simulator.
    """

    def __init__(self, memory_limit_mb: int) -> None:
        from gauntlet.judge import workers

        self.memory_limit_mb = memory_limit_mb
        try:
            self.handle: workers.WorkerHandle | None = workers.WorkerHandle(
                __name__,
                env=_worker_env(),
                cwd=Path(tempfile.gettempdir()),
                memory_limit_bytes=memory_limit_mb << 20,
            )
        except OSError as err:
            raise JudgeError(f"cannot start the simulation worker: {err}") from err

    @property
    def alive(self) -> bool:
        """Whether the worker can take another job."""
        return self.handle is not None and self.handle.child.poll() is None

    def run(
        self, job: protocol.SimJob, arrays: Sequence[np.ndarray], timeout_s: float
    ) -> tuple[protocol.SimReply, list[np.ndarray]] | Outcome:
        """Send one job; its reply and arrays, or the failed `Outcome` when the worker fails."""
        from gauntlet.judge.channel import (
            ChannelClosed,
            ChannelTimeout,
            ProtocolError,
            write_frame,
        )

        if self.handle is None:
            return Outcome(failure="crash", message="the simulation worker is gone")
        try:
            write_frame(self.handle.command_fd, job.model_dump(), list(arrays))
            header, received = self.handle.read(time.monotonic() + timeout_s)
            return protocol.SimReply.model_validate(header), list(received)
        except ChannelTimeout:
            self.close()
            return Outcome(failure="timeout", message=f"no result within {timeout_s:g} s")
        except (ChannelClosed, ProtocolError, ValidationError, OSError) as err:
            finished = self.close()
            return Outcome(
                failure="crash",
                message=f"the simulation worker died ({err!r}): {finished[-2000:]}",
            )

    def close(self) -> str:
        """Stop the worker (killing it if busy); returns the end of its stderr."""
        handle, self.handle = self.handle, None
        if handle is None:
            return ""
        handle.child.kill_group()
        stderr = handle.finish(grace_s=10).stderr
        handle.close()
        return stderr


def _worker_env() -> dict[str, str]:
    # The allowlist every judge worker keeps (no API key or other secret of the harness's).
    env = {k: os.environ[k] for k in settings.WORKER_ENV_KEEP if k in os.environ}
    # One BLAS thread: results must not depend on the host's thread count, and the judge's
    # workers share the machine's cores.
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


_POOL_LOCK = threading.Lock()
_IDLE: list[_SimWorker] = []
#: Idle workers kept for reuse.
POOL_SIZE = 4


@contextmanager
def _worker(memory_limit_mb: int) -> Iterator[_SimWorker]:
    """A pooled worker for a series of jobs; returned to the pool if it is still healthy."""
    worker = None
    with _POOL_LOCK:
        for candidate in list(_IDLE):
            _IDLE.remove(candidate)
            if candidate.alive and candidate.memory_limit_mb == memory_limit_mb:
                worker = candidate
                break
            candidate.close()
    if worker is None:
        worker = _SimWorker(memory_limit_mb)
    try:
        yield worker
    finally:
        with _POOL_LOCK:
            if worker.alive and len(_IDLE) < POOL_SIZE:
                _IDLE.append(worker)
            else:
                worker.close()


def _serve(request_fd: int, result_fd: int) -> None:
    """The worker's loop: a job in, a reply out, until the command pipe closes."""
    from gauntlet.judge.channel import ChannelClosed, FrameReader, write_frame

    reader = FrameReader(request_fd)
    while True:
        try:
            header, arrays = reader.read(None)
        except ChannelClosed:
            return
        try:
            reply, outputs = _worker_job(protocol.SimJob.model_validate(header), arrays)
        except MemoryError:
            reply, outputs = (
                protocol.SimReply(status="crash", message="the simulation ran out of memory"),
                [],
            )
        except Exception:  # noqa: BLE001 - the worker's top level: report, never die silently
            message = traceback.format_exc(limit=8)[-20_000:]
            reply, outputs = protocol.SimReply(status="crash", message=message), []
        write_frame(result_fd, reply.model_dump(), outputs)


def _worker_job(
    job: protocol.SimJob, arrays: Sequence[np.ndarray]
) -> tuple[protocol.SimReply, list[np.ndarray]]:
    from gauntlet.accel import AsmError, MemoryContract, assemble, get_platform, simulate

    platform = get_platform(job.platform, job.overrides)
    try:
        program = assemble(platform, job.source, job.symbols)
    except AsmError as err:
        diagnostics = [str(d) for d in err.diagnostics if d.severity == "error"]
        return protocol.SimReply(status="asm_error", diagnostics=diagnostics), []
    runs: list[protocol.SimRunHeader] = []
    outputs: list[np.ndarray] = []
    if job.inputs:
        contract = MemoryContract.model_validate(job.contract)
        given = iter(arrays)
        for names in job.inputs:
            inputs = {name: next(given) for name in names}
            result = simulate(program, contract, inputs, step_limit=job.step_limit)
            runs.append(
                protocol.SimRunHeader(
                    outputs=list(result.outputs),
                    profile=result.profile.model_dump(mode="json"),
                    fault=result.fault.model_dump(mode="json") if result.fault else None,
                    unwritten=dict(result.unwritten),
                )
            )
            outputs.extend(result.outputs.values())
            if result.fault is not None:
                break  # later trials add nothing to a program that faults
    reply = protocol.SimReply(
        status="ok",
        warnings=[str(d) for d in program.warnings],
        instructions=len(program),
        runs=runs,
    )
    return reply, outputs


def _outcome(answer: tuple[protocol.SimReply, list[np.ndarray]] | Outcome) -> Outcome:
    from gauntlet.accel import Profile
    from gauntlet.accel.faults import Fault

    if isinstance(answer, Outcome):
        return answer
    reply, arrays = answer
    if reply.status == "asm_error":
        return Outcome(diagnostics=list(reply.diagnostics))
    if reply.status == "crash":
        return Outcome(failure="crash", message=reply.message)
    given = iter(arrays)
    runs = [
        SimRun(
            outputs={name: next(given) for name in run.outputs},
            profile=Profile.model_validate(run.profile),
            fault=Fault.model_validate(run.fault) if run.fault else None,
            unwritten=dict(run.unwritten),
        )
        for run in reply.runs
    ]
    return Outcome(warnings=list(reply.warnings), runs=runs, instructions=reply.instructions)


def _job(
    setup: ConfigSetup,
    source: str,
    inputs: Sequence[Mapping[str, np.ndarray]] = (),
    step_limit: int = STEP_FLOOR,
) -> tuple[protocol.SimJob, list[np.ndarray]]:
    contract_inputs = {r.name for r in setup.contract.with_role("input")}
    names = [[k for k in i if k in contract_inputs] for i in inputs]
    arrays = [np.asarray(i[k]) for i, keys in zip(inputs, names, strict=True) for k in keys]
    job = protocol.SimJob(
        platform=setup.platform_name,
        overrides=setup.overrides,
        source=source,
        symbols=setup.symbols,
        contract=setup.contract.model_dump(mode="json"),
        inputs=names,
        step_limit=step_limit,
    )
    return job, arrays


def assemble_source(task: Task, config: Config, source: str) -> Outcome:
    """Assemble `source` with a config's symbols, in a worker (nothing is simulated)."""
    setup = config_setup(task, config)
    job, arrays = _job(setup, source)
    with _worker(task.spec.memory_limit_mb) as worker:
        return _outcome(worker.run(job, arrays, STARTUP_S + ASSEMBLE_S))


def simulate_source(
    task: Task,
    config: Config,
    source: str,
    inputs: Sequence[Mapping[str, np.ndarray]],
    *,
    step_limit: int,
    worker: _SimWorker | None = None,
) -> Outcome:
    """Assemble and run `source` on each input set of one config (stops at the first fault)."""
    setup = config_setup(task, config)
    job, arrays = _job(setup, source, inputs, step_limit)
    timeout_s = STARTUP_S + task.spec.timeout_s
    if worker is not None:
        return _outcome(worker.run(job, arrays, timeout_s))
    with _worker(task.spec.memory_limit_mb) as own:
        return _outcome(own.run(job, arrays, timeout_s))


# -- the baseline -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BaselineRun:
    """The task's baseline on a config's first trial: its cycles, steps and own error."""

    cycles: int
    instructions: int
    rel_l2: tuple[float, ...]
    """Relative L2 error of each output against the float64 reference."""


class _BaselineCache:
    """Baseline runs by task files, config and trial: every attempt of a run reuses them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: OrderedDict[str, BaselineRun] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> BaselineRun | None:
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def put(self, key: str, run: BaselineRun) -> None:
        with self.lock:
            self.entries[key] = run
            while len(self.entries) > self.limit:
                self.entries.popitem(last=False)


_BASELINES = _BaselineCache(limit=2048)


def baseline_run(
    task: Task,
    config: Config,
    inputs: Mapping[str, np.ndarray],
    expected: list[np.ndarray],
    trial_seed: int,
    worker: _SimWorker | None = None,
) -> BaselineRun:
    """Simulate the task's baseline on one trial (cached).

    Raises:
        JudgeError: the baseline does not assemble, faults or times out (a broken task).
    """
    source = next(iter(task.baseline_files().values()))
    hasher = hashlib.sha256(source.encode())
    hasher.update(task.spec.model_dump_json().encode())
    for name in (task.spec.inputs.file, task.spec.reference.file):
        hasher.update(task.path(name).read_bytes())
    hasher.update(json.dumps([str(task.root), config.params, trial_seed]).encode())
    key = hasher.hexdigest()
    cached = _BASELINES.get(key)
    if cached is not None:
        return cached
    outcome = simulate_source(
        task, config, source, [inputs], step_limit=BASELINE_STEP_LIMIT, worker=worker
    )
    where = f"task '{task.task_id}' config {config.label()}: the baseline"
    if outcome.failure is not None:
        raise JudgeError(f"{where} failed to simulate ({outcome.failure}): {outcome.message}")
    if outcome.diagnostics:
        raise JudgeError(f"{where} does not assemble: {'; '.join(outcome.diagnostics[:3])}")
    run = outcome.runs[0]
    if run.fault is not None:
        raise JudgeError(f"{where} faults: {run.fault.describe()}")
    setup = config_setup(task, config)
    errors = []
    for region, ref in zip(setup.contract.with_role("output"), expected, strict=True):
        errors.append(_rel_l2(run.outputs[region.name], ref))
    result = BaselineRun(run.profile.cycles, run.profile.instructions, tuple(errors))
    _BASELINES.put(key, result)
    return result


def _rel_l2(candidate: np.ndarray, reference: np.ndarray) -> float:
    cand = np.asarray(candidate, dtype=np.float64)
    finite = np.isfinite(reference)
    ref = np.where(finite, reference, 0.0)
    cand = np.where(finite, cand, 0.0)
    # NumPy's own pairwise sum, not `np.linalg.norm` (BLAS): BLAS splits the sum by its thread
    # count, so the same judgment gave bounds a last bit apart under a Ray worker (one thread).
    denom = math.sqrt(float(np.sum(np.square(ref))))
    num = math.sqrt(float(np.sum(np.square(cand - ref))))
    if not math.isfinite(num):
        return math.inf
    return num / denom if denom > 0 else num


# -- checking one config ------------------------------------------------------------------------


@dataclass
class TrialCheck:
    """The comparison of one trial's outputs with the reference."""

    distribution: str
    ok: bool
    reason: str
    match_fraction: float
    max_abs_err: float
    max_rel_err: float
    rel_l2_err: float
    rel_l2_bound: float


def compare_outputs(
    task: Task,
    setup: ConfigSetup,
    run: SimRun,
    expected: list[np.ndarray],
    baseline_rel_l2: Sequence[float],
    distribution: str,
) -> TrialCheck:
    """Compare a run's outputs with the float64 reference, output region by output region."""
    import torch

    outputs = setup.contract.with_role("output")
    worst: TrialCheck | None = None
    for i, (region, ref) in enumerate(zip(outputs, expected, strict=True)):
        found = np.asarray(run.outputs[region.name], dtype=np.float64)
        if found.shape != ref.shape:
            raise JudgeError(
                f"task '{task.task_id}': the reference's output {i} has shape {ref.shape}, the "
                f"contract's region '{region.name}' {found.shape}"
            )
        tol = task.spec.tolerance.dtypes.get(region.dtype)
        if tol is None:
            raise JudgeError(
                f"task '{task.task_id}': no [tolerance.{region.dtype}] for output '{region.name}'"
            )
        base = baseline_rel_l2[i] if i < len(baseline_rel_l2) else 0.0
        bound = correctness.rel_l2_bound(task.spec.tolerance, region.dtype, base)
        verdict = correctness.compare(
            torch.from_numpy(found), torch.from_numpy(ref), tol, bound, f"output '{region.name}'"
        )
        reason = verdict.reason
        unwritten = run.unwritten.get(region.name, 0)
        if not verdict.ok and unwritten:
            reason += (
                f"; {unwritten} of {ref.size} elements of '{region.name}' were never written "
                "by a DMA store (they read as NaN)"
            )
        check = TrialCheck(
            distribution,
            verdict.ok,
            reason,
            verdict.match_fraction,
            verdict.max_abs_err,
            verdict.max_rel_err,
            verdict.rel_l2_err,
            verdict.rel_l2_bound,
        )
        if worst is None or (worst.ok and not check.ok):
            worst = check
        else:
            worst.match_fraction = min(worst.match_fraction, check.match_fraction)
            worst.max_abs_err = max(worst.max_abs_err, check.max_abs_err)
            worst.max_rel_err = max(worst.max_rel_err, check.max_rel_err)
            worst.rel_l2_err = max(worst.rel_l2_err, check.rel_l2_err)
    assert worst is not None, "a task has at least one output region"
    return worst


def describe_fault(fault: Fault) -> str:
    """A fault as one line for a verdict: kind, line, instruction, message."""
    return f"the program faulted: {fault.describe()}"


@dataclass
class ConfigCheck:
    """Everything known about one config after checking it."""

    result: ConfigResult
    failure: Literal["timeout", "crash"] | None = None
    """Set when the program faulted (crash), ran past the step limit or the clock (timeout)."""
    reason: str = ""
    runs: list[SimRun] = field(default_factory=list)
    expected: list[list[np.ndarray]] = field(default_factory=list)
    inputs: list[dict[str, np.ndarray]] = field(default_factory=list)
    baseline: BaselineRun | None = None
    sol_cycles: float | None = None


def check_config(
    task: Task,
    config: Config,
    source: str,
    seed: int,
    *,
    timed: bool,
    worker: _SimWorker | None = None,
) -> ConfigCheck:
    """Run every trial of one config and compare; the building block of evaluation and tools."""
    setup = config_setup(task, config)
    trials = trials_for(task, config, seed)
    inputs = [draw_inputs(task, config, s, dist) for dist, s in trials]
    expected = [reference_outputs(task, i) for i in inputs]
    baseline = baseline_run(task, config, inputs[0], expected[0], trials[0][1], worker)
    step_limit = max(STEP_FLOOR, STEP_FACTOR * baseline.instructions)
    outcome = simulate_source(task, config, source, inputs, step_limit=step_limit, worker=worker)
    check = ConfigCheck(
        ConfigResult(config=config), inputs=inputs, expected=expected, baseline=baseline
    )
    label = config.label()
    if outcome.failure is not None:
        check.failure = outcome.failure
        check.reason = f"config {label}: the simulation stopped ({outcome.failure}): "
        check.reason += outcome.message
        return check
    if outcome.diagnostics:
        # Assembled for the first visible config (the build gate), but not with these symbols.
        reason = "does not assemble with this config's symbols: " + "; ".join(
            outcome.diagnostics[:5]
        )
        check.result = ConfigResult(config=config, correct=False, reason=reason, match_fraction=0)
        return check
    check.runs = outcome.runs
    checks: list[TrialCheck] = []
    for number, (run, (dist, _)) in enumerate(zip(outcome.runs, trials, strict=False), start=1):
        where = f"trial {number} ({dist})"
        if run.fault is not None:
            kind: Literal["timeout", "crash"] = (
                "timeout" if run.fault.kind == "step_limit" else "crash"
            )
            message = f"{where}: {describe_fault(run.fault)}"
            if config.hidden:
                check.result = ConfigResult(
                    config=config, correct=False, reason=message, match_fraction=0.0, trials=number
                )
            else:
                check.failure = kind
                check.reason = f"config {label}: {message}"
            return check
        trial = compare_outputs(task, setup, run, expected[number - 1], baseline.rel_l2, dist)
        if not trial.ok:
            trial.reason = f"{where}: {trial.reason}"
        checks.append(trial)
    bad = next((c for c in checks if not c.ok), None)
    timing = None
    sol = roofline_cycles(task, config, setup.platform)
    check.sol_cycles = sol
    if bad is None and timed:
        cycles = max(run.profile.cycles for run in outcome.runs)
        timing = Timing(
            unit="cycles",
            baseline=float(baseline.cycles),
            candidate=float(cycles),
            speedup=baseline.cycles / cycles if cycles else math.inf,
            count=1,
            sol=sol,
            sol_fraction=sol / cycles if cycles else None,
        )
    check.result = ConfigResult(
        config=config,
        correct=bad is None,
        reason=bad.reason if bad is not None else "",
        max_abs_err=max(c.max_abs_err for c in checks),
        max_rel_err=max(c.max_rel_err for c in checks),
        rel_l2_err=max(c.rel_l2_err for c in checks),
        rel_l2_bound=min(c.rel_l2_bound for c in checks),
        match_fraction=min(c.match_fraction for c in checks),
        trials=len(checks),
        timing=timing,
    )
    return check


class _Evaluation:
    def __init__(self, request: EvalRequest, source: str) -> None:
        self.request = request
        self.task = request.task
        self.source = source

    def run(self) -> Evaluation:
        request = self.request
        platform = str(self.task.spec.platform)
        if request.device != f"sim:{platform}":
            raise JudgeError(
                f"task '{self.task.task_id}' runs on 'sim:{platform}', not on '{request.device}'"
            )
        evaluation = Evaluation(environment=_environment(request.device))
        started = time.monotonic()
        visible_failed = False
        with _worker(self.task.spec.memory_limit_mb) as worker:
            for config in request.configs:
                # Every visible config is checked, also after one is wrong, so that k/n counts
                # them all; hidden ones only when the visible ones are right. A failure of the
                # program itself (it does not assemble, hangs or crashes the simulator) stops.
                if evaluation.failure is not None or (visible_failed and config.hidden):
                    why = "not checked: an earlier config failed"
                    evaluation.results.append(ConfigResult(config=config, reason=why))
                    continue
                check = check_config(
                    self.task,
                    config,
                    self.source,
                    request.seed,
                    timed=request.timed,
                    worker=worker,
                )
                evaluation.results.append(check.result)
                if check.failure is not None:
                    evaluation.failure = check.failure
                    evaluation.reason = check.reason
                elif check.result.correct is False and not config.hidden:
                    visible_failed = True
        evaluation.phases_s["correctness"] = time.monotonic() - started
        return evaluation


def _environment(device: str) -> dict[str, str]:
    import ml_dtypes

    return {
        "device": device,
        "simulator": "gauntlet.accel",
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
    }


# -- text checks ---------------------------------------------------------------------------------


def _text_problem(name: str, text: str) -> str | None:
    if not name.endswith((".asm", ".s")):
        return f"'{name}': accel submissions are assembly files (.asm), nothing else"
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        return f"'{name}' has {len(lines)} lines, over the limit of {MAX_LINES}"
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE_CHARS:
            return (
                f"'{name}' line {number} has {len(line)} characters, over the limit of "
                f"{MAX_LINE_CHARS}"
            )
        bad = next((c for c in line if not (c.isprintable() or c == "\t")), None)
        if bad is not None:
            return (
                f"'{name}' line {number} holds the control character {bad!r}: only assembly "
                "text is accepted"
            )
    return None


def _shown(name: str, diagnostics: Sequence[str]) -> str:
    shown = [f"{name}: {d}" for d in diagnostics[:SHOWN_DIAGNOSTICS]]
    more = len(diagnostics) - SHOWN_DIAGNOSTICS
    if more > 0:
        shown.append(f"... and {more} more")
    return "\n".join(shown)


def _worker_main(argv: Sequence[str]) -> int:
    """`python -m gauntlet.judge.asm_backend COMMAND_FD RESULT_FD` (`workers.WorkerHandle`)."""
    if len(argv) != 3:
        print("usage: python -m gauntlet.judge.asm_backend COMMAND_FD RESULT_FD", file=sys.stderr)
        return 2
    request_fd, result_fd = int(argv[1]), int(argv[2])
    os.set_inheritable(request_fd, False)
    os.set_inheritable(result_fd, False)
    _serve(request_fd, result_fd)
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker_main(sys.argv))
