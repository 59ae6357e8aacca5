"""CUDA builds (`gauntlet/judge/cuda_build.py`): keys, diagnostics, environments, the build
process, the cache, and (under `gpu`) load_inline and CuPy submissions judged on a real GPU.

The fixture task is `cuda2cuda/scale_add_cuda`: a load_inline baseline, an expert that keeps the
baseline's extension name, and variants (KernelBench's `ModelNew`, CuPy NVRTC).
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gauntlet import process, settings
from gauntlet.errors import ConfigError
from gauntlet.judge import cuda_build, guards, judge, protocol, python_backend
from gauntlet.judge.backend import Submission
from gauntlet.judge.cuda_build import (
    MANIFEST_NAME,
    ExtensionRecord,
    RunManifest,
    SourceFile,
    UnitRecord,
    UnitRef,
    build_environment,
    extension_key,
    run_environment,
    trim_diagnostics,
    unit_key,
)
from gauntlet.judge.pipeline import prebuild
from gauntlet.judge.service import Judge
from gauntlet.task import Task, load_task
from tests.support.fixtures import SCALE_ADD, TASKS, VERDICT_TIME_CAP_S, with_spec

TASK_DIR = TASKS / "cuda2cuda" / "scale_add_cuda"
VARIANTS = TASK_DIR / "variants"
TOOLS = {"torch": "2.11.0+cu130", "cuda": "13.0", "python": "3.12", "nvcc": "13.0.88"}


def cuda_task() -> Task:
    return load_task(TASK_DIR)


def without_baseline(task: Task) -> Task:
    # For builds on this CPU-only machine: the fixture's baseline needs nvcc and a CUDA PyTorch.
    return with_spec(task, baseline=None)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setattr(settings, "CACHE_DIR", folder)
    return folder


def submission_dir(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "submission-src"
    folder.mkdir(exist_ok=True)
    (folder / "kernel.py").write_text(text)
    return folder


# -- Keys -----------------------------------------------------------------------------------


def test_unit_key_follows_content_role_arch_and_toolchain() -> None:
    files = {"kernel.py": "x = 1\n"}
    key = unit_key(files, "submission", "9.0", TOOLS)
    assert key == unit_key(dict(files), "submission", "9.0", dict(TOOLS))
    assert key != unit_key({"kernel.py": "x = 2\n"}, "submission", "9.0", TOOLS)
    assert key != unit_key(files, "baseline", "9.0", TOOLS)
    assert key != unit_key(files, "submission", "10.0", TOOLS)
    assert key != unit_key(files, "submission", "9.0", {**TOOLS, "torch": "2.12.0+cu130"})
    assert key != unit_key(files, "submission", "9.0", {**TOOLS, "nvcc": "13.1.0"})


def test_extension_key_ignores_only_what_changes_nothing() -> None:
    call = {"name": "ext", "cpp_sources": ["int f();"], "cuda_sources": "__global__ void k(){}"}
    key = extension_key(call, "9.0", TOOLS)
    assert key == extension_key({**call, "verbose": True, "build_directory": "/x"}, "9.0", TOOLS)
    assert key == extension_key({**call, "cpp_sources": ("int f();",)}, "9.0", TOOLS)
    assert key != extension_key({**call, "extra_cuda_cflags": ["-O3"]}, "9.0", TOOLS)
    assert key != extension_key({**call, "cuda_sources": "__global__ void k2(){}"}, "9.0", TOOLS)
    assert key != extension_key({**call, "name": "ext2"}, "9.0", TOOLS)
    assert key != extension_key(call, "9.0a", TOOLS)


# -- Diagnostics ----------------------------------------------------------------------------

NVCC_LOG = """\
RuntimeError: Error building extension 'scale_add': [1/3] /usr/local/cuda/bin/nvcc \
--generate-dependencies-with-compile -DTORCH_EXTENSION_NAME=scale_add -c /cache/ext/ab/cuda.cu \
-o cuda.cuda.o
FAILED: cuda.cuda.o
/usr/local/cuda/bin/nvcc -c /cache/staging/1f/ext/ab/cuda.cu -o cuda.cuda.o
/cache/staging/1f/ext/ab/cuda.cu(12): warning #177-D: variable "unused" was declared but never \
referenced
      int unused;
          ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

/cache/staging/1f/ext/ab/cuda.cu(14): error: identifier "alphaa" is undefined
      if (i < n) out[i] = alphaa * x[i] + y[i];
                          ^

