"""Every CUDA task's baseline and expert compile for sm_90 (scripts/cuda_compile_check.py).

Needs nvcc, not a GPU: the sources are recorded from the files and compiled the way
`load_inline` would, so a compile error is caught before a GPU is spent on it. Minutes on two
cores, hence `slow`.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "cuda_compile_check.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cuda_compile_check", SCRIPT)
    assert spec is not None and spec.loader is not None, f"cannot load {SCRIPT}"
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class body runs.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH (CUDA toolkit)")
def test_every_cuda_task_compiles() -> None:
    check = _load_script()
    results = check.check_tasks(jobs=2)
    assert results, "no CUDA task files were found"
    failed = [r for r in results if not r.ok]
    assert not failed, check.format_results(failed)
