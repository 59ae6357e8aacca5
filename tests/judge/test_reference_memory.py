"""The reference worker holds no more copies of a trial's inputs than its next step needs.

At KernelBench's softmax (6 GiB of inputs a trial) the float64 inputs, the native run's clones
and the drawn inputs were all still held while the baseline ran: 54 GiB, and the reference
worker ran out of memory on an H200 beside the candidate and the judge.
"""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch

from gauntlet.judge import timing, worker
from gauntlet.judge.python_backend import _Evaluation
from tests.support.fixtures import SCALE_ADD, eval_request

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def task_modules() -> Iterator[None]:
    """The task's modules the reference run loads in this process, unloaded after."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("_gauntlet_"):
            del sys.modules[name]


@pytest.mark.usefixtures("task_modules")
def test_a_trials_input_copies_are_let_go_before_the_baseline_runs(tmp_path: Path) -> None:
    evaluation = _Evaluation(eval_request(SCALE_ADD(), tmp_path, tmp_path))
    request = evaluation._request("reference", evaluation.states)
    run = worker._ReferenceRun(request, timing.Laps())
    drawn: list[weakref.ref[torch.Tensor]] = []
    lifted: list[weakref.ref[torch.Tensor]] = []
    held_at_baseline: list[str] = []
    make, lift = run.make, run.lift

    def recorded_make(*args: Any) -> dict[str, Any]:
        inputs = make(*args)
        drawn.extend(weakref.ref(v) for v in inputs.values() if isinstance(v, torch.Tensor))
        return inputs

    def recorded_lift(value: Any) -> Any:
        out = lift(value)
        if isinstance(out, torch.Tensor):
            lifted.append(weakref.ref(out))
        return out

    def baseline(*args: Any) -> Any:
        gc.collect()
        held_at_baseline.extend(f"drawn input {i}" for i, r in enumerate(drawn) if r() is not None)
        held_at_baseline.extend(
            f"float64 input {i}" for i, r in enumerate(lifted) if r() is not None
        )
        return run.ref(*args)  # the reference, as drawn: the baseline needs a GPU or Triton's

    run.make, run.lift, run.base = recorded_make, recorded_lift, baseline
    event, tensors = run.trial(request.configs[0], 0)
    assert drawn and lifted
    # The baseline runs on its own clones; the reference's outputs stay.
    assert held_at_baseline == []
    assert event.baseline_rel_l2[0] < 1e-5 and tensors[0].dtype == torch.float64