/usr/lib/python3/dist-packages/torch/include/c10/util/Half.h(5): error: something in a header

2 errors detected in the compilation of "/cache/staging/1f/ext/ab/cuda.cu".
ninja: build stopped: subcommand failed.
"""

GCC_LOG = """\
FAILED: main.o
c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=t1 -c /b/ext/k/main.cpp -o main.o
/b/ext/k/main.cpp: In function 'at::Tensor f(at::Tensor)':
/b/ext/k/main.cpp:3:10: error: 'foo' was not declared in this scope
    3 |   return foo(x);
      |          ^~~
/b/ext/k/main.cpp:7:49: error: 'g' was not declared in this scope
    7 | m.def("g", torch::wrap_pybind_function(g), "g");
      |                                        ^
/usr/lib/python3.12/site-packages/torch/include/ATen/core/TensorBody.h:9:3: note: declared here
ninja: build stopped: subcommand failed.
"""

LAYOUT = {
    "main.cpp": SourceFile(label="cpp_sources", header_lines=1, lines=4, generated="bindings"),
    "cuda.cu": SourceFile(label="cuda_sources", header_lines=3, lines=30),
}


def test_nvcc_errors_are_placed_in_the_agents_cuda_sources() -> None:
    reason = trim_diagnostics(NVCC_LOG, LAYOUT)
    lines = reason.splitlines()
    assert lines[0] == 'cuda_sources line 11: error: identifier "alphaa" is undefined'
    assert lines[1].strip() == "if (i < n) out[i] = alphaa * x[i] + y[i];"
    assert lines[2].strip() == "^"
    # A header's error keeps its place in the package, not the machine's path.
    assert lines[3].startswith("torch/include/c10/util/Half.h:5: error: something")
    assert "warning" not in reason and "nvcc -c" not in reason and "FAILED" not in reason


def test_gcc_errors_in_cpp_sources_and_in_generated_bindings() -> None:
    reason = trim_diagnostics(GCC_LOG, LAYOUT)
    assert "cpp_sources line 2: error: 'foo' was not declared in this scope" in reason
    assert "    3 |   return foo(x);" in reason
    # Line 7 is past the agent's 4 lines (+1 include): the generated bindings.
    assert "bindings (main.cpp line 7): error: 'g' was not declared" in reason
    assert "note:" not in reason and "In function" not in reason


def test_ptxas_linker_and_load_errors_are_kept() -> None:
    log = (
        "ptxas error   : Entry function 'k' uses too much shared data (0x20000 bytes, 0xc000 max)\n"
        "ImportError: /cache/units/ab/ext/cd/scale_add_0123.so: undefined symbol: _Z9scale_addv\n"
    )
    reason = trim_diagnostics(log, LAYOUT)
    assert "uses too much shared data" in reason
    assert "undefined symbol: _Z9scale_addv" in reason


def test_nvrtc_errors_map_to_the_modules_code() -> None:
    log = (
        '/tmp/tmpa/5f3e0c.cubin.cu(4): error: expected a ";"\n'
        "      out[i] = x[i]\n"
        "                   ^\n\n"
        '1 error detected in the compilation of "5f3e0c.cubin.cu".\n'
    )
    reason = trim_diagnostics(log, {}, default=SourceFile(label="code", lines=9))
    assert reason.splitlines()[0] == 'code line 4: error: expected a ";"'


def test_many_errors_are_counted_and_the_reason_is_short() -> None:
    log = "".join(f'/b/cuda.cu({i}): error: identifier "v{i}" is undefined\n' for i in range(50))
    reason = trim_diagnostics(log, LAYOUT, max_errors=5)
    assert reason.count("error:") == 5
    assert reason.endswith("[... and 45 more errors]")
    long_reason = trim_diagnostics(log * 40, LAYOUT, max_errors=10_000, limit_chars=500)
    assert len(long_reason) < 600 and long_reason.endswith("characters ...]")


def test_a_log_without_recognised_errors_keeps_its_tail() -> None:
    log = "\n".join(f"line {i}" for i in range(100)) + "\nSomething broke in /x/site-packages/y.py"
    reason = trim_diagnostics(log, LAYOUT)
    assert reason.splitlines()[-1] == "Something broke in y.py"
    assert len(reason.splitlines()) == 20


# -- Environments ---------------------------------------------------------------------------


def test_the_build_environment_hides_the_gpu_and_fixes_the_arch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("GAUNTLET_SECRET_SEED", "1234")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    env = build_environment(tmp_path, "9.0")
    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path)
    assert env["TORCH_EXTENSIONS_DIR"].startswith(str(tmp_path))
    assert env["CUPY_CACHE_DIR"].startswith(str(tmp_path))
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert "GAUNTLET_SECRET_SEED" not in env and "OPENAI_API_KEY" not in env


def test_the_run_environment_keeps_the_builds_arch_and_a_private_cupy_cache(
    tmp_path: Path,
) -> None:
    manifest = RunManifest(
        arch_list="9.0",
        task_root="/t",
        submission_file="/s/kernel.py",
        uses_cupy=True,
        units=[],
        toolchain={},
    )
    env = run_environment(manifest, tmp_path, "/usr/bin")
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert env["CUPY_CACHE_DIR"] == str(tmp_path / "cupy-kernel-cache")
    assert env["PATH"] == os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin"])


def test_a_cpu_device_has_no_arch_to_build_for() -> None:
    with pytest.raises(ConfigError, match="not one here"):
        cuda_build.arch_list_for("cpu")


# -- Guards ---------------------------------------------------------------------------------


def guard(task: Task, text: str) -> str | None:
    from gauntlet.judge.python_backend import PythonBackend

    return PythonBackend().guard(task, Submission({"kernel.py": text}, Path(".")))


@pytest.mark.parametrize(
    "path",
    [TASK_DIR / "expert" / "kernel.py", VARIANTS / "model_new.py", VARIANTS / "cupy_nvrtc.py"],
    ids=lambda p: p.stem,
)
def test_both_cuda_styles_pass_the_guards(path: Path) -> None:
    assert guard(cuda_task(), path.read_text()) is None


def test_the_baseline_passes_the_guards_too() -> None:
    task = cuda_task()
    assert guard(task, (TASK_DIR / "baseline.py").read_text()) is None


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("import os\n", "importing 'os' is not allowed"),
        ("import numpy\n", "importing 'numpy' is not allowed"),
        ("import ctypes\n", "importing 'ctypes' is not allowed"),
        ("from cuda.bindings import driver\n", "importing 'cuda.bindings' is not allowed"),
        ("import torch\ns = torch.cuda.Stream()\n", "torch.cuda.Stream"),
        ("import torch.utils.cpp_extension as c\nc.load('x', ['x.cu'])\n", "'c.load'"),
    ],
)
def test_cuda_guards_still_refuse_the_way_around(text: str, finding: str) -> None:
    found = guard(cuda_task(), text)
    assert found is not None and finding in found


def test_cuda_imports_are_only_for_cuda_submissions() -> None:
    assert "cupy" in guards.ALLOWED_IMPORTS["cuda"]
    assert "cupy" not in guards.ALLOWED_IMPORTS["triton"]
    assert "torch.utils.cpp_extension" not in guards.ALLOWED_IMPORTS["torch"]


# -- The build process and the cache --------------------------------------------------------


def test_prebuild_runs_the_guards_before_building(tmp_path: Path, cache: Path) -> None:
    folder = submission_dir(tmp_path, "import os\nfrom torch.utils.cpp_extension import x\n")
    result = prebuild(cuda_task(), folder, arch_list="9.0")
    assert not result.ok and result.failure == "rejected"
    assert "importing 'os' is not allowed" in result.reason
    assert not cache.exists()


def test_a_submission_without_load_inline_needs_no_build_process(
    tmp_path: Path, cache: Path
) -> None:
    task = without_baseline(cuda_task())
    folder = submission_dir(tmp_path, (VARIANTS / "cupy_nvrtc.py").read_text())
    result = prebuild(task, folder, arch_list="9.0")
    assert result.ok, result.reason
    assert "CuPy (NVRTC) kernels compile in the GPU worker" in result.log
    units = list((cache / "cuda" / "units").iterdir())
    assert len(units) == 1
    record = UnitRecord.model_validate_json((units[0] / "record.json").read_text())
    assert record.ok and record.role == "submission" and not record.extensions
    assert not list((cache / "cuda" / "staging").iterdir())


def test_build_writes_the_run_manifest(tmp_path: Path, cache: Path) -> None:
    task = without_baseline(cuda_task())
    text = (VARIANTS / "cupy_nvrtc.py").read_text()
    folder = tmp_path / "artifact"
    folder.mkdir()
    (folder / "kernel.py").write_text(text)
    result = cuda_build.build(
        task, Submission({"kernel.py": text}, folder), folder, "cuda:0", arch_list="9.0"
    )
    assert result.ok and result.artifact == folder
    manifest = RunManifest.model_validate_json((folder / MANIFEST_NAME).read_text())
    assert manifest.arch_list == "9.0" and manifest.uses_cupy
    assert manifest.task_root == str(task.root.resolve())
    assert [u.role for u in manifest.units] == ["submission"]
    # A spare's slot holds copies of the task code and the submission: the manifest follows.
    slot = tmp_path / "slot"
    (slot / "task").mkdir(parents=True)
    cuda_build.relocate_manifest(
        folder, task_root=slot / "task", submission_file=slot / "submission" / "kernel.py"
    )
    moved = RunManifest.model_validate_json((folder / MANIFEST_NAME).read_text())
    assert moved.task_root == str((slot / "task").resolve())
    assert moved.submission_file == str(slot / "submission" / "kernel.py")
    assert moved.units == manifest.units and moved.arch_list == manifest.arch_list


def test_a_hanging_build_is_a_timeout_and_is_not_cached(tmp_path: Path, cache: Path) -> None:
    text = "from torch.utils.cpp_extension import load_inline\n\nwhile True:\n    pass\n"
    folder = submission_dir(tmp_path, text)
    started = time.monotonic()
    result = prebuild(without_baseline(cuda_task()), folder, arch_list="9.0", timeout_s=8)
    assert time.monotonic() - started < 30
    assert not result.ok and result.failure == "timeout"
    assert "did not finish within 8 s" in result.reason
    assert not (cache / "cuda" / "units").exists()
    assert not list((cache / "cuda" / "staging").iterdir())


def test_an_import_that_needs_the_gpu_is_left_to_the_gpu_worker(
    tmp_path: Path, cache: Path
) -> None:
    text = (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
        "_TABLE = torch.ones(4, device='cuda')\n"
    )
    folder = submission_dir(tmp_path, text)
    result = prebuild(without_baseline(cuda_task()), folder, arch_list="9.0")
    assert result.ok, result.reason
    assert "the GPU worker imports it again" in result.log
    assert "_TABLE = torch.ones" in result.log


def unit_folder(staging: Path, record: UnitRecord) -> Path:
    staging.mkdir(parents=True)
    for key, extension in record.extensions.items():
        (staging / "ext" / key).mkdir(parents=True)
        (staging / "ext" / key / extension.file).write_text("library")
    return staging


def test_concurrent_builds_of_one_unit_keep_the_first(tmp_path: Path) -> None:
    key = "a" * 64
    first = UnitRecord(
        role="submission",
        ok=True,
        log="first",
        extensions={key: ExtensionRecord(name="ext_a", file="ext_a.so")},
    )
    second = first.model_copy(update={"log": "second"})
    target = tmp_path / "units" / "k"
    kept = cuda_build._commit(unit_folder(tmp_path / "s1", first), first, target)
    assert kept.log == "first"
    kept = cuda_build._commit(unit_folder(tmp_path / "s2", second), second, target)
    assert kept.log == "first"
    assert not (tmp_path / "s2").exists()
    assert json.loads((target / "record.json").read_text())["log"] == "first"


def test_a_broken_cache_entry_is_replaced(tmp_path: Path) -> None:
    key = "b" * 64
    record = UnitRecord(
        role="submission", ok=True, extensions={key: ExtensionRecord(name="e", file="e.so")}
    )
    target = tmp_path / "units" / "k"
    cuda_build._commit(unit_folder(tmp_path / "s1", record), record, target)
    (target / "ext" / key / "e.so").unlink()  # someone cleaned the cache halfway
    fresh = record.model_copy(update={"log": "fresh"})
    assert cuda_build._commit(unit_folder(tmp_path / "s2", fresh), fresh, target).log == "fresh"
    assert (target / "ext" / key / "e.so").is_file()


# -- The load_inline wrapper, with a stand-in for PyTorch's -----------------------------------


class FakeLoadInline:
    """Records calls and mimics load_inline's side effects: it inserts into list arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self,
        name: str,
        cpp_sources: Any,
        cuda_sources: Any = None,
        functions: Any = None,
        extra_cuda_cflags: Any = None,
        build_directory: str | None = None,
        verbose: bool = False,
        is_python_module: bool = True,
    ) -> Any:
        if isinstance(cpp_sources, list):
            cpp_sources.insert(0, "#include <torch/extension.h>")
        self.calls.append({"name": name, "build_directory": build_directory})
        if "broken" in str(cuda_sources):
            raise RuntimeError(
                f"Error building extension '{name}': {build_directory}/cuda.cu(5)"
                ': error: identifier "broken" is undefined'
            )
        assert build_directory is not None
        library = Path(build_directory) / f"{name}.so"
        library.write_text("library")
        return types.SimpleNamespace(__file__=str(library))


