"""Compile every CUDA task's shipped kernels with nvcc, on a machine without a GPU.

Each Python file is run in a child process with `torch.utils.cpp_extension.load_inline` and
CuPy's kernel classes replaced by recorders, so the sources, names and flags it would build are
captured without building or loading anything. Each captured `load_inline` call is then written
out the way `load_inline` writes it (`main.cpp` with `torch/extension.h` and the generated
pybind module, `cuda.cu` with `torch/types.h`, `cuda.h`, `cuda_runtime.h`) and compiled with
the installed PyTorch's own flags for sm_90; CuPy sources are compiled as NVRTC would see them
(no host C++ standard headers). Nothing is linked: this finds compile errors only.

    .venv/bin/python scripts/cuda_compile_check.py                 # every cuda task
    .venv/bin/python scripts/cuda_compile_check.py cuda2cuda/gemv  # some task ids
    .venv/bin/python scripts/cuda_compile_check.py --resources cuda2cuda/gemv

`--resources` also prints each kernel's registers and spills as ptxas reports them for sm_90:
a spill or a register count that caps occupancy shows before a GPU is spent on the kernel.

Exit status 1 when any file fails to compile, 2 when nvcc is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from gauntlet.suites import load_by_id, task_ids  # noqa: E402
from gauntlet.task import Task  # noqa: E402

ARCH = "90"
"""The target: an H100 (the judge sets TORCH_CUDA_ARCH_LIST=9.0 there)."""
RECORD_TIMEOUT_S = 120
COMPILE_TIMEOUT_S = 600
DIAGNOSTIC_LINES = 12

# torch.utils.cpp_extension.COMMON_NVCC_FLAGS: without them `__half` operators and conversions
# that compile in a plain nvcc build fail in the judge's build, and the other way round.
TORCH_NVCC_FLAGS = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
]

# Host standard headers NVRTC does not have (CuPy compiles raw kernels with NVRTC).
NVRTC_MISSING_HEADERS = re.compile(
    r"^\s*#\s*include\s*<(c(assert|stdio|stdlib|string|math|stdint|float|limits)|"
    r"std(io|lib|int)\.h|string\.h|iostream|vector|string|algorithm|cmath|array|limits|"
    r"type_traits|utility)>",
    re.MULTILINE,
)

# Run inside the child: install the recorders, run the file, instantiate a class entry (its
# `__init__` may call load_inline), write what was recorded as JSON.
_RECORDER = textwrap.dedent(
    '''
    import json, runpy, sys, types
    import torch.utils.cpp_extension as cpp_extension

    path, entry, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
    records = []

    class _Unbuilt:
        """What a recorder returns: any use means the file needs the GPU at import."""
        def __init__(self, what):
            self._what = what
        def __getattr__(self, name):
            raise RuntimeError(f"{self._what} was recorded, not built: .{name} is unavailable")
        def __call__(self, *args, **kwargs):
            return _Unbuilt(self._what)

    def _listed(value):
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(value)

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                    extra_cuda_cflags=None, extra_include_paths=None,
                    with_pytorch_error_handling=True, no_implicit_headers=False, **_):
        if isinstance(functions, str):
            functions = [functions]
        records.append({
            "kind": "load_inline", "name": name,
            "cpp_sources": _listed(cpp_sources), "cuda_sources": _listed(cuda_sources),
            "functions": None if functions is None else list(functions),
            "extra_cflags": _listed(extra_cflags),
            "extra_cuda_cflags": _listed(extra_cuda_cflags),
            "extra_include_paths": _listed(extra_include_paths),
            "error_handling": bool(with_pytorch_error_handling),
            "no_implicit_headers": bool(no_implicit_headers),
        })
        return _Unbuilt(f"load_inline(name={name!r})")

    def _cupy_record(kind, code, names, options):
        records.append({"kind": kind, "name": ",".join(names), "code": code,
                        "names": list(names), "options": [str(o) for o in options]})

    class RawKernel:
        def __init__(self, code, name, options=(), *args, **kwargs):
            _cupy_record("cupy.RawKernel", code, [name], options)
        def __call__(self, *args, **kwargs):
            raise RuntimeError("cupy.RawKernel was recorded, not built")

    class RawModule:
        def __init__(self, code=None, *args, options=(), name_expressions=None, **kwargs):
            if code is None:
                raise RuntimeError("RawModule(path=...) cannot be checked: pass code=")
            _cupy_record("cupy.RawModule", code, list(name_expressions or ()), options)
        def get_function(self, name):
            return _Unbuilt(f"RawModule.get_function({name!r})")

    class _UnsupportedKernel:
        def __init__(self, *args, **kwargs):
            raise RuntimeError(
                f"{type(self).__name__} is not checked by cuda_compile_check (CuPy generates "
                "its source); use RawKernel or RawModule, or extend the checker")

    class ElementwiseKernel(_UnsupportedKernel):
        pass

    class ReductionKernel(_UnsupportedKernel):
        pass

    class _FakeCupy(types.ModuleType):
        """`cupy` with the kernel classes recorded; other names are inert until called."""
        def __getattr__(self, name):
            return _Unbuilt(f"cupy.{name}")

    cupy = _FakeCupy("cupy")
    cupy.RawKernel, cupy.RawModule = RawKernel, RawModule
    cupy.ElementwiseKernel, cupy.ReductionKernel = ElementwiseKernel, ReductionKernel
    sys.modules["cupy"] = cupy
    cpp_extension.load_inline = load_inline

    namespace = runpy.run_path(path, run_name="__kernel__")
    obj = namespace.get(entry)
    if isinstance(obj, type):
        obj()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(records, f)
    '''
)


@dataclass
class Unit:
    """One compiler run: a source file and the command that compiles it."""

    label: str
    """Where the source came from (`load_inline(name='x') cuda.cu`)."""
    filename: str
    text: str
    command: list[str]
    problems: list[str] = field(default_factory=list)
    """Errors found without the compiler (NVRTC-only limitations)."""


@dataclass
class FileResult:
    """The outcome of one task file."""

    task_id: str
    role: str
    """`baseline` or `expert:<submission name>`."""
    path: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    """Per kernel: registers and spills (with `--resources`)."""
    units: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


def cuda_task_ids(root: Path | None = None) -> list[str]:
    """Ids of every task whose submissions are in language `cuda`."""
    return [t for t in task_ids(root) if load_by_id(t, root).spec.submission.language == "cuda"]


def task_files(task: Task) -> list[tuple[str, Path]]:
    """(role, path) of the task's Python files that build CUDA: its baseline and its expert."""
    spec = task.spec
    files: list[tuple[str, Path]] = []
    if spec.baseline is not None and spec.baseline.file.endswith(".py"):
        files.append(("baseline", task.path(spec.baseline.file)))
    if spec.expert is not None:
        files += [
            (f"expert:{name}", task.path(rel))
            for name, rel in spec.expert.files.items()
            if rel.endswith(".py")
        ]
    return files


