"""Every shipped task loads, belongs to a suite, and passes the task checks on a device here.

CPU-runnable tasks (Triton's interpreter, the accelerator simulators) are checked in CI; GPU
tasks under `-m gpu`.
"""

from __future__ import annotations

import fnmatch

import pytest

from gauntlet import devices, suites
from gauntlet.taskcheck import check_task

IDS = suites.task_ids()
SUITES = suites.suites()


def _runs_here_without_gpu(task_id: str) -> bool:
    kinds = suites.load_by_id(task_id).spec.device_kinds()
    return any(k == "cpu" or k.startswith("sim:") for k in kinds)


CPU_IDS = [i for i in IDS if _runs_here_without_gpu(i)]
GPU_IDS = [i for i in IDS if i not in CPU_IDS]

# `make test` must stay within CI's 15 minutes on 2 cores. Each accelerator platform's task
# checks take 1-32 s each there: one task of each kind is checked in the default tier (an
# element-wise task, a row reduction, a matrix product, attention, on npu a convolution (1 s);
# the tile platform's reduction routed over the mesh and a block), the rest under --runslow
# (npu's flash attention, 13-25 s, among them). Every accelerator task's expert
# runs in `make run`, and tests/accel/ judges each platform's baselines and experts under
# --runslow (the tile platform's generated files and its experts' use of the mesh either way).
# The CPU interpreter's smoke tasks take 13-32 s each: the one with a backward pass stays in the
# default tier (the others' experts run in every `make run`, and `tasks check` of the fixture
# Triton task, tests/test_cli.py, runs the same gate on a Triton-to-Triton task).
ACCEL_CHECKED_ALWAYS = {
    "accel/tile": {"relu", "colsum", "ffn"},
    "accel/rvv": {"relu", "rmsnorm", "gemm", "attention"},
    "accel/npu": {"relu", "rmsnorm", "gemm", "attention", "conv2d"},
}
SLOW_CHECKS = {
    "triton2triton/softmax",
    "triton2triton/layernorm",
    "triton2triton/fused_elementwise",
    "torch2triton/rmsnorm",
    "torch2triton/cross_entropy",
}


def _checked(task_id: str) -> pytest.ParameterSet:
    platform, _, name = task_id.rpartition("/")
    always = ACCEL_CHECKED_ALWAYS.get(platform)
    slow = task_id in SLOW_CHECKS or (always is not None and name not in always)
    return pytest.param(task_id, marks=[pytest.mark.slow] if slow else [])


def test_every_task_is_in_a_named_suite() -> None:
    # Suites that start from every task (`all`, `standard`) say nothing of where one belongs.
    named = [v for v in SUITES.values() if "*" not in v]
    orphans = [i for i in IDS if not any(suites.in_suite(i, v) for v in named)]
    assert not orphans, f"tasks in no suite: {orphans}"


def test_every_suite_pattern_matches_a_task() -> None:
    for name, patterns in SUITES.items():
        for pattern in patterns:
            glob = pattern.removeprefix("!")
            assert any(fnmatch.fnmatchcase(i, glob) for i in IDS), f"{name}: {pattern}"


@pytest.mark.parametrize("task_id", [_checked(i) for i in CPU_IDS])
def test_task_checks_pass(task_id: str) -> None:
    task = suites.load_by_id(task_id)
    failed = [f"{r.name}: {r.detail}" for r in check_task(task) if not r.ok]
    assert not failed, failed


# Minutes a task on a GPU: the suite run of scripts/gpu_check.sh covers the same ground, so
# `pytest -m gpu` leaves these to --runslow.
@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("task_id", GPU_IDS)
def test_gpu_task_checks_pass(task_id: str) -> None:
    task = suites.load_by_id(task_id)
    device = devices.device_for(task, "cuda:0")
    assert device is not None
    failed = [f"{r.name}: {r.detail}" for r in check_task(task, device) if not r.ok]
    assert not failed, failed