def wrapper(tmp_path: Path, units: list[UnitRef] | None = None) -> cuda_build._Extensions:
    return cuda_build._Extensions(
        mode="build", arch_list="9.0", units=units or [], staging=tmp_path / "staging"
    )


def test_the_wrapper_builds_under_a_name_unique_to_the_content(tmp_path: Path) -> None:
    fake = FakeLoadInline()
    extensions = wrapper(tmp_path)
    sources = ["torch::Tensor f(torch::Tensor x);"]
    extensions.load(
        fake, inspect.signature(fake), ("scale_add", sources), {"cuda_sources": "k1"}, None
    )
    extensions.load(
        fake, inspect.signature(fake), ("scale_add", sources), {"cuda_sources": "k2"}, None
    )
    names = [c["name"] for c in fake.calls]
    assert len(set(names)) == 2 and all(n.startswith("scale_add_") for n in names)
    assert sources == ["torch::Tensor f(torch::Tensor x);"]  # the caller's list is untouched
    for call in fake.calls:
        assert Path(call["build_directory"]).parent == tmp_path / "staging" / "ext"
    assert {r.name for r in extensions.built.values()} == set(names)
    assert {r.file for r in extensions.built.values()} == {f"{n}.so" for n in names}


def test_the_same_call_twice_builds_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLoadInline()
    extensions = wrapper(tmp_path)
    loaded: list[Path] = []
    monkeypatch.setattr(cuda_build, "_import_extension", lambda folder, rec: loaded.append(folder))
    for _ in range(2):
        extensions.load(fake, inspect.signature(fake), ("e", ["int f();"]), {}, None)
    assert len(fake.calls) == 1 and len(loaded) == 1