def entry_of(task: Task, role: str) -> str:
    """The name the judge calls in a file of this role."""
    if role == "baseline" and task.spec.baseline is not None:
        return str(task.spec.baseline.entry)
    return str(task.spec.submission.entry)


def record(path: Path, entry: str) -> list[dict[str, Any]]:
    """Run `path` with the recorders in a child process; what it would have compiled."""
    with tempfile.TemporaryDirectory(prefix="cuda-record-") as tmp:
        out = Path(tmp) / "records.json"
        proc = subprocess.run(
            [sys.executable, "-c", _RECORDER, str(path), entry, str(out)],
            capture_output=True,
            text=True,
            timeout=RECORD_TIMEOUT_S,
            cwd=tmp,
            check=False,
        )
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-DIAGNOSTIC_LINES:])
            raise RuntimeError(f"running {path} with the recorders failed:\n{tail}")
        records: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
        return records


# Headers a CUDA build of PyTorch compiles against that this machine may lack, with stand-ins.
# ATen/cuda/CUDAContext.h includes the math libraries' headers for the handle types it
# declares; a toolkit installed without cuBLAS, cuSPARSE or cuSOLVER (this check needs only
# nvcc) lacks them, and the stand-ins declare just those types. A task that calls the libraries
# for real still fails here, as it should: their use is forbidden.
CUDA_STAND_INS = {
    "cublas_v2.h": """#pragma once
typedef struct cublasContext* cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
""",
    "cublasLt.h": "#pragma once\ntypedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusparse.h": """#pragma once
typedef struct cusparseContext* cusparseHandle_t;
typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;
const char* cusparseGetErrorString(cusparseStatus_t status);
""",
    "cusolver_common.h": """#pragma once
typedef enum { CUSOLVER_STATUS_SUCCESS = 0 } cusolverStatus_t;
""",
    "cusolverDn.h": """#pragma once
#include <cusolver_common.h>
typedef struct cusolverDnContext* cusolverDnHandle_t;
""",
}
# The CPU wheel of PyTorch ships c10/cuda's headers but not this one, which CMake generates for
# CUDA builds with exactly this content.
TORCH_STAND_INS = {
    "c10/cuda/impl/cuda_cmake_macros.h": "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n",
}


