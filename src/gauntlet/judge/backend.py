"""The seam between the judge's pipeline and each submission language.

The pipeline (`pipeline.py`) runs the gates in order and turns their outcomes into a `Verdict`;
a `Backend` does the language-specific work of each gate: Python (Triton, PyTorch, CUDA through
PyTorch) in `python_backend.py`, accelerator assembly in `asm_backend.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.judge.verdict import ConfigResult, Mode
from gauntlet.task import Config, Task

Failure = Literal["build_error", "timeout", "crash", "rejected"]


@dataclass(frozen=True)
class Submission:
    """The submission's files, read once from where the agent left them."""

    files: dict[str, str]
    """File name (as in the contract) -> text."""
    source_dir: Path
    """Where they were read from (for messages only: the judge works from `files`)."""


@dataclass(frozen=True)
class BuildResult:
    """The outcome of the build gate."""

    ok: bool
    reason: str = ""
    """The compiler's diagnostics, cut to what the agent needs, when not ok."""
    log: str = ""
    """The build's full output (compiler output included), cut at a byte limit with a marker."""
    artifact: Path | None = None
    """A folder holding what evaluation needs (the submission's files, compiled objects)."""
    failure: Failure = "build_error"
    """The verdict's status when not ok: `timeout` or `crash` when the build process hung or
    died, `rejected` when a gate before the build stopped it (`pipeline.prebuild`)."""


@dataclass
class Evaluation:
    """What a backend's evaluation of some configs produced."""

    results: list[ConfigResult] = field(default_factory=list)
    """One per config, in the order given; `correct=None` for configs never reached."""
    failure: Failure | None = None
    """Set when the submission's process died, hung or was caught cheating mid-evaluation."""
    reason: str = ""
    """Why, when `failure` is set."""
    stdout: str = ""
    stderr: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)
    """Seconds spent per phase in the worker: startup (import), correctness, timing."""


@dataclass(frozen=True)
class EvalRequest:
    """What to evaluate: which configs, on what device, with which seed, timed or not."""

    task: Task
    build: BuildResult
    configs: list[Config]
    device: str
    seed: int
    """Derived from the run's secret seed; trials draw their inputs from it."""
    mode: Mode
    timed: bool
    workdir: Path
    submission_digest: str
    """`pipeline.digest` of the submission's files (what its kept compiled kernels are keyed by)."""
    time_cap_s: float = DEFAULT_TIME_CAP_S
    """Timing per config stops here even when the speedup's CI is still wider than 1%."""
    compile_reference: bool = True
    """Also time `torch.compile` of the reference (torch2* tracks; visible configs)."""
    is_baseline: bool = False
    """The submission is exactly the task's own baseline (`Task.baseline_files`): trusted code,
    so checks against doing the work in PyTorch do not apply to it."""


class Backend(Protocol):
    """The language-specific half of the judge."""

    def guard(self, task: Task, submission: Submission) -> str | None:
        """Static exploit checks on the source; the reason for rejection, or None."""
        ...

    def build(self, task: Task, submission: Submission, workdir: Path, device: str) -> BuildResult:
        """Build the submission (compile, assemble) in a separate process where that runs code."""
        ...

    def evaluate(self, request: EvalRequest) -> Evaluation:
        """Check correctness (and, if `timed`, time) the configs; never raises for bad code."""
        ...