def test_a_failed_build_is_recorded_with_where_the_sources_lie(tmp_path: Path) -> None:
    fake = FakeLoadInline()
    extensions = wrapper(tmp_path)
    with pytest.raises(RuntimeError, match="broken"):
        extensions.load(
            fake,
            inspect.signature(fake),
            ("e", "int f();\nint g();"),
            {"cuda_sources": ["broken", "x"]},
            None,
        )
    (failure,) = extensions.failures
    assert failure.name == "e"
    assert failure.files["main.cpp"].lines == 2 and failure.files["main.cpp"].header_lines == 1
    assert failure.files["cuda.cu"].lines == 2 and failure.files["cuda.cu"].header_lines == 3
    reason = cuda_build._failure_reason(failure, "9.0", 0)
    assert 'cuda_sources line 2: error: identifier "broken" is undefined' in reason
    assert reason.startswith("load_inline(name='e') did not build for TORCH_CUDA_ARCH_LIST=9.0")


def test_task_code_is_served_only_from_the_baseline_unit(tmp_path: Path) -> None:
    key = "c" * 64
    record = ExtensionRecord(name="scale_add_c", file="scale_add_c.so")
    baseline = UnitRef(role="baseline", folder=str(tmp_path / "b"), extensions={})
    submission = UnitRef(role="submission", folder=str(tmp_path / "s"), extensions={key: record})
    extensions = cuda_build._Extensions(
        mode="run", arch_list="9.0", units=[baseline, submission], trusted_root=tmp_path / "task"
    )
    # A library a submission's build placed under the baseline's key never reaches task code.
    assert (
        extensions._find(key, trusted=extensions._is_trusted(str(tmp_path / "task" / "b.py")))
        is None
    )
    found = extensions._find(key, trusted=extensions._is_trusted(str(tmp_path / "kernel.py")))
    assert found == (tmp_path / "s" / "ext" / key, record)


