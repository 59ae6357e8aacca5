"""The robust-kbench importer on fixture tasks written in robust-kbench's format.

The fixtures (robustkbench/tasks/) are this project's own: `scale_shift` (forward with a
multi-config cross product and an init setting; backward with only single configs),
`no_config` (no config file: refused) and a KernelBench-v0-style port (left out by default).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from gauntlet.errors import ConfigError
from gauntlet.importers.kbsource import ProblemRefused
from gauntlet.importers.kernelbench import ImportOptions
from gauntlet.importers.rkbsource import cross_product, problem_text, read_problem, task_folders
from gauntlet.importers.robustkbench import import_robust_kbench
from gauntlet.task import load_task

ROOT = Path(__file__).parent / "robustkbench"
TASKS = ROOT / "tasks"


def test_cross_product_applies_shared_settings_last_and_drops_repeats() -> None:
    raw = {
        "single_input_configs": [{"batch_size": 1}],
        "multi_input_configs": [{"batch_size": 2}, {"batch_size": 4}],
        "multi_init_configs": [{"dim": 3}, {"dim": 3}],
        "multi_shared_configs": [{"dim": 8}],
    }
    # Shared settings override init and input ones (robust-kbench's ConfigTask); the two equal
    # init settings give the same configs, kept once.
    assert cross_product(raw, "c.json") == [
        {"dim": 8, "batch_size": 2},
        {"dim": 8, "batch_size": 4},
    ]
    # Empty multi lists: the single ones.
    single = {"single_input_configs": [{"batch_size": 1}], "multi_input_configs": []}
    assert cross_product(single, "c.json") == [{"batch_size": 1}]
    with pytest.raises(ProblemRefused, match="'multi_input_configs' is not a list"):
        cross_product({"multi_input_configs": 3}, "c.json")


def test_a_task_is_written_as_a_kernelbench_problem() -> None:
    read = read_problem(TASKS / "scale_shift", "forward")
    # Model.forward's `fn=forward_fn` is bound inside it: x is its only argument.
    assert read.source.forward_args == ["x"]
    # Constants: the largest config's settings and the numeric defaults of Model.__init__.
    assert read.source.constants == {"batch_size": 24, "num_features": 40, "alpha": 2.0}
    # 2 batches x 2 inits x 2 shared sizes; the init setting is not a number: fixed at
    # `random` (std-1 weights, not the identity of ones and zeros), so 4 distinct configs.
    assert read.fixed == {"init_method": "random"}
    assert read.configs == [
        {"batch_size": 8, "num_features": 16},
        {"batch_size": 8, "num_features": 40},
        {"batch_size": 24, "num_features": 16},
        {"batch_size": 24, "num_features": 40},
    ]
    assert "return [num_features, alpha, 'random']" in read.text
    assert "return _rkb_get_inputs(batch_size=batch_size, num_features=num_features)" in read.text


def test_what_cannot_be_read_is_refused_with_its_reason() -> None:
    with pytest.raises(ProblemRefused, match="no config_forward.json beside func_forward.py"):
        read_problem(TASKS / "no_config", "forward")
    text = (TASKS / "scale_shift" / "func_forward.py").read_text(encoding="utf-8")
    with pytest.raises(ProblemRefused, match="'depth' is no argument of get_inputs or Model"):
        problem_text(text, "f.py", [{"depth": 3}])
    with pytest.raises(ProblemRefused, match="defines no forward_fn"):
        problem_text(text.replace("forward_fn", "other_fn"), "f.py", [{}])


def test_kernelbench_ports_are_left_out_unless_asked() -> None:
    assert [p.name for p in task_folders(ROOT, ports=False)] == ["no_config", "scale_shift"]
    assert "task_1" in [p.name for p in task_folders(ROOT, ports=True)]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_rkb_fixture_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_import_writes_forward_and_backward_tasks(tmp_path: Path) -> None:
    options = ImportOptions(track="torch2triton", id_prefix="rkb", max_bytes=1 << 20,
                            max_flops=2e7, jobs=2)  # fmt: skip
    report = import_robust_kbench(ROOT, tmp_path, options, names=["scale_shift", "no_config"])
    outcome = {p.problem: p for p in report.problems}
    assert report.source == "robust-kbench"
    assert outcome["no_config/func_forward.py"].outcome == "refused"
    forward = outcome["scale_shift/func_forward.py"]
    assert forward.outcome == "imported" and forward.task_id == "rkb/scale_shift"
    assert "settings fixed for every config: init_method = 'random'" in forward.notes
    spec = load_task(tmp_path / "scale_shift").spec
    # The visible configs are the cross product, in float32, at robust-kbench's tolerance.
    shown = [
        (c.params["batch_size"], c.params["num_features"], c.dtype) for c in spec.configs.visible
    ]
    assert shown == [
        (8, 16, "float32"),
        (8, 40, "float32"),
        (24, 16, "float32"),
        (24, 40, "float32"),
    ]
    assert spec.tolerance.dtypes["float32"].rtol == 1e-5 and spec.backward is None
    assert outcome["scale_shift/func_backward.py"].outcome == "imported"
    folder = tmp_path / "scale_shift_backward"
    backward = load_task(folder).spec
    assert backward.backward is not None and backward.backward.wrt == ["x", "weight", "bias"]
    assert [c.params["batch_size"] for c in backward.configs.visible] == [16]
    # The reference's gradients (autograd through the model built on the meta device with the
    # drawn parameters) are the analytic ones of tanh(alpha x w + b).
    config = dict(backward.configs.visible[0].params)
    inputs = _load(folder / "inputs.py").make_inputs(config, 5, "normal", "cpu")
    leaves = {n: inputs[n].detach().requires_grad_(True) for n in ("x", "weight", "bias")}
    out = _load(folder / "reference.py").reference(**{**inputs, **leaves})
    out.sum().backward()
    alpha, x, w = config["alpha"], leaves["x"].detach(), leaves["weight"].detach()
    slope = 1 - out.detach() ** 2
    assert torch.allclose(leaves["x"].grad, slope * alpha * w, atol=1e-6)
    assert torch.allclose(leaves["weight"].grad, (slope * alpha * x).sum(0), atol=1e-5)
    assert torch.allclose(leaves["bias"].grad, slope.sum(0), atol=1e-5)


def test_cli_imports_and_reports(tmp_path: Path) -> None:
    done = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", "import", "robust-kbench", str(ROOT),
         "--tasks", "no_config", "--out", str(tmp_path / "rkb")],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no_config/func_forward.py: refused (no config_forward.json" in done.stdout
    assert (tmp_path / "rkb" / "import_report.json").is_file()


def test_a_folder_that_is_no_checkout_is_a_config_error(tmp_path: Path) -> None:
    options = ImportOptions(id_prefix="rkb")
    with pytest.raises(ConfigError, match="is not a folder; give a robust-kbench checkout"):
        import_robust_kbench(tmp_path / "absent", tmp_path / "out", options)
