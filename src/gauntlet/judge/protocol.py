"""What crosses the channel between the judge and its Python workers: typed, bounded frames.

Requests and commands go down to a worker; events come back. Every event a worker sends is one
model of the `Event` union, told apart by its `event` tag and read back by `parse_event`, which
refuses anything else: an unknown tag, a missing or extra field, a string, list or number past
its bound. A candidate worker has run untrusted code, so whatever it sends is hostile input:
the orchestrator then also checks that each event is the one it expects next
(`python_backend.py`), so a forged, repeated or missing result is a verdict, never a pass.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

#: A name: a config, an input, an operation, a type.
Name = Annotated[str, Field(max_length=200)]
#: Free text from a worker (a traceback), already cut by the worker.
Text = Annotated[str, Field(max_length=20_000)]
#: An index into something the judge asked for (a trial, a timed call).
Index = Annotated[int, Field(ge=0, le=1_000_000)]
#: A dimension of a tensor.
Dim = Annotated[int, Field(ge=0, le=1 << 40)]
#: Seconds, microseconds or errors: any float (infinity and NaN are meaningful for errors).
Number = float
#: Exit status of a candidate's worker that stopped the submission reaching around the judge
#: (`worker._install_audit_hook`).
BREACH_EXIT = 97
#: A tensor's shape.
Shape = Annotated[list[Dim], Field(max_length=16)]
#: Limits on list lengths.
MAX_ITEMS = 64
MAX_SAMPLES = 64

#: The resource limit that caps a worker's host memory (`worker.memory_cap`): its address space
#: (`RLIMIT_AS`, every mapping) or its data segment (`RLIMIT_DATA`, the heap and private writable
#: mappings only).
MemoryCap = Literal["address_space", "data_segment"]
#: The cap of a candidate on each device. On a GPU the address space cannot be used (CUDA
#: reserves virtual ranges of many GiB as it starts); what the data segment does not count
#: (shared mappings, pinned memory) is counted by a memory cgroup where the machine lets the
#: judge make one (`memcg.py`), given to every candidate whose cap is its data segment.
MEMORY_CAPS: dict[str, MemoryCap] = {
    "cpu": "address_space",
    "cuda": "data_segment",
    "rocm": "data_segment",
}


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- Requests and commands: orchestrator -> worker -----------------------------------------


class EntrySpec(_Frame):
    """A function in a file: the reference, the input generator, the baseline, the submission."""

    file: str
    entry: str


class SubmissionSpec(EntrySpec):
    """The submission's entry point and the folder it was built into."""

    dir: str


class TrialSpec(_Frame):
    """Where one trial's inputs come from."""

    distribution: str
    seed: int


class SampleSpec(TrialSpec):
    """A timed call whose output the judge checks: its base inputs and its per-call seed."""

    call_seed: int
    position: int
    elements: int | None = None
    """The seed of the elements checked (`sampling.gather`); None: the whole outputs."""


class ConfigSpec(_Frame):
    """One config to run: its parameters, its trials and (reference only) sampled calls."""

    name: str
    params: dict[str, Any]
    trials: list[TrialSpec]
    samples: list[SampleSpec] = Field(default_factory=list)


class PlanSpec(_Frame):
    """How to time a config (`timing.TimingPlan` without anything secret)."""

    call_seeds: list[int]
    min_pairs: int
    max_pairs: int
    target_ci: float
    time_cap_s: float
    warmup: int
    flush_factor: int
    allow_streams: bool
    allow_libraries: bool


class TimingSpec(_Frame):
    """A timed config: its base inputs and its plan."""

    inputs: TrialSpec
    plan: PlanSpec