def _cuda_include() -> Path:
    nvcc = Path(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc").resolve()
    return nvcc.parents[1] / "include"


def _torch_include() -> Path:
    import torch.utils.cpp_extension as cpp_extension

    return Path(cpp_extension.__file__).resolve().parents[1] / "include"


def _stand_in_include(folder: Path) -> list[str]:
    """Write stand-ins for the headers this machine lacks; their folder, if any is needed."""
    wanted = [(_cuda_include(), CUDA_STAND_INS), (_torch_include(), TORCH_STAND_INS)]
    missing = {
        name: text
        for root, headers in wanted
        for name, text in headers.items()
        if not (root / name).is_file()
    }
    for name, text in missing.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return [str(folder)] if missing else []


def _torch_includes(stand_ins: list[str]) -> list[str]:
    """PyTorch's, CUDA's and Python's include folders, as cpp_extension passes them."""
    import torch.utils.cpp_extension as cpp_extension

    # "cpu": a CPU build of PyTorch has no CUDA_HOME to add; nvcc's own folder stands in.
    return [
        *cpp_extension.include_paths("cpu"),
        str(_cuda_include()),
        *stand_ins,
        sysconfig.get_path("include", scheme="posix_prefix"),
    ]


def _has_arch_flag(flags: Iterable[str]) -> bool:
    # cpp_extension adds no -gencode of its own when the user's flags name an architecture.
    return any(
        f.startswith(("-arch", "--gpu-architecture", "-gencode", "--generate-code")) for f in flags
    )


def load_inline_units(rec: dict[str, Any], std: str, stand_ins: list[str]) -> list[Unit]:
    """The two files `load_inline` writes for a call, with the commands its build runs."""
    name = rec["name"]
    implicit = not rec["no_implicit_headers"]
    cpp = (["#include <torch/extension.h>"] if implicit else []) + rec["cpp_sources"]
    functions = rec["functions"]
    if functions is not None:
        wrap = "torch::wrap_pybind_function({0})" if rec["error_handling"] else "{0}"
        cpp.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
        cpp += [f'm.def("{f}", {wrap.format(f)}, "{f}");' for f in functions]
        cpp.append("}")
    includes = [f"-I{p}" for p in rec["extra_include_paths"]]
    includes += [arg for p in _torch_includes(stand_ins) for arg in ("-isystem", p)]
    defines = [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    # -fsyntax-only: host C++ errors are all we want from the .cpp, and it halves the time.
    cpp_cmd = ["g++", "-fsyntax-only", "-x", "c++", *defines, *includes, "-fPIC", f"-std={std}"]
    units = [
        Unit(
            f"load_inline(name={name!r}) main.cpp",
            "main.cpp",
            "\n".join(cpp),
            cpp_cmd + rec["extra_cflags"],
        )
    ]
    if rec["cuda_sources"]:
        headers = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
        cu = (headers if implicit else []) + rec["cuda_sources"]
        extra = rec["extra_cuda_cflags"]
        arch = [] if _has_arch_flag(extra) else [f"-gencode=arch=compute_{ARCH},code=sm_{ARCH}"]
        cu_cmd = [
            "nvcc",
            "-c",
            *defines,
            *includes,
            *TORCH_NVCC_FLAGS,
            *arch,
            "--compiler-options",
            "-fPIC",
            *extra,
        ]
        if not any(f.startswith("-std=") for f in cu_cmd):
            cu_cmd.append(f"-std={std}")
        units.append(Unit(f"load_inline(name={name!r}) cuda.cu", "cuda.cu", "\n".join(cu), cu_cmd))
    return units


def cupy_unit(rec: dict[str, Any]) -> Unit:
    """A CuPy raw module compiled as NVRTC would: device code only, names unmangled."""
    code: str = rec["code"]
    options = [o for o in rec["options"] if not o.startswith(("-arch", "--gpu-architecture"))]
    cmd = ["nvcc", "-c", "-x", "cu", f"-arch=sm_{ARCH}", "-std=c++17", *options]
    unit = Unit(f"{rec['kind']}({rec['name']!r})", "kernel.cu", code, cmd)
    for match in NVRTC_MISSING_HEADERS.finditer(code):
        unit.problems.append(f"NVRTC has no host standard headers: {match.group(0).strip()}")
    if rec["kind"] == "cupy.RawKernel" and 'extern "C"' not in code:
        unit.problems.append(
            f'kernel {rec["name"]!r} is not declared extern "C": CuPy looks it up unmangled'
        )
    return unit


def compile_unit(unit: Unit, cache: dict[str, tuple[int, str]]) -> tuple[int, str]:
    """Run the compiler on a unit; identical (text, command) pairs are compiled once."""
    key = hashlib.sha256(json.dumps([unit.text, unit.command]).encode()).hexdigest()
    if key in cache:
        return cache[key]
    with tempfile.TemporaryDirectory(prefix="cuda-check-") as tmp:
        src = Path(tmp) / unit.filename
        src.write_text(unit.text, encoding="utf-8")
        cmd = [*unit.command, str(src)]
        if "-c" in cmd:
            cmd += ["-o", str(Path(tmp) / "out.o")]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, cwd=tmp, timeout=COMPILE_TIMEOUT_S, check=False
        )
        output = (proc.stdout + proc.stderr).replace(str(src), unit.filename)
    cache[key] = (proc.returncode, output)
    return cache[key]


def _diagnostics(output: str, marker: str) -> list[str]:
    """The compiler's lines that carry `marker` (` error`, ` warning`), each with its context."""
    lines = output.splitlines()
    picked: list[str] = []
    for i, line in enumerate(lines):
        if marker in line:
            picked += lines[i : i + 3]
    return picked[:DIAGNOSTIC_LINES] or lines[-DIAGNOSTIC_LINES:]


@dataclass
class Build:
    """What every file of one check shares: the C++ standard, stand-in headers, compiled units."""

    std: str
    stand_ins: list[str]
    resources: bool = False
    """Ask ptxas for each kernel's registers and spills."""
    cache: dict[str, tuple[int, str]] = field(default_factory=dict)


def check_file(task: Task, role: str, path: Path, build: Build) -> FileResult:
    """Record one file's CUDA sources and compile each."""
    result = FileResult(task.task_id, role, path)
    try:
        records = record(path, entry_of(task, role))
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        result.errors.append(str(err))
        return result
    if not records:
        result.errors.append(f"{path} builds no CUDA (no load_inline or CuPy raw kernel ran)")
        return result
    units = [
        u
        for rec in records
        for u in (
            load_inline_units(rec, build.std, build.stand_ins)
            if rec["kind"] == "load_inline"
            else [cupy_unit(rec)]
        )
    ]
    result.units = len(units)
    for unit in units:
        if build.resources and unit.command[0] == "nvcc":
            unit.command = [*unit.command, "-Xptxas=-v"]
        result.errors += [f"{unit.label}: {p}" for p in unit.problems]
        try:
            rc, output = compile_unit(unit, build.cache)
        except subprocess.TimeoutExpired:
            result.errors.append(f"{unit.label}: the compiler ran past {COMPILE_TIMEOUT_S} s")
            continue
        if rc != 0:
            body = "\n".join(_diagnostics(output, "error"))
            result.errors.append(f"{unit.label} (exit {rc}):\n{body}")
            continue
        result.resources += kernel_resources(output)
        if "warning" in output:
            result.warnings.append(f"{unit.label}:\n" + "\n".join(_diagnostics(output, "warning")))
    return result


PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
PTXAS_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
PTXAS_REGISTERS = re.compile(r"Used (\d+) registers")


def kernel_resources(output: str) -> list[str]:
    """One line per kernel from ptxas's `-v` report: name, registers, spills."""
    names: list[str] = []
    registers: dict[int, str] = {}  # by kernel index: what ptxas reports after its entry line
    spills: dict[int, str] = {}
    for line in output.splitlines():
        if entry := PTXAS_ENTRY.search(line):
            names.append(entry.group(1))
        elif names and (found := PTXAS_SPILLS.search(line)):
            stores, loads = found.groups()
            spilled = "none" if stores == loads == "0" else f"{stores} B stored, {loads} B loaded"
            spills[len(names) - 1] = spilled
        elif names and (used := PTXAS_REGISTERS.search(line)):
            registers[len(names) - 1] = used.group(1)
    return [
        f"{shown}: {registers.get(i, '?')} registers, spills {spills.get(i, '?')}"
        for i, shown in enumerate(_demangle(names))
    ]


def _demangle(names: list[str]) -> list[str]:
    """C++ names as written (through c++filt when it is installed), else as mangled."""
    tool = shutil.which("c++filt")
    if not names or tool is None:
        return names
    proc = subprocess.run(
        [tool], input="\n".join(names), capture_output=True, text=True, check=False
    )
    shown = proc.stdout.splitlines()
    return shown if proc.returncode == 0 and len(shown) == len(names) else names


def torch_std() -> str:
    """The C++ standard the installed PyTorch's cpp_extension builds extensions with."""
    import torch.utils.cpp_extension as cpp_extension

    # Not exposed as a constant; newer releases moved from c++17 to c++20.
    source = Path(cpp_extension.__file__).read_text(encoding="utf-8")
    return "c++20" if "'-std=c++20'" in source else "c++17"


def iter_checks(
    ids: Sequence[str] | None = None,
    jobs: int = 2,
    std: str | None = None,
    root: Path | None = None,
    resources: bool = False,
) -> Iterator[FileResult]:
    """Compile every CUDA file of the given tasks (default: every `cuda` task), in order."""
    if shutil.which("nvcc") is None:
        raise FileNotFoundError("nvcc is not on PATH: install the CUDA toolkit to check sources")
    chosen = list(ids) if ids else cuda_task_ids(root)
    work = [
        (task, role, path)
        for task in (load_by_id(t, root) for t in chosen)
        for role, path in task_files(task)
    ]
    with tempfile.TemporaryDirectory(prefix="cuda-stand-ins-") as stand_in_dir:
        build = Build(std or torch_std(), _stand_in_include(Path(stand_in_dir)), resources)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            yield from pool.map(lambda w: check_file(w[0], w[1], w[2], build), work)


def check_tasks(
    ids: Sequence[str] | None = None,
    jobs: int = 2,
    std: str | None = None,
    root: Path | None = None,
) -> list[FileResult]:
    """`iter_checks` as a list."""
    return list(iter_checks(ids, jobs, std, root))


HEADER = f"{'task':<36} {'file':<16} {'units':>5}  status"


def format_row(r: FileResult) -> str:
    """One file's line of the table."""
    status = "ok" if r.ok else "FAIL"
    if r.ok and r.warnings:
        status += f" ({len(r.warnings)} with warnings)"
    return f"{r.task_id:<36} {r.role:<16} {r.units:>5}  {status}"


def format_details(results: Sequence[FileResult], show_warnings: bool = False) -> str:
    """Each failure's diagnostics (and warnings when asked, and kernel resources), file by file."""
    rows: list[str] = []
    for r in results:
        notes = r.errors + (r.warnings if show_warnings else []) + r.resources
        if notes:
            rows.append(f"\n== {r.task_id} {r.role} ({r.path})")
            rows += notes
    return "\n".join(rows)


def format_results(results: Sequence[FileResult], show_warnings: bool = False) -> str:
    """The table, one row a file, then the diagnostics."""
    table = "\n".join([HEADER, *(format_row(r) for r in results)])
    return f"{table}\n{format_details(results, show_warnings)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("tasks", nargs="*", help="task ids (default: every cuda task)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="files compiled at once")
    parser.add_argument(
        "--std",
        default=None,
        help="C++ standard (default: the one the installed PyTorch builds with)",
    )
    parser.add_argument("--warnings", action="store_true", help="print compiler warnings too")
    parser.add_argument(
        "--resources",
        action="store_true",
        help="print each kernel's registers and spills for sm_90 (ptxas -v)",
    )
    args = parser.parse_args(argv)
    print(HEADER, flush=True)
    results: list[FileResult] = []
    try:
        for result in iter_checks(
            args.tasks, jobs=args.jobs, std=args.std, resources=args.resources
        ):
            print(format_row(result), flush=True)
            results.append(result)
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 2
    print(format_details(results, show_warnings=args.warnings))
    failed = sum(not r.ok for r in results)
    print(f"\n{len(results) - failed}/{len(results)} files compiled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
