"""KernelBench's ModelNew contract (`kbcompat.bind`) in-process, and the task field it needs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from gauntlet.errors import TaskFormatError
from gauntlet.importers import kbprobe
from gauntlet.importers.kbcompat import bind
from gauntlet.importers.kbinputs import load_problem
from gauntlet.importers.kbsource import module_text, parse_problem
from gauntlet.importers.kbwrite import ADAPTER_FILE, TaskPlan, write_task
from gauntlet.task import load_task

ROOT = Path(__file__).parent / "kernelbench" / "KernelBench"
RELATIVE = "level2/2_Linear_BatchNorm_Shift.py"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = parse_problem((ROOT / RELATIVE).read_text(encoding="utf-8"), RELATIVE)
    analysis = kbprobe.analyze(
        kbprobe.AnalyzeRequest(
            module_text=module_text(source), constants=source.constants,
            forward_args=source.forward_args, max_bytes=1 << 20, max_flops=2e7,
        )
    )  # fmt: skip
    plan = TaskPlan(task_id="kb/l2/bn", problem=RELATIVE, level=2, track="torch2cuda",
                    source=source, analysis=analysis, distributions=["normal"],
                    contract="modelnew")  # fmt: skip
    target = tmp_path_factory.mktemp("kb-bn")
    write_task(plan, target)
    return target


def _module(path: Path) -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_kbcompat_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_modelnew_is_built_per_config_and_called_with_the_drawn_weights(folder: Path) -> None:
    task = load_task(folder)
    config = dict(task.visible_configs[0].params)
    problem = load_problem(folder / "reference.py")
    model_class = problem(**{k: v for k, v in config.items() if k != "dtype"})[0]

    class ModelNew(model_class):  # type: ignore[misc,valid-type]
        """KernelBench's usual ModelNew: Model's layers under the same names."""

    adapt = _module(folder / ADAPTER_FILE).adapt  # type: ignore[attr-defined]
    call = adapt(ModelNew, config, "cpu")
    inputs = _module(folder / "inputs.py").make_inputs(config, 7, "normal", "cpu")  # type: ignore[attr-defined]
    expected = _module(folder / "reference.py").reference(*inputs.values())  # type: ignore[attr-defined]
    with torch.no_grad():
        first, second = call(*inputs.values()), call(*inputs.values())
    # The drawn weights are used, and the training-mode batch norm's buffers are fresh per call.
    assert torch.allclose(first, expected, atol=1e-5) and torch.equal(first, second)
    # A function is the call contract already (the task's own baseline).
    assert adapt(len, config, "cpu") is len


def test_a_modelnew_unlike_model_fails_the_strict_state_load(folder: Path) -> None:
    config = dict(load_task(folder).visible_configs[0].params)

    class ModelNew(torch.nn.Module):
        def __init__(self, *init_inputs: object) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(3))

    adapt = _module(folder / ADAPTER_FILE).adapt  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="Missing key"):
        adapt(ModelNew, config, "cpu")
    with pytest.raises(TypeError, match="no nn.Module"):
        bind(load_problem(folder / "reference.py"), int, config, "cpu", forward=[],
             parameters={}, constants=[])  # fmt: skip


def test_an_adapter_the_task_lacks_fails_loading(folder: Path, tmp_path: Path) -> None:
    copy = tmp_path / "task"
    shutil.copytree(folder, copy)
    (copy / ADAPTER_FILE).unlink()
    with pytest.raises(TaskFormatError, match=r"submission\.adapter\.file"):
        load_task(copy)
