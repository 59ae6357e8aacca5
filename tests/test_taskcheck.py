"""The task checks' reference checks on a fixture task, unchanged and broken on purpose."""

from __future__ import annotations

import shutil
from pathlib import Path

from gauntlet.task import load_task
from gauntlet.taskcheck import reference_checks

FIXTURE = Path(__file__).parent / "support" / "tasks" / "triton2triton" / "scale_add"


def _fits(task_dir: Path) -> tuple[bool, str]:
    results = {r.name: r for r in reference_checks(load_task(task_dir))}
    fits = results["output fits its dtype"]
    return fits.ok, fits.detail


def test_an_output_within_its_dtype_passes(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "scale_add")
    assert _fits(tmp_path / "scale_add") == (True, "")


def test_an_output_beyond_float16_is_named_with_its_config_and_distribution(
    tmp_path: Path,
) -> None:
    task = tmp_path / "scale_add"
    shutil.copytree(FIXTURE, task)
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            'name = "H1", n = 3001, dtype = "float32"', 'name = "H1", n = 3001, dtype = "float16"'
        )
    )
    inputs = task / "inputs.py"
    # Finite float16 inputs whose exact result (1e5 * x + y) leaves float16's range.
    inputs.write_text(
        inputs.read_text().replace(
            '"alpha": 1.5', '"alpha": 1e5 if distribution == "uniform" else 1.5'
        )
    )
    ok, detail = _fits(task)
    assert not ok
    assert detail.startswith("H1 (float16) uniform inputs: output 0 reaches 9.9")
    assert "normal" not in detail
