"""The npu tasks: generated files up to date, task format, and judged end to end."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gauntlet import suites
from gauntlet.judge import judge
from gauntlet.task import load_task

NPU = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "npu"
NAMES = sorted(p.parent.name for p in NPU.glob("*/task.toml"))


@pytest.fixture(scope="module")
def codegen() -> ModuleType:
    sys.path.insert(0, str(NPU))
    try:
        return importlib.import_module("_codegen")
    finally:
        sys.path.remove(str(NPU))


def test_there_are_npu_tasks_on_every_level() -> None:
    levels = {load_task(NPU / name).spec.level for name in NAMES}
    assert len(NAMES) >= 20 and levels == {1, 2, 3}


@pytest.mark.parametrize("name", NAMES)
def test_generated_files_are_up_to_date(codegen: ModuleType, name: str) -> None:
    from _codegen.catalog import TASKS  # type: ignore[import-not-found]
    from _codegen.taskfiles import knobs, render  # type: ignore[import-not-found]

    baseline, expert = codegen.generate(name)
    assert (NPU / name / "baseline.asm").read_text() == baseline, "run python -m _codegen"
    assert (NPU / name / "expert.asm").read_text() == expert, "run python -m _codegen"
    assert (NPU / name / "task.toml").read_text() == render(TASKS[name], knobs(expert))


@pytest.mark.parametrize("name", NAMES)
def test_task_loads_with_the_accel_conventions(name: str) -> None:
    task = load_task(NPU / name, expected_id=f"accel/npu/{name}")
    spec = task.spec
    assert spec.track == "accel" and spec.platform == "npu"
    assert spec.submission.files == ["kernel.asm"] and spec.submission.template == "baseline.asm"
    assert len(task.visible_configs) == 5 and spec.expert is not None
    assert task.baseline_files() == {"kernel.asm": task.path("baseline.asm").read_text()}


def test_suites_select_the_accel_tasks() -> None:
    table = suites.suites()
    assert {"accel", "accel-npu", "accel-rvv"} <= set(table)
    ids = {t.task_id for t in suites.select(suite="accel-npu")}
    assert ids == {f"accel/npu/{n}" for n in NAMES}


@pytest.mark.parametrize("name", ["relu", "gemm", "rope"])
def test_expert_passes_and_beats_the_baseline_on_every_visible_config(
    name: str, tmp_path: Path
) -> None:
    task = load_task(NPU / name)
    (tmp_path / "kernel.asm").write_text(task.path("expert.asm").read_text())
    verdict = judge(task, tmp_path, device="sim:npu", seed=3, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    assert all(r.timing is not None and r.timing.speedup > 1 for r in verdict.configs)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_task_expert_beats_baseline_on_all_configs(name: str, tmp_path: Path) -> None:
    task = load_task(NPU / name)
    for label, file in (("baseline", "baseline.asm"), ("expert", "expert.asm")):
        (tmp_path / "kernel.asm").write_text(task.path(file).read_text())
        verdict = judge(task, tmp_path, device="sim:npu", seed=3)
        assert verdict.status == "pass", f"{label}: {verdict.reason}"
    assert all(r.timing is not None and r.timing.speedup > 1 for r in verdict.visible())