def test_prepare_run_without_a_manifest_changes_nothing(tmp_path: Path) -> None:
    from torch.utils import cpp_extension

    before = cpp_extension.load_inline
    cuda_build.prepare_run(tmp_path)
    assert cpp_extension.load_inline is before


def test_prepare_run_sets_the_environment_and_serves_load_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "load_inline", cpp_extension.load_inline)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0")
    monkeypatch.setenv("CUPY_CACHE_DIR", "/elsewhere")
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))
    manifest = RunManifest(
        arch_list="9.0",
        task_root=str(tmp_path),
        submission_file=str(tmp_path / "kernel.py"),
        uses_cupy=False,
        units=[],
        toolchain=cuda_build.toolchain(),
    )
    (tmp_path / MANIFEST_NAME).write_text(manifest.model_dump_json())
    original = cpp_extension.load_inline

    def asked_again() -> dict[str, str]:
        raise AssertionError("a GPU worker reads the build's toolchain from the manifest")

    monkeypatch.setattr(cuda_build, "toolchain", asked_again)
    cuda_build.prepare_run(tmp_path)
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert os.environ["CUPY_CACHE_DIR"] == str(tmp_path / "cupy-kernel-cache")
    assert cpp_extension.load_inline is not original
    assert cpp_extension.load_inline.__wrapped__ is original  # type: ignore[attr-defined]


