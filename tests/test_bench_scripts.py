"""scripts/bench_judge.py's `--case` path and scripts/kb_kit.py's KernelBench configs, on the CPU.

The GPU side (KernelBench's eval beside ours, `gpu_check.sh kb`) runs on a GPU machine only.
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
SCALE_ADD = Path(__file__).resolve().parent / "support" / "tasks" / "triton2triton" / "scale_add"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_case_is_judged_warm_and_in_feedback_mode_with_rows_as_they_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _script("bench_judge")
    out = tmp_path / "bench.md"
    argv = ["bench_judge.py", "--case", str(SCALE_ADD), str(SCALE_ADD / "expert")]
    argv += ["--repeats", "1", "--no-cold", "--spares", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    assert bench.main() == 0
    printed = capsys.readouterr().out
    written = out.read_text()
    rows = [line for line in written.splitlines() if line.startswith("| scale_add + expert")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| scale_add + expert warm",
        "| scale_add + expert warm feedback",
    ]
    assert all(row.endswith("| pass |") for row in rows), rows
    assert "candidates per hour" in written
    assert all(row in printed for row in rows)


IMPORTED = """\
id = "kbkit/l1/23_softmax"
description = "Unseen configurations will be tested (batch_size in [64, 256], dim in [6144, \
24576]; dtypes float32, bfloat16, float16), so do not specialise."

[[configs.visible]]
name = "C1"
batch_size = 256
dim = 24576
dtype = "float32"

[[configs.visible]]
name = "C2"
batch_size = 193
dim = 18433
dtype = "bfloat16"

[configs.hidden]
fixed = [
    { name = "H1", batch_size = 64, dim = 6144, dtype = "float32" },
    { name = "H2", batch_size = 255, dim = 24575, dtype = "bfloat16" },
]
count = 2

[configs.hidden.domain]
batch_size = { min = 64, max = 256 }
dim = { min = 6144, max = 24576 }
dtype = { values = ["float32", "bfloat16", "float16"] }

[tolerance]
margin = 8
"""


def test_the_kit_gives_an_imported_task_kernelbench_s_float32_configs() -> None:
    kit = _script("kb_kit")
    shipped = {"batch_size": 4096, "dim": 393216}
    cut = tomllib.loads(kit.kernelbench_configs(IMPORTED, shipped))
    c1 = {"name": "C1", "batch_size": 4096, "dim": 393216, "dtype": "float32"}
    assert cut["configs"]["visible"] == [c1]
    hidden = cut["configs"]["hidden"]
    h1 = {"name": "H1", "batch_size": 1024, "dim": 98304, "dtype": "float32"}
    assert hidden["fixed"] == [h1]
    assert hidden["count"] == 2
    assert hidden["domain"] == {
        "batch_size": {"min": 1024, "max": 4096},
        "dim": {"min": 98304, "max": 393216},
        "dtype": {"values": ["float32"]},
    }
    assert cut["tolerance"] == {"margin": 8}
    assert (
        "(batch_size in [1024, 4096], dim in [98304, 393216]; dtype float32)"
        in (cut["description"])
    )