class WorkerRequest(_Frame):
    """The first frame a worker reads: everything its role needs, nothing more."""

    role: Literal["reference", "candidate"]
    device: Literal["cpu", "cuda", "rocm"]
    language: str
    task_root: str
    reference: EntrySpec
    inputs: EntrySpec
    baseline: EntrySpec | None
    wrt: list[str]
    allowed_ops: list[str]
    watch_dispatch: bool
    compile_reference: list[str]
    check_determinism: bool
    memory_limit_bytes: int
    """Host memory the worker may add past its trusted imports (0: no cap): the task's
    `memory_limit_mb`, for a candidate on any device (`worker.memory_cap`), for the reference on
    the CPU only."""
    memory_cap: MemoryCap = "address_space"
    """What `memory_limit_bytes` limits (`MEMORY_CAPS`: the judge picks it by device)."""
    prebuilt: str | None = None
    """The folder of the CUDA build's run manifest: both roles load prebuilt units from it (the
    reference worker only the task's own, since it never imports the submission)."""
    submission: SubmissionSpec | None
    adapter: EntrySpec | None = None
    """The task's adapter of the submission's entry (`[submission] adapter`), for the candidate."""
    reference_mode: Literal["float64", "native"] = "float64"
    """How the reference worker computes the expected values (`[reference] mode`)."""
    outputs: list[str] = Field(default_factory=list)
    """Inputs the submission may write (`[submission] outputs`): the candidate's in-place check
    leaves them out; the reference worker checks that they are inputs."""
    check: EntrySpec | None = None
    """The task's checker (`[check]`), for the reference worker only: after its references it
    judges the candidate outputs the orchestrator sends it (`CheckOutput`)."""
    reference_budget_bytes: Annotated[int, Field(ge=0)] = 0
    """For the reference worker: the bytes of references the judge may hold at once (0: no
    bound). A config whose references would pass it, with those sent before, is streamed
    (`ReferenceStreamed`): each of its results is computed when the judge asks
    (`ReferenceOrder`)."""
    share_device: bool = False
    """For the reference worker on a GPU: a streamed config's results stay on the GPU, in
    memory shared with the judge (`channel.write_frame`'s `share_device`, `cuda_share`),
    instead of crossing the host twice."""
    configs: list[ConfigSpec]
    timing: dict[str, TimingSpec]


class Command(_Frame):
    """A later command: start the role, time these configs, stop, or go on after a timed call.

    To a reference worker, `stop` ends its part in the judgment (after its results, or instead
    of `start`): it resets itself and answers `Idle`, ready for the next judgment's request.
    """

    command: Literal["start", "time", "stop", "next"]
    configs: list[str] = Field(default_factory=list)
    """For `time`: the configs to time, in order."""
    keep: bool = False
    """For `next`: send the output of the call just made (a sampled call)."""
    elements: int | None = None
    """For `next` with `keep`: the seed of the elements to send (`sampling.gather`), told only
    now that the call is made; None: the whole outputs."""


class CheckOutput(_Frame):
    """A candidate's output for the task's checker, to the reference worker (tensors follow).

    Sent by the orchestrator, which has already checked that every item is a plain tensor on
    the judged device; the reference worker rebuilds the trial's (or the sampled timed call's)
    inputs from their seeds, so the checker never sees anything of the candidate's but these
    bytes.
    """

    command: Literal["check"]
    config: Name
    trial: Index | None = None
    """The checked trial; None for a sampled timed call (`position`)."""
    position: Index | None = None
    """The sampled timed call, for its perturbed inputs."""
    container: Name | None
    """`tuple` or `list` when the output is a container of the tensors, None for one tensor."""


class ReferenceOrder(_Frame):
    """The judge asks the reference worker for one result of a streamed config.

    Sent where the judge compares the candidate's output with it: the reference of a trial (its
    index), or of a sampled timed call (its position), answered with one `ReferenceTrial` or
    `ReferenceSample` that the judge drops once compared.
    """

    command: Literal["reference"]
    config: Name
    trial: Index | None = None
    position: Index | None = None


# --- Events: worker -> orchestrator ----------------------------------------------------------


class TensorInfo(_Frame):
    """What a returned value is, as the worker saw it (a first filter; the bytes are checked)."""

    exact: bool
    """Whether its type is exactly `torch.Tensor` (no subclass, no wrapper)."""
    type: Name
    dtype: Name | None = None
    shape: Shape | None = None
    device: Name | None = None
    layout: Name | None = None


class OutputInfo(_Frame):
    """A call's return value: a container of values, or one value."""

    container: Name | None
    items: Annotated[list[TensorInfo], Field(max_length=MAX_ITEMS)]


