"""The judge's typed record of one submission: gates, per-config results, timing, status."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gauntlet.task import Config

VERDICT_SCHEMA_VERSION = 1

Status = Literal[
    "pass", "overfit", "incorrect", "rejected", "build_error", "timeout", "crash", "no_submission"
]
GateName = Literal[
    "contract", "guards", "build", "correctness_visible", "correctness_hidden", "timing", "roofline"
]
GateState = Literal["passed", "failed", "skipped"]
Mode = Literal["final", "feedback"]

#: Gates in the order the pipeline runs them.
GATES: tuple[GateName, ...] = GateName.__args__  # type: ignore[attr-defined]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Gate(_Record):
    """The outcome of one gate."""

    name: GateName
    state: GateState
    reason: str = ""
    """Why it failed or was skipped; empty when it passed."""
    duration_s: float = 0.0


class Timing(_Record):
    """Baseline and candidate times of one config, measured interleaved."""

    unit: Literal["us", "cycles"]
    """Microseconds on a GPU; simulated cycles on an accelerator simulator."""
    baseline: float
    """Median time of the baseline."""
    candidate: float
    """Median time of the candidate."""
    baseline_iqr: float = 0.0
    candidate_iqr: float = 0.0
    speedup: float
    """Median of the per-pair ratios baseline / candidate."""
    speedup_ci: tuple[float, float] | None = None
    """95% confidence interval of the median speedup."""
    count: int = 1
    """Timed pairs (1 for a deterministic simulator)."""
    compiled_baseline: float | None = None
    """Time of `torch.compile` of the reference, for `torch2*` tracks."""
    sol: float | None = None
    """Speed-of-light time of this config on this device (same unit)."""
    sol_fraction: float | None = None
    """sol / candidate: 1.0 is the roofline."""
    kernels: list[str] = Field(default_factory=list)
    """GPU kernels the profiler pass saw in one candidate call (first 20)."""
    host_us: float | None = None
    """Host-clock time of a device-synchronised candidate call (the cross-check)."""
    event_us: float | None = None
    """Event time of the same calls."""
    spin_us: float | None = None
    """GPU busy-wait queued before each start event (sized from the host's launch time)."""


class ConfigResult(_Record):
    """Correctness and timing of the submission on one config."""

    config: Config
    correct: bool | None = None
    """None where the config was not checked (an earlier gate stopped)."""
    reason: str = ""
    """Why it is wrong: which trial, element, expected and found values."""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    rel_l2_err: float | None = None
    rel_l2_bound: float | None = None
    """The bound the relative L2 error was held to (baseline error x margin, floored)."""
    match_fraction: float | None = None
    """Share of output elements within tolerance (worst trial)."""
    trials: int = 0
    timing: Timing | None = None


#: A verdict's top-level phases (`Verdict.phases_s`), in the order a GPU judgment passes them:
#: `device_wait` is the wait for the GPU's lock in shared mode and `device_wait_exclusive` for
#: the GPU alone before timing (`devicelock.py`); `reference`, `startup`, `correctness` and
#: `timing` are spent holding it; `exit` is the candidate's end, `teardown` the judge's.
PHASES = (
    "build",
    "spawn",
    "imports",
    "device_wait",
    "reference",
    "startup",
    "correctness",
    "device_wait_exclusive",
    "timing",
    "exit",
    "teardown",
)


class Verdict(_Record):
    """The judge's verdict on one submission."""

    kind: Literal["verdict"] = "verdict"
    schema_version: int = VERDICT_SCHEMA_VERSION
    task_id: str
    device: str
    mode: Mode = "final"
    status: Status
    reason: str = ""
    """The first failure, precise and actionable; empty on pass."""
    gates: list[Gate] = Field(default_factory=list)
    configs: list[ConfigResult] = Field(default_factory=list)
    timed: bool = False
    timing_note: str = ""
    """Why the verdict carries no times (e.g. the `cpu` device is not timed)."""
    speedup: float | None = None
    """Geometric mean of the visible configs' speedups."""
    hidden_speedup: float | None = None
    """Geometric mean of the hidden configs' speedups."""
    sol_fraction: float | None = None
    """Mean fraction of speed-of-light over the visible configs."""
    stdout: str = ""
    """The submission's output, cut at a byte limit with a marker."""
    stderr: str = ""
    duration_s: float = 0.0
    phases_s: dict[str, float] = Field(default_factory=dict)
    """Seconds per phase of the evaluation (`PHASES`, and their parts as `phase.part`)."""
    submission_digest: str = ""
    """sha256 over the submission files judged."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Device, driver and library versions the verdict was taken with."""

    @property
    def passed(self) -> bool:
        """Whether the status is `pass`."""
        return self.status == "pass"

    def visible(self) -> list[ConfigResult]:
        """Results of the visible configs."""
        return [c for c in self.configs if not c.config.hidden]

    def hidden(self) -> list[ConfigResult]:
        """Results of the hidden configs."""
        return [c for c in self.configs if c.config.hidden]

    @property
    def visible_correct(self) -> bool | None:
        """All visible configs correct (None if none were checked)."""
        return _all_correct(self.visible())

    @property
    def hidden_correct(self) -> bool | None:
        """All hidden configs correct (None if none were checked)."""
        return _all_correct(self.hidden())

    def gate(self, name: GateName) -> Gate | None:
        """The record of one gate, if it ran."""
        return next((g for g in self.gates if g.name == name), None)


def _all_correct(results: list[ConfigResult]) -> bool | None:
    checked = [r.correct for r in results if r.correct is not None]
    if not checked:
        return None
    return all(checked)
