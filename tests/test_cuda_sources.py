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


PTXAS_REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z10cached_vecIfEvPKT_PS0_l' for 'sm_90'
ptxas info    : Function properties for _Z10cached_vecIfEvPKT_PS0_l
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 39 registers, used 1 barriers, 128 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'wide_kernel' for 'sm_90'
ptxas info    : Function properties for wide_kernel
    96 bytes stack frame, 64 bytes spill stores, 80 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 384 bytes cmem[0]
"""


def test_resources_reads_registers_and_spills_per_kernel() -> None:
    check = _load_script()
    lines = check.kernel_resources(PTXAS_REPORT)
    assert len(lines) == 2
    assert lines[0].endswith(": 39 registers, spills none")
    assert "cached_vec" in lines[0]
    assert lines[1] == "wide_kernel: 255 registers, spills 64 B stored, 80 B loaded"