class Ready(_Frame):
    """Trusted imports done; the worker waits for `start` (the GPU is untouched so far)."""

    event: Literal["ready"]
    memory_cap_bytes: int = Field(default=0, ge=0)
    """The worker's memory cap as set (`worker.memory_cap`; 0: none), which sizes a candidate's
    memory cgroup."""
    phases: Annotated[dict[Name, Number], Field(max_length=MAX_ITEMS)] = Field(default_factory=dict)
    """Seconds of its steps from its request to this report (the judge's `imports.<role>.*`)."""


class Imported(_Frame):
    """A spare's trusted imports are done and its priority is back; it reads its request next.

    Sent only by a worker started ahead of its judgment (`spares.py`): its first frame, which
    the judge's pool looks for to know the spare is ready, and the judgment then reads past.
    """

    event: Literal["imported"]
    lowered_autogroup: bool
    """Its session's autogroup was at nice 19 while it imported (`priority.py`)."""
    lowered_idle: bool
    """Its working thread imported under `SCHED_IDLE`."""
    import_s: Annotated[float, Field(ge=0)]
    """Seconds its imports took (lowered, beside whatever else the machine ran)."""


class Loaded(_Frame):
    """The submission imported."""

    event: Literal["loaded"]


class ConfigStart(_Frame):
    """The candidate begins a config."""

    event: Literal["config_start"]
    config: Name


#: A kernel's name as the profiler gives it (demangled C++ names with templates run long).
KernelName = Annotated[str, Field(max_length=2000)]


class KernelTally(_Frame):
    """One kernel name a call launched: how often and for how long in all."""

    name: KernelName
    launches: Annotated[int, Field(ge=1)]
    total_ns: Annotated[int, Field(ge=0)]


class CallKernels(_Frame):
    """The GPU kernels one judged call launched (CUPTI records, by name, longest first)."""

    call: Literal["forward", "backward", "repeat"]
    kernels: Annotated[list[KernelTally], Field(max_length=MAX_ITEMS)]
    more: Annotated[int, Field(ge=0)] = 0
    """Kernel names left out past `MAX_ITEMS` (the shortest)."""


class CandidateTrial(_Frame):
    """The candidate's outputs (and gradients) on one trial; the tensors follow the header."""

    event: Literal["trial"]
    config: Name
    trial: Index
    output: OutputInfo
    mutated: Annotated[list[Name], Field(max_length=MAX_ITEMS)]
    grads: Annotated[list[bool], Field(max_length=MAX_ITEMS)] | None = None
    """For backward tasks: which inputs got a gradient (those follow the outputs)."""
    repeat_max_diff: Number | None = None
    own_kernels: Annotated[int, Field(ge=0)] | None = None
    """Launches of the submission's own Triton kernels during the trial (None: not counted)."""
    kernels: Annotated[list[CallKernels], Field(max_length=3)] | None = None
    """On a GPU: the kernels of each call of the trial (forward, backward, repeat), which the
    judge attributes to the submission's own code; None where none are recorded (the CPU)."""
    most_ops: Annotated[int, Field(ge=0)] | None = None
    """The most ATen operations one of the trial's calls (forward, backward, repeat) ran, as
    the watch counted them (None: not watched)."""
    repeated: bool = False
    """Whether the call was repeated on the same input (then `repeat_max_diff` is its result;
    None there means the repeat returned another type)."""


class ConfigDone(_Frame):
    """The candidate finished a config's trials."""

    event: Literal["config_done"]
    config: Name


class Checked(_Frame):
    """Every config's trials ran; the candidate waits for `time` or `stop`."""

    event: Literal["checked"]


class TimingStart(_Frame):
    """The candidate begins timing a config."""

    event: Literal["timing_start"]
    config: Name


class CallMade(_Frame):
    """One timed call ended (device synchronised); the worker waits for `next`.

    The judge's own clock between its `next` and this event brackets the call from outside the
    candidate's process: the events' times must agree with it.
    """

    event: Literal["call_made"]
    role: Literal["baseline", "candidate"]
    position: Index


class SampledOutput(_Frame):
    """The outputs of the candidate call the judge chose to check (tensors follow)."""

    event: Literal["sampled_output"]
    position: Index
    count: Annotated[int, Field(ge=0, le=MAX_ITEMS)]
    shapes: Annotated[list[Shape], Field(max_length=MAX_ITEMS)]
    """The outputs' shapes as the call returned them (the tensors may be their gathered
    elements)."""


