"""The degeneracy gate: is a task passed by an answer that does no work? Decided by measurement.

For one config and one input distribution, the float64 reference runs on inputs from two seeds.
The task is degenerate there when, at the task's own tolerance and relative-L2 bound:

- `zeros`: an all-zeros output passes;
- `identity`: an input of the output's shape, returned as the output, passes;
- `constant`: a constant (the mean of the other seed's output) passes, as for scalar losses and
  reductions that concentrate;
- `insensitive`: redrawing every input moves the output by less than `REDRAW_FACTOR` times the
  relative-L2 bound (a cache of any earlier answer would pass);
- `no_effect`: redrawing one input alone leaves the output within the tolerance (a kernel may
  skip it; a weight cancelled downstream, such as a bias before a batch norm, is one);
- `nonfinite`: the reference gives NaN or Inf on finite inputs (a distribution outside the
  operation's domain, such as normal inputs to a logarithm).

Used by `gauntlet tasks check` on every task, and by the importers to rewrite or refuse a
problem. It runs whatever `draw` and `reference` it is given; the importers call it in a
subprocess, never in the process that judges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from gauntlet.task import Config, Task, Tolerance

#: Redrawing every input must move the output by more than this many times the L2 bound.
REDRAW_FACTOR = 5.0

Kind = Literal["zeros", "identity", "constant", "insensitive", "no_effect", "nonfinite"]

#: Kinds that make a task degenerate whatever else holds; `no_effect` names one input.
TRIVIAL: tuple[Kind, ...] = ("zeros", "identity", "constant", "insensitive")

Draw = Callable[[Config, int, str], dict[str, Any]]
"""Inputs of a config for a seed and distribution: arrays (float64 for floats) and scalars."""
Reference = Callable[[dict[str, Any]], list[np.ndarray]]
"""The float64 reference's outputs for those inputs."""


class Finding(BaseModel):
    """One way a task is degenerate on one config and distribution."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    config: str
    """The config's name."""
    distribution: str
    detail: str
    """What was measured, for the report (`output 0: zeros pass`)."""
    input_name: str | None = None
    """For `no_effect`: the input that has none."""

    def line(self) -> str:
        """One line for tables and reports."""
        return f"{self.config}/{self.distribution}: {self.detail}"


def measure(
    draw: Draw,
    reference: Reference,
    config: Config,
    distribution: str,
    seed: int,
    tol: Tolerance,
    l2_bound: float,
    redraw_bound: float | None = None,
    buffers: Collection[str] = (),
) -> list[Finding]:
    """Every finding of the gate on one config and distribution (empty: not degenerate).

    `redraw_bound` replaces `l2_bound` in the `insensitive` test (for a comparison with no L2
    bound, such as KernelBench's allclose). `buffers`: inputs that are destination buffers
    (`[submission] outputs`), written and never read, so neither an answer nor an input to
    redraw (an uninitialised buffer may even hold the reference's last output).
    """
    moves = l2_bound if redraw_bound is None else redraw_bound
    inputs = draw(config, seed, distribution)
    other = draw(config, seed + 1, distribution)
    outputs = reference(inputs)
    others = reference(other)
    findings: list[Finding] = []

    def found(kind: Kind, detail: str, name: str | None = None) -> None:
        findings.append(Finding(kind=kind, config=config.name, distribution=distribution,
                                detail=detail, input_name=name))  # fmt: skip

    arrays = {k: v for k, v in inputs.items() if _is_array(v) and k not in buffers}
    finite_inputs = all(np.isfinite(v).all() for v in arrays.values() if v.dtype.kind == "f")
    for i, (out, again) in enumerate(zip(outputs, others, strict=True)):
        if finite_inputs and not np.isfinite(out).all():
            found("nonfinite", f"output {i} holds NaN or Inf on finite inputs")
            continue
        fakes = {"zeros": np.zeros_like(out)}
        same_shape = [k for k, v in arrays.items() if v.shape == out.shape]
        fakes.update({f"input '{k}'": arrays[k] for k in same_shape})
        if again.shape == out.shape and again.size:
            fakes["constant"] = np.full_like(out, float(np.mean(again)))
        for label, fake in fakes.items():
            if passes(fake, out, tol, l2_bound):
                kind: Kind = "zeros" if label == "zeros" else "constant"
                kind = "identity" if label.startswith("input") else kind
                found(kind, f"output {i}: {label} as the output passes")
        if again.shape == out.shape and _rel_l2(again, out) < REDRAW_FACTOR * moves:
            found(
                "insensitive",
                f"output {i}: redrawing every input moves it by {_rel_l2(again, out):.3g} "
                f"(relative L2), under {REDRAW_FACTOR:g}x the bound {moves:.3g}",
            )
    for name in arrays:
        changed = {**inputs, name: other[name]}
        moved = reference(changed)
        if all(passes(m, o, tol, l2_bound) for m, o in zip(moved, outputs, strict=True)):
            found("no_effect", f"input '{name}' has no effect within the tolerance", name)
    return findings


def passes(candidate: np.ndarray, expected: np.ndarray, tol: Tolerance, l2_bound: float) -> bool:
    """Whether the judge's element-wise and relative-L2 comparison accepts `candidate`."""
    import torch

    from gauntlet.judge import correctness

    if candidate.shape != expected.shape:
        return False
    cand = torch.from_numpy(np.ascontiguousarray(candidate, dtype=np.float64))
    ref = torch.from_numpy(np.ascontiguousarray(expected, dtype=np.float64))
    return correctness.compare(cand, ref, tol, l2_bound, "output").ok


def _rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    diff = float(np.linalg.norm((a - b).ravel()))
    norm = float(np.linalg.norm(b.ravel()))
    if not math.isfinite(diff):
        return math.inf
    return diff / norm if norm > 0 else diff


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and value.size > 0


#: Configs whose inputs hold more elements than this are left out of the gate (its float64
#: reference runs on the host, several times per distribution), unless none is smaller.
GATE_MAX_ELEMENTS = 1 << 22


def gate(task: Task, draw: Draw, reference: Reference, seed: Callable[[Config], int]) -> GateResult:
    """The gate on a task's visible configs, under every distribution of `[inputs]`."""
    from gauntlet.judge import correctness

    sized = []
    for config in task.visible_configs:
        inputs = draw(config, seed(config), task.spec.inputs.distributions[0])
        sized.append((sum(v.size for v in inputs.values() if _is_array(v)), config))
    sized.sort(key=lambda pair: pair[0])
    chosen = [c for n, c in sized if n <= GATE_MAX_ELEMENTS] or [sized[0][1]]
    findings: list[Finding] = []
    for config in chosen:
        tol = correctness.tolerance_for(task.spec.tolerance, config.dtype)
        bound = correctness.rel_l2_bound(task.spec.tolerance, config.dtype, 0.0)
        for dist in task.spec.inputs.distributions:
            findings += measure(
                draw, reference, config, dist, seed(config), tol, bound,
                buffers=task.spec.submission.outputs,
            )  # fmt: skip
    return GateResult(configs=[c.name for c in chosen], findings=findings)


class GateResult(BaseModel):
    """The gate on one task: the configs it measured and what it found."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    configs: list[str]
    """The visible configs measured (those small enough, `GATE_MAX_ELEMENTS`)."""
    findings: list[Finding]

    @property
    def degenerate(self) -> bool:
        """Whether any finding holds."""
        return bool(self.findings)

    def summary(self) -> str:
        """The findings in a few lines' worth of text."""
        shown = "; ".join(f.line() for f in self.findings[:6])
        more = len(self.findings) - 6
        return shown + (f" (and {more} more)" if more > 0 else "")
