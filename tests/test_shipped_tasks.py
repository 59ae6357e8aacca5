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

# `make test` must stay within CI's 15 minutes on 2 cores. The tile platform's task checks take
# 3-32 s each there: one of each kind is checked (an element-wise row task, a reduction
# routed over the mesh, a block), the rest under --runslow; its generated files and its
# experts' use of the mesh are checked by tests/accel/test_tile_tasks.py either way. The
# accelerators' whole decoder blocks (13-16 s each) are left to --runslow too: each is a
# composition of stages (norms, matrix products, attention) whose own tasks are checked here.
# The CPU interpreter's smoke tasks take 13-32 s each: the one with a backward pass stays in the
# default tier (the others' experts run in every `make run`, and `tasks check` of the fixture
# Triton task, tests/test_cli.py, runs the same gate on a Triton-to-Triton task).
TILE_CHECKED_ALWAYS = {"accel/tile/relu", "accel/tile/colsum", "accel/tile/ffn"}
# The vector platform's (5-10 s each) likewise: one of each kind (element-wise, a row
# reduction, a matrix product, attention) in the default tier; every rvv expert runs in
# `make run`, and tests/accel/test_rvv_tasks.py judges every baseline and expert under --runslow.
RVV_CHECKED_ALWAYS = {
    "accel/rvv/relu",
    "accel/rvv/rmsnorm",
    "accel/rvv/gemm",
    "accel/rvv/attention",
}
SLOW_CHECKS = {
    "accel/npu/t5_block",
    "accel/npu/llama_block",
    "triton2triton/softmax",
    "triton2triton/layernorm",
    "triton2triton/fused_elementwise",
    "torch2triton/rmsnorm",
    "torch2triton/cross_entropy",
}


def _checked(task_id: str) -> pytest.ParameterSet:
    tile = task_id.startswith("accel/tile/") and task_id not in TILE_CHECKED_ALWAYS
    rvv = task_id.startswith("accel/rvv/") and task_id not in RVV_CHECKED_ALWAYS
    slow = tile or rvv or task_id in SLOW_CHECKS
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