class TimingSummary(_Frame):
    """The worker's measurement of one config (believed only where the judge's clock agrees)."""

    baseline: Number
    candidate: Number
    baseline_iqr: Number
    candidate_iqr: Number
    speedup: Number
    speedup_ci: tuple[Number, Number]
    count: Index
    baseline_us: Annotated[list[Number], Field(max_length=1_000_000)]
    candidate_us: Annotated[list[Number], Field(max_length=1_000_000)]
    host_us: Number
    event_us: Number
    launch_overhead_us: Number
    problem: Text
    kernels: Annotated[list[Annotated[str, Field(max_length=2000)]], Field(max_length=MAX_ITEMS)]
    compiled: Number | None
    spin_us: Number
    compiled_note: Text
    phases: Annotated[dict[Name, Number], Field(max_length=MAX_ITEMS)]


class Timed(_Frame):
    """A config's timing."""

    event: Literal["timed"]
    config: Name
    summary: TimingSummary
    clocks: Annotated[dict[Name, dict[Name, Number]], Field(max_length=2)]


class BuildFailed(_Frame):
    """Importing the submission raised."""

    event: Literal["build_error"]
    traceback: Text


class CallFailed(_Frame):
    """The submission raised on a trial (or while timed)."""

    event: Literal["call_error"]
    config: Name
    trial: Index | Literal["timing"]
    traceback: Text


class ForbiddenOps(_Frame):
    """PyTorch operations doing the task's work ran inside the submission's call."""

    event: Literal["forbidden_ops"]
    config: Name
    ops: Annotated[list[Name], Field(max_length=MAX_ITEMS)]


class Tampered(_Frame):
    """Functions the worker relies on were replaced."""

    event: Literal["tampered"]
    what: Annotated[list[Name], Field(max_length=MAX_ITEMS)]


class WorkerFailed(_Frame):
    """The worker itself failed (its one catch-all)."""

    event: Literal["worker_error"]
    traceback: Text


class Done(_Frame):
    """The role finished; its split of its own time (diagnostics only)."""

    event: Literal["done"]
    phases: Annotated[dict[Name, Number], Field(max_length=MAX_ITEMS)] = Field(default_factory=dict)


class Idle(_Frame):
    """A reference worker done with a judgment: reset, waiting for the next request.

    What it still holds after the reset, so that the judge can let go of one that grows.
    """

    event: Literal["idle"]
    host_bytes: Annotated[int, Field(ge=0)]
    """Its resident memory on the host."""
    device_bytes: Annotated[int, Field(ge=0)]
    """GPU memory its allocator still reserves (0 where CUDA was never used)."""
    reset_s: Number = 0.0
    """Seconds the reset took (in the background of the judgment, `python_backend._reset`)."""


class _ReferenceResult(_Frame):
    """What the reference worker says of any result's making (tensors follow)."""

    compute_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """Seconds the worker took to compute it, before sending (`reference.streamed.compute`)."""
    began_at: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """For a streamed result: when the worker took up the judge's order (`time.monotonic`,
    one clock for every process of the host), so the judge tells its wait for a busy worker
    (`reference.streamed.queue`) from the computing and the sending."""


class ReferenceSample(_ReferenceResult):
    """The float64 reference of a sampled timed call (tensors follow)."""

    event: Literal["sample"]
    config: Name
    position: Index
    baseline_rel_l2: Annotated[list[Number], Field(max_length=MAX_ITEMS)]
    """The baseline's error on the elements sent (all of them, or those `elements` chose)."""
    shapes: Annotated[list[Shape], Field(max_length=MAX_ITEMS)]
    """The reference outputs' shapes (the tensors may be their gathered elements)."""


class ReferenceTrial(_ReferenceResult):
    """The reference of one trial: expected types, float64 outputs and gradients (tensors)."""

    event: Literal["reference_trial"]
    config: Name
    trial: Index
    expected: OutputInfo
    baseline_rel_l2: Annotated[list[Number], Field(max_length=MAX_ITEMS)]
    baseline_grad_rel_l2: Annotated[list[Number], Field(max_length=MAX_ITEMS)]
    baseline_max_abs: Annotated[list[Number], Field(max_length=MAX_ITEMS)]
    baseline_grad_max_abs: Annotated[list[Number], Field(max_length=MAX_ITEMS)]


