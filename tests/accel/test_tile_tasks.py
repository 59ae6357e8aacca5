"""The tile tasks: generated files up to date, task format, and judged end to end."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gauntlet import suites
from gauntlet.judge import judge
from gauntlet.task import load_task

TILE = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "tile"
NAMES = sorted(p.parent.name for p in TILE.glob("*/task.toml"))


@pytest.fixture(scope="module")
def codegen() -> ModuleType:
    """tile's `_codegen` package, under its own name (npu's and rvv's are also `_codegen`)."""
    name = "_tile_codegen"
    if name in sys.modules:
        return sys.modules[name]
    folder = TILE / "_codegen"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_there_are_tile_tasks_on_two_levels() -> None:
    levels = {load_task(TILE / name).spec.level for name in NAMES}
    assert len(NAMES) >= 15 and {1, 2} <= levels


@pytest.mark.parametrize("name", NAMES)
def test_generated_files_are_up_to_date(codegen: ModuleType, name: str) -> None:
    catalog = importlib.import_module("_tile_codegen.catalog")
    taskfiles = importlib.import_module("_tile_codegen.taskfiles")
    baseline, expert = codegen.generate(name)
    hint = "run python -m _codegen in tasks/accel/tile"
    assert (TILE / name / "baseline.asm").read_text() == baseline, hint
    assert (TILE / name / "expert.asm").read_text() == expert, hint
    assert (TILE / name / "task.toml").read_text() == taskfiles.render(catalog.TASKS[name]), hint


@pytest.mark.parametrize("name", NAMES)
def test_task_loads_with_the_accel_conventions(name: str) -> None:
    task = load_task(TILE / name, expected_id=f"accel/tile/{name}")
    spec = task.spec
    assert spec.track == "accel" and spec.platform == "tile"
    assert spec.submission.files == ["kernel.asm"] and spec.submission.template == "baseline.asm"
    assert len(task.visible_configs) == 5 and spec.expert is not None
    # The visible configs vary the hardware, not only the shapes.
    assert any(k.startswith("hw_") for c in task.visible_configs for k in c.params)


def test_the_suite_selects_the_tile_tasks() -> None:
    ids = {t.task_id for t in suites.select(suite="accel-tile")}
    assert ids == {f"accel/tile/{n}" for n in NAMES}


@pytest.mark.parametrize("name", ["relu", "colsum"])
def test_expert_passes_and_beats_the_baseline_on_every_visible_config(
    name: str, tmp_path: Path
) -> None:
    task = load_task(TILE / name)
    (tmp_path / "kernel.asm").write_text(task.path("expert.asm").read_text())
    verdict = judge(task, tmp_path, device="sim:tile", seed=3, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    assert all(r.timing is not None and r.timing.speedup > 1 for r in verdict.configs)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_task_expert_beats_baseline_on_all_configs(name: str, tmp_path: Path) -> None:
    task = load_task(TILE / name)
    for label, file in (("baseline", "baseline.asm"), ("expert", "expert.asm")):
        (tmp_path / "kernel.asm").write_text(task.path(file).read_text())
        verdict = judge(task, tmp_path, device="sim:tile", seed=3)
        assert verdict.status == "pass", f"{label}: {verdict.reason}"
    assert all(r.timing is not None and r.timing.speedup > 1 for r in verdict.visible())
