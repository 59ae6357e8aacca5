"""A config the GPU cannot hold is a judge error naming the bytes, before any worker starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.errors import JudgeError
from gauntlet.judge import footprint, python_backend
from gauntlet.judge.python_backend import _Evaluation
from gauntlet.suites import load_by_id
from gauntlet.task import Config
from tests.support.fixtures import SCALE_ADD, eval_request

GIB = 1 << 30


def test_kernelbench_sized_softmax_fits_an_80_gb_gpu_and_not_a_40_gb_one() -> None:
    # KernelBench level 1 problem 23: softmax over 4096 x 393216 float32 (6 GiB a tensor).
    task = load_by_id("triton2triton/softmax")
    big = Config(name="KB", params={"rows": 4096, "cols": 393216, "dtype": "float32"})
    moved = 2 * 4096 * 393216 * 4  # x read, y written: 12 GiB
    # Twice by the candidate (inputs with clones, outputs), twice more in float64 by the
    # reference, once for its native-dtype output.
    assert footprint.bytes_needed(task, big) == 5 * moved
    assert footprint.too_large(task, [big], 80 * GIB) == ""
    problem = footprint.too_large(task, [big], 40 * GIB)
    assert "config KB (rows=4096, cols=393216, dtype=float32)" in problem
    assert "needs at least 60.0 GiB" in problem and "has 40.0 GiB" in problem


def test_a_judgment_takes_the_gpus_slots_its_memory_needs() -> None:
    task = load_by_id("triton2triton/softmax")
    big = Config(name="KB", params={"rows": 4096, "cols": 393216, "dtype": "float32"})
    small = task.visible_configs
    # 60 GiB of an 80 GiB GPU's three slots (26.7 GiB each): all of them; of four (20 GiB): 3.
    assert footprint.slots_needed(task, [*small, big], 80 * GIB, 3) == 3
    assert footprint.slots_needed(task, [*small, big], 80 * GIB, 4) == 3
    assert footprint.slots_needed(task, [*small, big], 200 * GIB, 4) == 2
    assert footprint.slots_needed(task, small, 80 * GIB, 3) == 1


def test_the_judge_stops_before_starting_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = SCALE_ADD()
    monkeypatch.setattr(python_backend, "_device_bytes", lambda device: 4096)
    evaluation = _Evaluation(eval_request(task, task.root / "expert", tmp_path, device="cuda:0"))
    with pytest.raises(JudgeError, match="cannot be judged here: config C1 .* needs at least"):
        evaluation.run()
    assert not evaluation.tmp.exists()
