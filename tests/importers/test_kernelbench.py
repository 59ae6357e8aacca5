"""The KernelBench importer on fixture problems written in KernelBench's format.

The fixtures (kernelbench/KernelBench/level*/) are this project's own small problems, one per
case: a linear layer (imported as is), a problem zero whatever its input (refused), one that
imports numpy (refused), live dropout (rewritten), a bias cancelled by a training-mode batch
norm plus a module global read in forward and a tuple constant (rewritten), and triangular
inputs (structure kept).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from gauntlet import expr
from gauntlet.importers import kbprobe
from gauntlet.importers.kbsource import module_text, parse_problem
from gauntlet.importers.kbwrite import TaskPlan, write_task
from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench
from gauntlet.judge import guards
from gauntlet.task import load_task

ROOT = Path(__file__).parent / "kernelbench"
CAPS = {"max_bytes": 1 << 20, "max_flops": 2e7}


def _analysis(relative: str) -> tuple[Any, kbprobe.Analysis]:
    source = parse_problem((ROOT / "KernelBench" / relative).read_text(encoding="utf-8"), relative)
    request = kbprobe.AnalyzeRequest(
        module_text=module_text(source), constants=source.constants,
        forward_args=source.forward_args, **CAPS,
    )  # fmt: skip
    return source, kbprobe.analyze(request)


def test_analysis_maps_constants_configs_parameters_and_roofline() -> None:
    _, analysis = _analysis("level1/1_Linear_Scale.py")
    assert analysis.refused is None and analysis.rewrites == []
    c1 = analysis.visible[0]
    assert c1 == {"name": "C1", "batch_size": 64, "in_features": 48, "out_features": 32,
                  "scale": 2.0, "dtype": "float32"}  # fmt: skip
    # Sizes vary from a quarter of C1 up to C1; the float constant stays.
    assert analysis.domain == {"batch_size": (16, 64), "in_features": (12, 48),
                               "out_features": (8, 32)}  # fmt: skip
    assert "float32" in analysis.dtypes and len(analysis.visible) >= 2
    rules = {p.name: p.rule for p in analysis.parameters}
    assert rules["linear.weight"].kind == "fan_in"
    assert rules["linear.bias"].kind == "fan_in" and rules["linear.bias"].of == "linear.weight"
    assert not analysis.build_on_device
    params = {"batch_size": 100, "in_features": 30, "out_features": 7, "itemsize": 4}
    assert expr.evaluate(analysis.flops, params) == 2 * 100 * 30 * 7
    assert analysis.matrix
    # The compulsory bytes: x, weight, bias and the output, at most what was measured.
    exact = (100 * 30 + 7 * 30 + 7 + 100 * 7) * 4
    assert 0.5 * exact <= expr.evaluate(analysis.bytes, params) <= exact


def test_analysis_switches_off_live_dropout_and_notes_batch_norm() -> None:
    _, dropout = _analysis("level2/1_Linear_Dropout_Softmax.py")
    assert dropout.dropout_off and dropout.rewrites[0].startswith("live dropout switched off")
    _, norm = _analysis("level2/2_Linear_BatchNorm_Shift.py")
    assert norm.build_on_device  # running buffers: the model is built where the inputs are
    assert any("batch norm" in note for note in norm.notes)


def test_analysis_flags_what_passes_kernelbench_as_published() -> None:
    _, analysis = _analysis("level1/2_Min_Clamp.py")
    assert any("zeros as the output passes" in f for f in analysis.kernelbench_findings)


def test_a_problem_too_large_for_the_caps_at_any_size_is_refused() -> None:
    source = parse_problem(
        (ROOT / "KernelBench/level1/1_Linear_Scale.py").read_text(encoding="utf-8"), "p"
    )
    request = kbprobe.AnalyzeRequest(
        module_text=module_text(source), constants=source.constants,
        forward_args=source.forward_args, max_bytes=64, max_flops=1e9,
    )  # fmt: skip
    assert "does not fit" in (kbprobe.analyze(request).refused or "")


def test_written_task_loads_passes_the_guards_and_matches_the_model(tmp_path: Path) -> None:
    source, analysis = _analysis("level2/2_Linear_BatchNorm_Shift.py")
    plan = TaskPlan(task_id="kb/l2/fixture", problem="level2/2_Linear_BatchNorm_Shift.py",
                    level=2, track="torch2cuda", source=source, analysis=analysis,
                    distributions=["normal"])  # fmt: skip
    write_task(plan, tmp_path)
    task = load_task(tmp_path)
    assert task.spec.track == "torch2cuda" and task.spec.submission.language == "cuda"
    # The reference is the torch2* baseline: the judge's guards must let it through.
    (text,) = task.baseline_files().values()
    assert guards.check_python(text, "kernel.py", "cuda") == []
    config = task.visible_configs[0]
    make_inputs = _load(tmp_path / "inputs.py").make_inputs
    inputs = make_inputs(dict(config.params), 11, "normal", "cpu")
    reference = _load(tmp_path / "reference.py")
    ours = reference.reference(*inputs.values())
    # The same computation as KernelBench's: the module itself, with the same weights.
    model_class, _, get_init_inputs = reference._problem(
        **{k: v for k, v in config.params.items() if k != "dtype"}
    )
    model = model_class(*get_init_inputs())
    state = {"linear.weight": inputs["linear_weight"], "linear.bias": torch.zeros(24),
             "norm.weight": inputs["norm_weight"], "norm.bias": inputs["norm_bias"]}  # fmt: skip
    model.load_state_dict(state, strict=False)
    assert torch.allclose(ours, model(inputs["x"]), atol=1e-6)
    # The reference leaves its inputs untouched (a fresh model's buffers take the update).
    assert torch.equal(inputs["x"], make_inputs(dict(config.params), 11, "normal", "cpu")["x"])


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_fixture_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_import_writes_tasks_and_reports_every_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `out` relative to the working directory, as a script or a user passes it: the probe that
    # checks a written task runs elsewhere and must still find it.
    monkeypatch.chdir(tmp_path)
    options = ImportOptions(levels=[1], ids=[1, 2, 3], track="torch2triton", jobs=2, **CAPS)
    report = import_kernelbench(ROOT, Path("."), options)
    outcome = {p.problem: p for p in report.problems}
    assert report.counts() == {"imported": 1, "rewritten": 0, "refused": 2}
    linear = outcome["level1/1_Linear_Scale.py"]
    assert linear.outcome == "imported" and linear.task_id == "kb/l1/1_linear_scale"
    assert load_task(tmp_path / "l1" / "1_linear_scale").spec.id == "kb/l1/1_linear_scale"
    zero = outcome["level1/2_Min_Clamp.py"]
    assert zero.outcome == "refused" and (zero.reason or "").startswith("degenerate")
    assert not (tmp_path / "l1" / "2_min_clamp").exists()
    assert "not installed" in (outcome["level1/3_Uses_Missing_Module.py"].reason or "")
    assert (tmp_path / "import_report.json").is_file()


def _gauntlet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", *args],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def test_cli_reports_and_exits_2_on_bad_input(tmp_path: Path) -> None:
    done = _gauntlet("import", "kernelbench", str(ROOT), "--levels", "1", "--ids", "3",
                     "--out", str(tmp_path / "kb"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "level1/3_Uses_Missing_Module.py: refused (imports gauntlet_fixture" in done.stdout
    bad = _gauntlet("import", "kernelbench", str(ROOT), "--levels", "one", "--out", str(tmp_path))
    assert bad.returncode == 2 and "--levels takes numbers" in bad.stderr
    missing = _gauntlet("import", "kernelbench", str(ROOT), "--levels", "4", "--out", str(tmp_path))
    assert missing.returncode == 2 and "no folder 'level4'" in missing.stderr


@pytest.mark.parametrize("folder", ["Bad Name", "UPPER"])
def test_cli_refuses_an_out_folder_that_cannot_name_tasks(tmp_path: Path, folder: str) -> None:
    done = _gauntlet("import", "kernelbench", str(ROOT), "--out", str(tmp_path / folder))
    assert done.returncode == 2 and "cannot start a task id" in done.stderr


def test_a_model_that_reads_a_tensor_value_in_init_is_analysed_and_built_on_device(
    tmp_path: Path,
) -> None:
    # `Tensor.item()` in __init__ fails on the meta device: the probe builds such a model on
    # the CPU and moves it to meta for its measurements, and the reference builds it where the
    # inputs are.
    source, analysis = _analysis("level3/1_Linear_Item_Init.py")
    assert analysis.refused is None and analysis.build_on_device
    assert analysis.flops != "0" and analysis.domain
    plan = TaskPlan(task_id="kb/l3/fixture", problem="level3/1_Linear_Item_Init.py", level=3,
                    track="torch2triton", source=source, analysis=analysis,
                    distributions=["normal"])  # fmt: skip
    write_task(plan, tmp_path)
    config = load_task(tmp_path).visible_configs[0]
    inputs = _load(tmp_path / "inputs.py").make_inputs(dict(config.params), 5, "normal", "cpu")
    reference = _load(tmp_path / "reference.py")
    model_class, _, get_init_inputs = reference._problem(
        **{k: v for k, v in config.params.items() if k != "dtype"}
    )
    model = model_class(*get_init_inputs())
    model.load_state_dict(
        {"linear.weight": inputs["linear_weight"], "linear.bias": inputs["linear_bias"]}
    )
    assert torch.allclose(reference.reference(*inputs.values()), model(inputs["x"]), atol=1e-6)