# -- Class entries (KernelBench's ModelNew), on the CPU device --------------------------------

MODEL_NEW_TRITON = """\
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = 256

    def forward(self, x, y, alpha):
        out = torch.empty_like(x)
        n = x.numel()
        _scale_add[(triton.cdiv(n, self.block),)](x, y, out, n, alpha, BLOCK=self.block)
        return out
"""


def test_a_class_entry_is_instantiated_once_and_called(tmp_path: Path) -> None:
    task = SCALE_ADD()
    task = with_spec(task, submission=task.spec.submission.model_copy(update={"entry": "ModelNew"}))
    (tmp_path / "kernel.py").write_text(MODEL_NEW_TRITON)
    verdict = judge(task, tmp_path, device="cpu", seed=4, mode="feedback")
    assert verdict.status == "pass", verdict.reason


# -- A real C++ extension end to end, on this machine's CPU (slow: g++ on torch's headers) --

CPP_KERNEL = '''\
import torch
from torch.utils.cpp_extension import load_inline

_CPP = """
torch::Tensor scale_add(torch::Tensor x, torch::Tensor y, double alpha) {
    return x * alpha + y;
}
"""

_EXT = load_inline(name="scale_add", cpp_sources=_CPP, functions=["scale_add"])


def scale_add(x, y, alpha):
    return _EXT.scale_add(x, y, alpha)
'''

RUN_FROM_CACHE = """
import json, sys, time
from pathlib import Path
started = time.monotonic()
from gauntlet.judge import cuda_build
folder = Path(sys.argv[1])
cuda_build.prepare_run(folder)
import importlib.util, torch
spec = importlib.util.spec_from_file_location("kernel_submission", folder / "kernel.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
out = module.scale_add(torch.ones(3), torch.ones(3), 2.0)
print(json.dumps({"out": out.tolist(), "seconds": time.monotonic() - started}))
"""


@pytest.mark.slow
def test_a_cpp_extension_builds_once_and_loads_from_the_cache(tmp_path: Path, cache: Path) -> None:
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("needs ninja and a C++ compiler")
    task = without_baseline(cuda_task())
    source = submission_dir(tmp_path, CPP_KERNEL)
    cold = prebuild(task, source, arch_list="9.0")
    assert cold.ok, cold.reason + cold.log
    started = time.monotonic()
    warm = prebuild(task, source, arch_list="9.0")
    assert warm.ok and time.monotonic() - started < 2.0
    # The judge's build gate finds the unit; a fresh process loads the library without g++.
    folder = tmp_path / "artifact"
    folder.mkdir()
    (folder / "kernel.py").write_text(CPP_KERNEL)
    result = cuda_build.build(
        task, Submission({"kernel.py": CPP_KERNEL}, folder), folder, "cuda:0", arch_list="9.0"
    )
    assert result.ok
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    finished = process.run(
        [sys.executable, "-c", RUN_FROM_CACHE, str(folder)], timeout_s=60, env=env
    )
    assert finished.returncode == 0, finished.stderr
    answer = json.loads(finished.stdout.strip().splitlines()[-1])
    assert answer["out"] == [3.0, 3.0, 3.0]
    assert "not built ahead" not in finished.stderr
    assert answer["seconds"] < 15  # a compile takes about 40 s here
    # A g++ error comes back placed in the agent's cpp_sources.
    broken = submission_dir(tmp_path, CPP_KERNEL.replace("x * alpha", "xx * alpha"))
    failed = prebuild(task, broken, arch_list="9.0")
    assert not failed.ok and failed.failure == "build_error"
    # (gcc quotes with ' or with ‘’, by locale)
    assert "cpp_sources line 3: error: " in failed.reason
    assert "xx" in failed.reason and "was not declared in this scope" in failed.reason
    assert "xx" in failed.log


