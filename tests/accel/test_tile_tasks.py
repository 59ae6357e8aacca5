"""The tile tasks: generated files up to date, task format, and judged end to end."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from gauntlet import suites
from gauntlet.accel import MemoryContract, assemble, get_platform, simulate
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


def test_there_are_tile_tasks_on_every_level() -> None:
    levels = {load_task(TILE / name).spec.level for name in NAMES}
    assert len(NAMES) >= 15 and levels == {1, 2, 3}


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


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_task_expert_beats_baseline_on_all_configs(name: str, tmp_path: Path) -> None:
    task = load_task(TILE / name)
    for label, file in (("baseline", "baseline.asm"), ("expert", "expert.asm")):
        (tmp_path / "kernel.asm").write_text(task.path(file).read_text())
        verdict = judge(task, tmp_path, device="sim:tile", seed=3)
        assert verdict.status == "pass", f"{label}: {verdict.reason}"
    assert all(r.timing is not None and r.timing.speedup > 1 for r in verdict.visible())


def test_stencil_rewards_neighbouring_chunks_on_neighbouring_tiles(codegen: ModuleType) -> None:
    """Placement: the expert's snake order beats the same program in row-major tile order.

    Row-major order puts chunk 3 and chunk 4 on tiles (0, 3) and (1, 0), four hops apart, so
    every step's boundary swap between them waits longer.
    """
    asm = importlib.import_module("_tile_codegen.asm")
    kernels = importlib.import_module("_tile_codegen.kernels")
    a = asm.Asm("stencil", "test")
    kernels.stencil_stage(a, True)
    snake = a.text()
    row_major = snake.replace("    remi r16, r1, 2\n", "    li r16, 0\n").replace(
        "remi r18, r16, 2", "li r18, 0"
    )
    assert row_major != snake
    n, steps = 4096, 32
    contract = MemoryContract.pack(inputs={"x": (n,), "w": (steps,)}, outputs={"y": (n,)})
    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.standard_normal(n).astype(np.float32),
        "w": rng.uniform(0, 1, steps).astype(np.float32),
    }
    tile = get_platform("tile")
    symbols = {**contract.symbols(), "N": n, "STEPS": steps, "itemsize": 4}
    near, far = (
        simulate(assemble(tile, source, symbols), contract, inputs) for source in (snake, row_major)
    )
    assert near.fault is None and far.fault is None
    np.testing.assert_array_equal(near.outputs["y"], far.outputs["y"])
    assert near.profile.cycles < far.profile.cycles
    assert near.profile.stalls["semaphore_wait"] < far.profile.stalls["semaphore_wait"]


ROUTED = ["colsum", "colmax", "gemv_t", "cumsum", "stencil"]


@pytest.mark.parametrize("name", ROUTED)
def test_routed_experts_pass_data_between_tiles(name: str) -> None:
    """These experts combine or exchange results over the mesh; their baselines never send."""
    from gauntlet.judge.asm_backend import config_setup, draw_inputs, reference_outputs

    task = load_task(TILE / name)
    config = task.visible_configs[0]
    setup = config_setup(task, config)
    inputs = draw_inputs(task, config, 5, task.spec.inputs.distributions[0])
    (expected,) = reference_outputs(task, inputs)
    sends = {}
    for file in ("baseline.asm", "expert.asm"):
        program = assemble(setup.platform, task.path(file).read_text(), setup.symbols)
        result = simulate(program, setup.contract, inputs)
        assert result.fault is None, result.fault
        (output,) = result.outputs.values()
        np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-3)
        sends[file] = result.profile.instructions_by_unit["stream"]
    assert sends["baseline.asm"] == 0 < sends["expert.asm"]