class ReferenceStreamed(_Frame):
    """A config's references are past the judge's budget: sent one at a time when asked.

    Sent instead of the config's trials and samples, with the sizes of its first trial (whose
    reference was computed to learn them, then dropped).
    """

    event: Literal["reference_streamed"]
    config: Name
    trial_bytes: Annotated[int, Field(ge=0)]
    """The tensors of one trial's reference as sent: outputs and gradients."""
    output_bytes: Annotated[int, Field(ge=0)]
    """Those of its outputs alone (a sampled timed call's reference)."""
    expected: OutputInfo
    """The first trial's expected outputs (their container, types and shapes)."""


class CheckResult(_Frame):
    """The task's checker's verdict on one candidate output (`CheckOutput`)."""

    event: Literal["check_result"]
    config: Name
    trial: Index | None = None
    position: Index | None = None
    ok: bool
    message: Text


# --- The simulator worker (accelerator assembly): trusted code, data in and out -------------


class SimJob(_Frame):
    """Assemble a program and, where input sets follow, run it on each (arrays follow)."""

    platform: Name
    overrides: dict[Name, int | float]
    source: str
    symbols: dict[Name, int | float]
    contract: dict[str, Any]
    inputs: list[list[Name]] = Field(default_factory=list)
    """The names of each input set's arrays, in the order the arrays follow the header."""
    step_limit: Annotated[int, Field(ge=0)]


class SimRunHeader(_Frame):
    """One run of a program: its outputs' names (arrays follow), profile, fault, unwritten."""

    outputs: list[Name]
    profile: dict[str, Any]
    fault: dict[str, Any] | None
    unwritten: dict[Name, int]


class SimReply(_Frame):
    """What the simulator worker made of a job."""

    status: Literal["ok", "asm_error", "crash"]
    diagnostics: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    instructions: Annotated[int, Field(ge=0)] = 0
    runs: list[SimRunHeader] = Field(default_factory=list)
    message: Text = ""


Event = Annotated[
    Ready
    | Imported
    | Loaded
    | ConfigStart
    | CandidateTrial
    | ConfigDone
    | Checked
    | TimingStart
    | CallMade
    | SampledOutput
    | Timed
    | BuildFailed
    | CallFailed
    | ForbiddenOps
    | Tampered
    | WorkerFailed
    | Done
    | Idle
    | ReferenceSample
    | ReferenceTrial
    | ReferenceStreamed
    | CheckResult,
    Field(discriminator="event"),
]

_EVENTS: TypeAdapter[Event] = TypeAdapter(Event)
_COMMANDS: TypeAdapter[WorkerRequest | Command] = TypeAdapter(WorkerRequest | Command)


class BadFrame(Exception):
    """A frame that is not one of the protocol's events (or commands)."""


def parse_event(header: dict[str, Any]) -> Event:
    """The event a frame's header holds; BadFrame with a short reason for anything else."""
    try:
        return _EVENTS.validate_python(header)
    except ValidationError as err:
        tag = header.get("event") if isinstance(header, dict) else None
        details = err.errors()
        where = ".".join(str(p) for p in details[0]["loc"]) if details else ""
        why = details[0]["msg"] if details else "invalid"
        raise BadFrame(f"a malformed {str(tag)[:40]!r} frame ({where}: {why})") from None


def parse_request(header: dict[str, Any]) -> WorkerRequest:
    """The worker's request (the worker reads only frames its trusted parent wrote)."""
    return WorkerRequest.model_validate(header)


def parse_command(header: dict[str, Any]) -> Command:
    """A command after the request."""
    return Command.model_validate(header)


def parse_order(header: dict[str, Any]) -> CheckOutput | ReferenceOrder | Command:
    """What a reference worker reads after its results: a check, a reference, or `stop`.

    An output to check (`CheckOutput`), a streamed config's result to compute
    (`ReferenceOrder`), or the end of its part in the judgment.
    """
    if header.get("command") == "check":
        return CheckOutput.model_validate(header)
    if header.get("command") == "reference":
        return ReferenceOrder.model_validate(header)
    return Command.model_validate(header)


def frame(model: BaseModel) -> dict[str, Any]:
    """The header of a frame holding `model`."""
    return model.model_dump(mode="json")