# -- On a real GPU (--gpu): the lead runs these on an H100 -----------------------------------


@pytest.fixture(scope="module")
def gpu_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A build cache of this test session's own, shared by its xdist workers.

    These tests build the same units (the fixture task's baseline, its expert), tens of
    seconds of nvcc each: a folder per worker built them again in every worker the tests
    were spread over, on the cores the rest of the GPU tier's judgments need. Concurrent
    builds of one unit are safe (`cuda_build.py`: the first rename into the cache wins).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder = root / "cuda-cache"
    folder.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settings, "CACHE_DIR", folder)
        yield folder


def cuda_source_line(text: str, needle: str) -> int:
    """The line of `needle` inside the `_CUDA = r\"\"\"...\"\"\"` string (1 = its first line)."""
    body = text.split('_CUDA = r"""', 1)[1].split('"""', 1)[0]
    return next(i for i, line in enumerate(body.split("\n"), 1) if needle in line)


@pytest.mark.gpu
def test_gpu_load_inline_expert_passes_and_the_gpu_never_compiles(gpu_cache: Path) -> None:
    task = cuda_task()
    verdict = judge(
        task, TASK_DIR / "expert", device="cuda:0", seed=3, time_cap_s=VERDICT_TIME_CAP_S
    )
    assert verdict.status == "pass", verdict.reason
    assert verdict.timed and all(c.timing is not None for c in verdict.configs)
    assert "not built ahead" not in verdict.stderr
    arch, tools = cuda_build.arch_list_for("cuda:0"), cuda_build.toolchain()
    expert = {"kernel.py": (TASK_DIR / "expert" / "kernel.py").read_text()}
    baseline = {"baseline.py": (TASK_DIR / "baseline.py").read_text()}
    for files, role in ((expert, "submission"), (baseline, "baseline")):
        folder = gpu_cache / "cuda" / "units" / unit_key(files, role, arch, tools)  # type: ignore[arg-type]
        record = UnitRecord.model_validate_json((folder / "record.json").read_text())
        assert record.ok and len(record.extensions) == 1
        (extension,) = record.extensions.values()
        assert extension.name.startswith("scale_add_")


@pytest.mark.gpu
def test_gpu_a_submission_keeping_the_baseline_name_runs_its_own_kernel(
    gpu_cache: Path, tmp_path: Path
) -> None:
    # Wrong on purpose (x * alpha - y) under the baseline's extension name: were the baseline's
    # module served for it, it would pass.
    text = (TASK_DIR / "expert" / "kernel.py").read_text()
    wrong = text.replace("+ static_cast<float>(y[i])", "- static_cast<float>(y[i])")
    assert wrong != text
    (tmp_path / "kernel.py").write_text(wrong)
    verdict = judge(cuda_task(), tmp_path, device="cuda:0", seed=3, mode="feedback")
    assert verdict.status == "incorrect", verdict.reason


