"""The reference checks of every GPU task, on this CPU, at the tiny sizes of the script.

scripts/check_tasks_interpreter.py holds the tiny configs: a GPU task's reference and inputs must
be non-degenerate (output not constant, not near zero, changed by every input; zero and identity
outputs fail; within the dtype's range) before a GPU ever runs it. A new GPU task without tiny
configs fails here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from gauntlet.suites import select
from gauntlet.taskcheck import reference_checks

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_tasks_interpreter.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_tasks_interpreter", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECKER = _script()
GPU_TASKS = {task.task_id: task for task in select("gpu")}


@pytest.mark.parametrize("task_id", sorted(GPU_TASKS))
def test_gpu_task_reference_is_not_degenerate(task_id: str) -> None:
    task = CHECKER.tiny_task(GPU_TASKS[task_id], CHECKER.tiny_configs(task_id))
    failed = [f"{r.name}: {r.detail}" for r in reference_checks(task) if not r.ok]
    assert not failed, failed


def test_a_torch2cuda_task_shares_its_pytorch_twins_tiny_configs() -> None:
    assert CHECKER.tiny_configs("torch2cuda/rope") is CHECKER.TINY["torch2triton/rope"]
    with pytest.raises(KeyError, match="cuda2cuda/nonexistent"):
        CHECKER.tiny_configs("cuda2cuda/nonexistent")
