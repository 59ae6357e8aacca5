"""The checks a task must pass to be accepted into a suite (DESIGN.md, "Task format").

- the baseline passes every config (it agrees with the float64 reference);
- the reference's output is not constant, not near zero, and changes with every input;
- a zero output and an identity output (an input returned as the output) both fail;
- the expert solution, where shipped, passes every config and beats the baseline where timed.

The judge-based checks run the real judge on the task's own files; the others run the task's
trusted reference in this process.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from gauntlet import devices
from gauntlet.judge import correctness, judge
from gauntlet.judge.seeds import derive_seed
from gauntlet.task import Config, Task

#: Seed of the task checks' own trials (any fixed value: checks are about the task, not a run).
CHECK_SEED = 20261122


@dataclass(frozen=True)
class CheckResult:
    """One check on one task."""

    name: str
    ok: bool
    detail: str = ""


Draw = Callable[[Config, int, str], dict[str, Any]]
Reference = Callable[[dict[str, Any]], list[np.ndarray]]


def check_task(task: Task, device: str | None = None) -> list[CheckResult]:
    """Every check on one task, on `device` or the best device here for it."""
    chosen = devices.device_for(task, device)
    if chosen is None:
        return [CheckResult("device", False, f"no device here runs {task.spec.device_kinds()}")]
    results = [_judged(task, "baseline passes", task.baseline_files(), chosen)]
    results += reference_checks(task)
    expert = task.expert_files()
    if expert is not None:
        expert_result = _judged(task, "expert passes", expert, chosen)
        results.append(expert_result)
    return results


def _judged(task: Task, name: str, files: dict[str, str], device: str) -> CheckResult:
    with tempfile.TemporaryDirectory(prefix="gauntlet-check-") as tmp:
        for file_name, text in files.items():
            path = Path(tmp) / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        verdict = judge(task, Path(tmp), device=device, seed=CHECK_SEED, configs="all")
    if not verdict.passed:
        return CheckResult(name, False, f"{verdict.status}: {verdict.reason}")
    if name.startswith("expert") and verdict.timed:
        if verdict.speedup is None or verdict.speedup <= 1.0:
            detail = f"does not beat the baseline (speedup {verdict.speedup})"
            return CheckResult(name, False, detail)
        return CheckResult(name, True, f"speedup {verdict.speedup:.2f}x on {device}")
    timed = "" if verdict.timed else f" (not timed on {device})"
    return CheckResult(name, True, f"{len(verdict.configs)} configs correct{timed}")


def reference_checks(task: Task) -> list[CheckResult]:
    """The checks on the task's own reference and inputs, on this machine's CPU.

    No submission and no device: they run whatever devices the task declares.
    """
    draw, reference = (
        _asm_reference(task) if task.spec.submission.language == "asm" else _python_reference(task)
    )
    results: list[CheckResult] = []
    problems: dict[str, list[str]] = {"constant": [], "zero": [], "insensitive": [], "trivial": []}
    for config in task.visible_configs:
        dist = task.spec.inputs.distributions[0]
        seed = derive_seed(CHECK_SEED, task.task_id, config.name)
        inputs = draw(config, seed, dist)
        outputs = reference(inputs)
        for i, out in enumerate(outputs):
            finite = out[np.isfinite(out)]
            if finite.size > 1 and float(np.ptp(finite)) == 0.0:
                problems["constant"].append(f"{config.name} output {i}")
            if finite.size == 0 or float(np.abs(finite).max()) < 1e-6:
                problems["zero"].append(f"{config.name} output {i}")
        other = draw(config, seed + 1, dist)
        for name, value in inputs.items():
            if not _is_array(value):
                continue
            changed = dict(inputs)
            changed[name] = other[name]
            again = reference(changed)
            if all(
                np.array_equal(a, b, equal_nan=True) for a, b in zip(again, outputs, strict=True)
            ):
                problems["insensitive"].append(f"{config.name}: input '{name}'")
        problems["trivial"] += _trivial_outputs_pass(task, config, inputs, outputs)
    labels = {
        "constant": "output is not constant",
        "zero": "output is not near zero",
        "insensitive": "output changes with every input",
        "trivial": "zero and identity outputs fail",
    }
    for key, label in labels.items():
        found = problems[key]
        results.append(CheckResult(label, not found, "; ".join(found[:6])))
    overflow = _overflowing_outputs(task, draw, reference)
    results.append(CheckResult("output fits its dtype", not overflow, "; ".join(overflow[:6])))
    return results


def _overflowing_outputs(task: Task, draw: Draw, reference: Reference) -> list[str]:
    """Fixed hidden configs and distributions whose exact output leaves its dtype's range.

    Every distribution but `special` (which mixes in extremes on purpose) must give finite
    inputs an output the dtype can hold, else no kernel can pass it (a `scaled` matrix product
    in float16 did). The fixed hidden configs are small, so every distribution is cheap.
    """
    import torch

    from gauntlet import taskkit

    found = []
    for config in task.spec.configs.hidden.fixed:
        try:
            dtype = taskkit.dtype_of(config.dtype)
        except ValueError:
            continue  # a simulator's own type: no float range to leave
        if not dtype.is_floating_point:
            continue
        limit = torch.finfo(dtype).max
        seed = derive_seed(CHECK_SEED, task.task_id, config.name)
        for dist in task.spec.inputs.distributions:
            if dist == "special":
                continue
            for i, out in enumerate(reference(draw(config, seed, dist))):
                if out.dtype.kind == "f" and out.size and not (np.abs(out) <= limit).all():
                    worst = float(np.nanmax(np.abs(out)))
                    found.append(
                        f"{config.name} ({config.dtype}) {dist} inputs: output {i} reaches "
                        f"{worst:.4g}, beyond {config.dtype}'s {limit:.4g}"
                    )
    return found


def _trivial_outputs_pass(
    task: Task, config: Config, inputs: dict[str, Any], outputs: list[np.ndarray]
) -> list[str]:
    """Configs where a zero output or an input returned as output would be accepted."""
    import torch

    found = []
    spec = task.spec
    tol = spec.tolerance.dtypes.get(config.dtype) or next(iter(spec.tolerance.dtypes.values()))
    bound = correctness.rel_l2_bound(spec.tolerance, config.dtype, 0.0)
    arrays = [np.asarray(v, dtype=np.float64) for v in inputs.values() if _is_array(v)]
    for i, out in enumerate(outputs):
        ref = torch.from_numpy(np.asarray(out, dtype=np.float64))
        candidates = {"zero output": np.zeros_like(out)}
        for j, array in enumerate(arrays):
            if array.shape == out.shape:
                candidates[f"input {j} as output"] = array
        for label, fake in candidates.items():
            verdict = correctness.compare(torch.from_numpy(fake), ref, tol, bound, "output")
            if verdict.ok:
                found.append(f"{config.name} output {i}: {label} passes")
    return found


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and value.size > 0


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _numpy(tensor: Any) -> np.ndarray:
    """A tensor as a NumPy array, floating point widened to float64."""
    import torch

    value = tensor.detach().cpu()
    array: np.ndarray = (value.to(torch.float64) if value.is_floating_point() else value).numpy()
    return array


def _python_reference(task: Task) -> tuple[Draw, Reference]:
    import torch

    spec = task.spec
    make = getattr(_load(task.path(spec.inputs.file), "_check_inputs"), spec.inputs.entry)
    ref = getattr(_load(task.path(spec.reference.file), "_check_reference"), spec.reference.entry)

    def draw(config: Config, seed: int, dist: str) -> dict[str, Any]:
        raw = make(dict(config.params), seed, dist, "cpu")
        return {k: _numpy(v) if isinstance(v, torch.Tensor) else v for k, v in raw.items()}

    def reference(inputs: dict[str, Any]) -> list[np.ndarray]:
        args = [torch.from_numpy(np.array(v)) if _is_array(v) else v for v in inputs.values()]
        with torch.no_grad():
            out = ref(*args)
        return [_numpy(o) for o in (out if isinstance(out, tuple | list) else (out,))]

    return draw, reference


def _asm_reference(task: Task) -> tuple[Draw, Reference]:
    from gauntlet.judge.asm_backend import reference_functions

    return reference_functions(task)