@pytest.mark.gpu
def test_gpu_kernelbench_model_new_passes(gpu_cache: Path, tmp_path: Path) -> None:
    task = cuda_task()
    task = with_spec(task, submission=task.spec.submission.model_copy(update={"entry": "ModelNew"}))
    shutil.copyfile(VARIANTS / "model_new.py", tmp_path / "kernel.py")
    verdict = judge(task, tmp_path, device="cuda:0", seed=3, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    assert "not built ahead" not in verdict.stderr


@pytest.mark.gpu
def test_gpu_a_warm_judge_starts_no_cuda_candidate_cold(
    gpu_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The prebuilt units' manifest is pointed at the slot's copies, so a spare serves it.
    cold: list[str] = []
    start = python_backend._Worker.start.__func__  # type: ignore[attr-defined]

    def counted(
        cls: type, /, request: protocol.WorkerRequest, *args: object, **kwargs: object
    ) -> object:
        cold.append(request.role)
        return start(cls, request, *args, **kwargs)

    monkeypatch.setattr(python_backend._Worker, "start", classmethod(counted))
    with Judge(device="cuda:0", workdir=tmp_path / "spares") as warm:
        warm.warm("cuda:0", wait_s=120)
        verdict = warm.eval(cuda_task(), TASK_DIR / "expert", seed=17, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    assert "not built ahead" not in verdict.stderr
    assert "candidate" not in cold


@pytest.mark.gpu
def test_gpu_cupy_nvrtc_submission_passes(gpu_cache: Path, tmp_path: Path) -> None:
    shutil.copyfile(VARIANTS / "cupy_nvrtc.py", tmp_path / "kernel.py")
    verdict = judge(cuda_task(), tmp_path, device="cuda:0", seed=3, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    assert verdict.timed


@pytest.mark.gpu
def test_gpu_nvcc_error_is_a_build_error_at_the_agents_line(
    gpu_cache: Path, tmp_path: Path
) -> None:
    text = (TASK_DIR / "baseline.py").read_text()
    broken = text.replace("alpha * static_cast<float>(x[i])", "alphaa * static_cast<float>(x[i])")
    assert broken != text
    (tmp_path / "kernel.py").write_text(broken)
    verdict = judge(cuda_task(), tmp_path, device="cuda:0", seed=3, mode="feedback")
    assert verdict.status == "build_error", verdict.reason
    line = cuda_source_line(broken, "alphaa")
    assert f'cuda_sources line {line}: error: identifier "alphaa" is undefined' in verdict.reason
    assert "alphaa" in verdict.stderr  # the full compiler log
    gate = verdict.gate("build")
    assert gate is not None and gate.state == "failed"


@pytest.mark.gpu
def test_gpu_nvrtc_error_is_a_build_error_at_the_agents_line(
    gpu_cache: Path, tmp_path: Path
) -> None:
    text = (VARIANTS / "cupy_nvrtc.py").read_text()
    broken = text.replace("out[i] = alpha * x[i]", "out[i] = alphaa * x[i]")
    assert broken != text
    (tmp_path / "kernel.py").write_text(broken)
    verdict = judge(cuda_task(), tmp_path, device="cuda:0", seed=3, mode="feedback")
    assert verdict.status == "build_error", verdict.reason
    body = broken.split('_SOURCE = r"""', 1)[1].split('"""', 1)[0]
    line = next(i for i, x in enumerate(body.split("\n"), 1) if "alphaa" in x)
    assert "NVRTC did not compile the cupy.RawModule created at kernel.py line" in verdict.reason
    assert f'code line {line}: error: identifier "alphaa" is undefined' in verdict.reason


@pytest.mark.gpu
def test_gpu_warm_cache_build_takes_under_two_seconds(gpu_cache: Path) -> None:
    task = cuda_task()
    first = prebuild(task, TASK_DIR / "expert", device="cuda:0")
    assert first.ok, first.reason
    started = time.monotonic()
    second = prebuild(task, TASK_DIR / "expert", device="cuda:0")
    assert second.ok and time.monotonic() - started < 2.0
    verdict = judge(task, TASK_DIR / "expert", device="cuda:0", seed=5, mode="feedback")
    gate = verdict.gate("build")
    assert verdict.status == "pass" and gate is not None and gate.duration_s < 2.0


@pytest.mark.parametrize(
    ("flags", "refused"),
    [
        ('extra_cflags=[""], extra_ldflags=[""]', False),  # as KernelBench's solutions write it
        ("extra_ldflags=[], extra_include_paths=[' ']", False),
        ("extra_ldflags=None", False),
        ('extra_ldflags=["-lcublas"]', True),
        ('extra_ldflags=["", "/tmp/libmine.so"]', True),
        ('extra_include_paths=["/usr/local/cuda/include"]', True),
        ("extra_ldflags=FLAGS", True),  # not written out: anything at run time
    ],
)
def test_flags_that_link_nothing_are_accepted(flags: str, refused: bool) -> None:
    text = (VARIANTS / "model_new.py").read_text()
    assert "name=" in text
    changed = text.replace("name=", f"{flags}, name=", 1)
    if "FLAGS" in flags:
        changed = 'FLAGS = ["-lcublas"]\n' + changed
    found = guard(cuda_task(), changed)
    if refused:
        assert found is not None and "links or includes outside code" in found, found
    else:
        assert found is None, found
