"""CUDA builds: nvcc runs ahead of the GPU, in a process of its own, cached by content.

A submission in language `cuda` is a Python file (the contract's `kernel.py`) that compiles its
kernels in one of two ways (docs/cuda_submissions.md):

- `torch.utils.cpp_extension.load_inline(...)`: C++ and CUDA compiled by nvcc into a PyTorch
  extension. nvcc takes tens of seconds, so it runs in a *build process* that imports the
  submission with no GPU visible (`CUDA_VISIBLE_DEVICES=""`, the target's
  `TORCH_CUDA_ARCH_LIST`) before any GPU worker starts. The GPU worker then loads the built
  libraries from the cache and never compiles.
- `cupy.RawModule` / `cupy.RawKernel`: CUDA C++ compiled by NVRTC. CuPy picks the architecture
  from the current device and loads the module into a context, so it cannot compile without a
  GPU: these compile in the GPU worker, at the moment the submission creates them (so a compile
  error is a build error, not a crash at the first call), into the worker's private cache.
  NVRTC takes well under a second for a kernel.

Every `load_inline` call is served through a wrapper the judge installs before the submission
(or the task's baseline) is imported. It keys the call by its arguments (sources, flags,
functions), the architecture and the toolchain; builds a miss into a staging folder with a
module name unique to that key (so a submission that keeps the baseline's extension name never
gets the baseline's module in a process that loads both); and serves a hit by importing the
built library directly, without ninja or nvcc.

The cache, under `settings.CACHE_DIR/cuda/`, holds one folder per *unit*: the files of a
submission (or of a task's baseline), the architecture and the toolchain, hashed::

    units/<unit key>/record.json          the build's outcome: ok, reason, log, extensions
    units/<unit key>/ext/<call key>/...   one load_inline build folder (sources, library)
    staging/<random>/                     a build in progress

A build process writes only into its own staging folder; the trusted orchestrator writes the
record there and renames the folder into `units/` (atomic; when two builds of one unit race,
the first rename wins and the other is discarded). The baseline's unit is built by a process
that runs only task code, and the task's own code (`__file__` under the task folder) is served
only from it, so no submission can place a library that the baseline's timing then loads.

Roles of this module:

- orchestrator: `build` (the build gate, called by `PythonBackend.build`) and `build_ahead`
  (the same, standalone, behind `pipeline.prebuild`: a scheduler runs it in a CPU pool ahead of
  GPU work, and the build gate then finds the unit in the cache and returns in milliseconds);
- build process: `main` (`python -m gauntlet.judge.cuda_build REQUEST_FD RESULT_FD`);
- GPU worker: `prepare_run`, called before any task or submission code is imported.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gauntlet import confine, process, settings
from gauntlet.errors import ConfigError, JudgeError
from gauntlet.judge import workers
from gauntlet.judge.backend import BuildResult, Failure, Submission
from gauntlet.judge.channel import (
    ChannelClosed,
    ChannelTimeout,
    FrameReader,
    ProtocolError,
    write_frame,
)
from gauntlet.task import Task

logger = logging.getLogger(__name__)

#: Seconds a build process may take (imports, nvcc, ninja) before the verdict is `timeout`.
BUILD_TIMEOUT_S = 600.0
#: Address-space limit of a build process and its compilers. Generous on purpose: importing
#: PyTorch's CUDA build maps several GiB of libraries, and the limit counts mappings, not use.
BUILD_MEMORY_LIMIT_BYTES = 16 << 30
#: The run manifest, written next to the submission's files for the GPU worker.
MANIFEST_NAME = ".gauntlet-cuda-build.json"
#: Version of the cache's layout and keys; a change makes every old entry a miss.
BUILD_FORMAT = 1
#: Compiler diagnostics kept in a build error's reason (the full log is kept separately).
MAX_DIAGNOSTICS = 8
REASON_LIMIT_CHARS = 3000
LOG_LIMIT_BYTES = process.OUTPUT_LIMIT_BYTES

Role = Literal["baseline", "submission"]

#: load_inline arguments that change neither what is built nor how.
_UNKEYED_ARGUMENTS = frozenset({"build_directory", "verbose"})

#: Messages of load_inline failures that are the judge machine's fault, not the submission's.
ENVIRONMENT_PROBLEMS = (
    "Ninja is required to load C++ extensions",
    "CUDA_HOME environment variable is not set",
    "Unknown CUDA arch",
    "nvcc: not found",
    "nvcc: No such file or directory",
)

_HEX_KEY = re.compile(r"^[0-9a-f]{64}$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExtensionRecord(_Model):
    """One library a `load_inline` call built, inside its unit's `ext/<call key>/` folder."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    """The module's name: the submission's extension name plus the call key's start."""
    file: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
    """The library's file name (a plain name: a build process cannot point outside)."""
    python_module: bool = True
    """False for `is_python_module=False`: loaded with `torch.ops.load_library`."""


class UnitRecord(_Model):
    """The outcome of building one unit (a submission's files, or a baseline's), cached."""

    kind: Literal["cuda_build"] = "cuda_build"
    schema_version: int = BUILD_FORMAT
    role: Role
    ok: bool
    reason: str = ""
    """The trimmed compiler diagnostics when not ok."""
    log: str = ""
    """The build's full output (compiler output, the import's traceback), cut with a marker."""
    extensions: dict[str, ExtensionRecord] = Field(default_factory=dict)
    """Call key -> the library built for it."""


class UnitRef(_Model):
    """A built unit as a worker sees it: where it lies and what it holds."""

    role: Role
    folder: str
    extensions: dict[str, ExtensionRecord]


class RunManifest(_Model):
    """What the GPU worker needs to load the prebuilt extensions (`MANIFEST_NAME`)."""

    kind: Literal["cuda_run_manifest"] = "cuda_run_manifest"
    schema_version: int = BUILD_FORMAT
    arch_list: str
    """TORCH_CUDA_ARCH_LIST the units were built for."""
    task_root: str
    """Task code (its `__file__` under this folder) is served from the baseline's unit only."""
    submission_file: str
    """The submission's main file, to name the line where a kernel was created."""
    uses_cupy: bool
    units: list[UnitRef]
    toolchain: dict[str, str]
    """The build's `toolchain()`, part of every unit's key: a GPU worker reads it here rather
    than asking nvcc again (up to a tenth of a second in every fresh worker)."""


class SourceFile(_Model):
    """A file a builder compiled, and where the agent's own text lies in it."""

    label: str
    """How the agent knows this text (`cuda_sources`, `cpp_sources`, `code`)."""
    header_lines: int = 0
    """Lines the builder put before the agent's text (includes)."""
    lines: int = 0
    """Lines of the agent's text (0: unknown); later lines are generated."""
    generated: str = ""
    """What the builder generates after the agent's text (load_inline's bindings)."""


class _Failure(_Model):
    """A load_inline call that raised in the build process."""

    name: str
    message: str
    files: dict[str, SourceFile]


class _Report(_Model):
    """The build process's one answer."""

    event: Literal["built"]
    extensions: dict[str, ExtensionRecord]
    failures: list[_Failure]
    import_error: str


# -- Keys, toolchain, architecture ----------------------------------------------------------


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def unit_key(files: Mapping[str, str], role: Role, arch_list: str, tools: Mapping[str, str]) -> str:
    """The cache key of a unit: its files' contents, role, architecture and toolchain."""
    return _digest({"files": dict(files), "role": role, "arch": arch_list, "tools": dict(tools)})


def extension_key(arguments: Mapping[str, object], arch_list: str, tools: Mapping[str, str]) -> str:
    """The cache key of one `load_inline` call: its arguments (made JSON-plain), arch, toolchain.

    `build_directory` and `verbose` do not count: they change neither what is built nor how.
    """
    plain = {k: _plain(v) for k, v in arguments.items() if k not in _UNKEYED_ARGUMENTS}
    return _digest({"arguments": plain, "arch": arch_list, "tools": dict(tools)})


def _plain(value: object) -> object:
    """A JSON-plain rendering of a load_inline argument (sources, flag lists, functions)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return repr(value)


@functools.lru_cache(maxsize=1)
def toolchain() -> dict[str, str]:
    """What a built library depends on besides its sources: PyTorch, CUDA, Python, nvcc."""
    import torch
    from torch.utils import cpp_extension

    return {
        "torch": str(torch.__version__),
        "cuda": str(torch.version.cuda),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}{sys.abiflags}",
        "nvcc": _nvcc_version(cpp_extension.CUDA_HOME),
        "format": str(BUILD_FORMAT),
    }


def _nvcc_version(cuda_home: str | None) -> str:
    if cuda_home is None:
        return "none"
    manifest = Path(cuda_home) / "version.json"
    if manifest.is_file():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        version = data.get("cuda_nvcc", {}).get("version")
        if version:
            return str(version)
    nvcc = Path(cuda_home) / "bin" / "nvcc"
    if not nvcc.is_file():
        return "none"
    finished = process.run([str(nvcc), "--version"], timeout_s=60)
    match = re.search(r"\bV(\d+(?:\.\d+)+)", finished.stdout)
    return match.group(1) if match else "unknown"


def arch_list_for(device: str) -> str:
    """TORCH_CUDA_ARCH_LIST for the GPU a device name denotes (`cuda:0` on an H100: `9.0`).

    Raises:
        ConfigError: The device is not a CUDA GPU here (pass `arch_list` to `prebuild` to
            build for a GPU elsewhere).
    """
    from gauntlet.devices import list_devices

    name = "cuda:0" if device == "cuda" else device
    if name.startswith("cuda:"):
        for info in list_devices():
            if info.name == name and "capability" in info.details:
                return info.details["capability"]
    known = [d.name for d in list_devices() if d.kind == "cuda"]
    raise ConfigError(
        f"CUDA submissions are built for a CUDA GPU; device '{device}' is not one here "
        f"(CUDA devices: {', '.join(known) or 'none'}); to build for a GPU on another machine, "
        "pass arch_list (e.g. '9.0' for sm_90) to prebuild"
    )


# -- Environments ---------------------------------------------------------------------------


def _with_python_bin(path: str) -> str:
    # PyTorch runs `ninja` from PATH; a pip-installed ninja sits next to this interpreter.
    python_bin = str(Path(sys.executable).parent)
    parts = [p for p in path.split(os.pathsep) if p]
    return os.pathsep.join([python_bin, *[p for p in parts if p != python_bin]])


def build_environment(tmp: Path, arch_list: str) -> dict[str, str]:
    """The build process's environment: a worker's scrubbed one, with no GPU and a fixed arch."""
    env = workers.worker_env(tmp)
    env.update(
        CUDA_VISIBLE_DEVICES="",
        TORCH_CUDA_ARCH_LIST=arch_list,
        TORCH_EXTENSIONS_DIR=str(tmp / "torch_extensions"),
        CUPY_CACHE_DIR=str(tmp / "cupy-kernel-cache"),
        PATH=_with_python_bin(env.get("PATH", "")),
    )
    return env


def run_environment(manifest: RunManifest, home: Path, path: str) -> dict[str, str]:
    """The variables `prepare_run` sets in a GPU worker (whose HOME is private to it).

    The architecture is the build's, so a call that was not built ahead compiles for the same
    target; CuPy's cache is the worker's own, because only trusted code writes shared caches.
    """
    return {
        "TORCH_CUDA_ARCH_LIST": manifest.arch_list,
        "CUPY_CACHE_DIR": str(home / "cupy-kernel-cache"),
        "PATH": _with_python_bin(path),
    }


# -- Compiler diagnostics -------------------------------------------------------------------

_NVCC_DIAGNOSTIC = re.compile(
    r"^(?P<path>\S[^()]*?)\((?P<line>\d+)\): (?P<severity>(?:catastrophic )?error)(?P<rest>.*)$"
)
_GCC_DIAGNOSTIC = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?P<severity>fatal error|error): "
    r"(?P<rest>.*)$"
)
_OTHER_ERROR = re.compile(
    r"ptxas (?:fatal|error)|nvcc fatal|nvlink (?:fatal|error)|undefined (?:reference|symbol)"
    r"|collect2: error|/ld: |^ld: |^\w*(?:Import|OS)Error: "
)
#: Lines after a diagnostic that quote the source (the excerpt and its caret).
_CONTEXT_LINES = 3


def trim_diagnostics(
    log: str,
    files: Mapping[str, SourceFile],
    *,
    default: SourceFile | None = None,
    max_errors: int = MAX_DIAGNOSTICS,
    limit_chars: int = REASON_LIMIT_CHARS,
) -> str:
    """The errors of a compiler log, placed in the agent's own text, without the noise.

    Keeps nvcc/NVRTC (`file(12): error: ...`) and gcc (`file:12:5: error: ...`) errors with the
    source lines they quote, and ptxas, nvcc, linker and load errors; drops warnings, command
    lines and notes. A line of a generated file is given as a line of the text the agent wrote
    (`cuda_sources line 7`), by subtracting the lines the builder put before it.

    Args:
        log: The compiler's output.
        files: Generated file name (`cuda.cu`) -> where the agent's text lies in it.
        default: For a file not in `files` and not a header (NVRTC's temporary name).
        max_errors: Errors kept; the rest are counted.
        limit_chars: Length of the result, cut with a marker.
    """
    lines = log.splitlines()
    kept: list[str] = []
    errors = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        located = _NVCC_DIAGNOSTIC.match(line) or _GCC_DIAGNOSTIC.match(line)
        if located is None and not _OTHER_ERROR.search(line):
            continue
        errors += 1
        if errors > max_errors:
            continue
        if located is None:
            kept.append(_shorten_paths(line.strip()))
            continue
        where = _where(located["path"], int(located["line"]), files, default)
        rest = located["rest"]
        text = f"{located['severity']}{rest}" if rest.startswith((":", " #")) else rest
        if located.re is _GCC_DIAGNOSTIC:
            text = f"{located['severity']}: {rest}"
        kept.append(f"{where}: {text}")
        for _ in range(_CONTEXT_LINES):
            if index < len(lines) and lines[index][:1].isspace() and lines[index].strip():
                kept.append(lines[index].rstrip())
                index += 1
    if not kept:
        tail = [_shorten_paths(x.rstrip()) for x in lines if x.strip()][-20:]
        return _cut("\n".join(tail), limit_chars)
    if errors > max_errors:
        kept.append(f"[... and {errors - max_errors} more errors]")
    return _cut("\n".join(kept), limit_chars)


def _where(
    path: str, line: int, files: Mapping[str, SourceFile], default: SourceFile | None
) -> str:
    name = path.rsplit("/", 1)[-1]
    source = files.get(name)
    if source is None and default is not None and "/include/" not in path:
        source = default
    if source is None:
        return f"{_shorten_paths(path)}:{line}"
    own = line - source.header_lines
    if own < 1:
        return f"{name}:{line} (a line the builder adds)"
    if source.lines and own > source.lines:
        what = source.generated or f"code generated after {source.label}"
        return f"{what} ({name} line {line})"
    return f"{source.label} line {own}"


def _shorten_paths(text: str) -> str:
    # PyTorch's and CUDA's headers by their place in the package, not the machine's path.
    return re.sub(r"(?:/[^\s:'\"()]*)?/(?:site|dist)-packages/", "", text)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... cut at {limit} characters ...]"


def _cap_bytes(text: str, limit: int = LOG_LIMIT_BYTES) -> str:
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", errors="replace")
    return kept + process.TRUNCATION_MARKER.format(limit=limit)


def _load_inline_files(arguments: Mapping[str, Any]) -> dict[str, SourceFile]:
    """Where the agent's sources lie in the files load_inline writes (`main.cpp`, `cuda.cu`)."""
    implicit = not arguments.get("no_implicit_headers", False)

    def count(sources: object) -> int:
        items = [sources] if isinstance(sources, str) else list(sources or [])  # type: ignore[call-overload]
        return sum(str(s).count("\n") for s in items) + len(items)

    return {
        # load_inline puts `#include <torch/extension.h>` first, and the bindings last.
        "main.cpp": SourceFile(
            label="cpp_sources",
            header_lines=1 if implicit else 0,
            lines=count(arguments.get("cpp_sources")),
            generated="the bindings load_inline generates for `functions`",
        ),
        # and three includes (torch/types.h, cuda.h, cuda_runtime.h) before the CUDA sources.
        "cuda.cu": SourceFile(
            label="cuda_sources",
            header_lines=3 if implicit else 0,
            lines=count(arguments.get("cuda_sources")),
        ),
    }


def _failure_reason(failure: _Failure, arch_list: str, others: int) -> str:
    diagnostics = trim_diagnostics(failure.message, failure.files)
    more = f" ({others} more load_inline calls failed too)" if others else ""
    return (
        f"load_inline(name='{failure.name}') did not build for TORCH_CUDA_ARCH_LIST={arch_list}"
        f"{more}:\n{diagnostics}\n(the full compiler output is in the build log)"
    )


# -- The load_inline wrapper (build process and GPU worker) ---------------------------------


#: Where a function or class the judge wraps keeps what it wraps (set again per judgment).
_ORIGINAL = "_gauntlet_original"


class _Extensions:
    """Serves `load_inline` calls from built units; in the build process, builds the misses."""

    def __init__(
        self,
        *,
        mode: Literal["build", "run"],
        arch_list: str,
        units: Sequence[UnitRef],
        staging: Path | None = None,
        trusted_root: Path | None = None,
        tools: Mapping[str, str] | None = None,
    ) -> None:
        self.mode = mode
        self.arch_list = arch_list
        self.units = list(units)
        self.staging = staging
        self.trusted_root = trusted_root
        self.built: dict[str, ExtensionRecord] = {}
        self.failures: list[_Failure] = []
        self.tools = dict(tools) if tools is not None else toolchain()

    def install(self) -> None:
        """Replace `torch.utils.cpp_extension.load_inline` (before any task code is imported)."""
        from torch.utils import cpp_extension

        # A reference worker serves one judgment after another: each judgment's wrapper wraps
        # PyTorch's own function, never an earlier judgment's (which would serve its units).
        current = cpp_extension.load_inline
        original: Callable[..., Any] = getattr(current, _ORIGINAL, current)
        signature = inspect.signature(original)

        @functools.wraps(original)
        def load_inline(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_globals.get("__file__")
            return self.load(original, signature, args, kwargs, caller)

        setattr(load_inline, _ORIGINAL, original)
        cpp_extension.load_inline = load_inline

    def load(
        self,
        original: Callable[..., Any],
        signature: inspect.Signature,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        caller: str | None,
    ) -> Any:
        """One load_inline call: from a built unit, else built here (build) or privately (run)."""
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # PyTorch reports the malformed call itself
        bound.apply_defaults()
        key = extension_key(bound.arguments, self.arch_list, self.tools)
        found = self._find(key, trusted=self._is_trusted(caller))
        if found is not None:
            return _import_extension(*found)
        if self.mode == "run":
            sys.stderr.write(
                f"gauntlet: load_inline(name='{bound.arguments.get('name')}') was not built "
                "ahead of time (not called at import, or called with other arguments); "
                "compiling it in the GPU worker\n"
            )
            return original(*args, **kwargs)
        return self._build(original, bound.arguments, key)

    def _is_trusted(self, caller: str | None) -> bool:
        if caller is None or self.trusted_root is None:
            return False
        return Path(caller).resolve().is_relative_to(self.trusted_root)

    def _find(self, key: str, *, trusted: bool) -> tuple[Path, ExtensionRecord] | None:
        for unit in self.units:
            # Task code trusts only what a process running task code alone has built.
            if trusted and unit.role != "baseline":
                continue
            record = unit.extensions.get(key)
            if record is not None:
                return Path(unit.folder) / "ext" / key, record
        if key in self.built and self.staging is not None:
            return self.staging / "ext" / key, self.built[key]
        return None

    def _build(self, original: Callable[..., Any], arguments: dict[str, Any], key: str) -> Any:
        assert self.staging is not None  # noqa: S101 - build mode always has a staging folder
        folder = self.staging / "ext" / key
        folder.mkdir(parents=True, exist_ok=True)
        name = str(arguments["name"])
        # load_inline inserts its includes into list arguments: give it copies, so a second
        # call with the same lists keys (and builds) the same as the first.
        call = {k: list(v) if isinstance(v, list) else v for k, v in arguments.items()}
        call["build_directory"] = str(folder)
        # A name unique to the content: two extensions of one name load side by side.
        call["name"] = unique = f"{name}_{key[:16]}"
        files = _load_inline_files(arguments)
        try:
            result = original(**call)
        except Exception as err:
            # The build failed (compiler, linker, loading the library): the submission's error.
            self.failures.append(
                _Failure(name=name, message=f"{type(err).__name__}: {err}", files=files)
            )
            raise
        built = Path(str(getattr(result, "__file__", None) or result)).name
        self.built[key] = ExtensionRecord(
            name=unique, file=built, python_module=bool(call.get("is_python_module", True))
        )
        return result


def _import_extension(folder: Path, record: ExtensionRecord) -> Any:
    """A built library, loaded as load_inline would: a module, or ops registered with torch."""
    path = folder / record.file
    if not record.python_module:
        import torch

        torch.ops.load_library(str(path))  # type: ignore[no-untyped-call]
        return str(path)
    spec = importlib.util.spec_from_file_location(record.name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the built extension {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- CuPy in the GPU worker -----------------------------------------------------------------


class KernelCompileError(RuntimeError):
    """A CuPy raw kernel of the submission did not compile with NVRTC."""


def _compile_cupy_eagerly(submission_file: Path) -> None:
    """Make `cupy.RawModule` and `cupy.RawKernel` compile when created, not at the first call.

    Created at import (the usual place), a kernel that does not compile then fails the import:
    a build error with NVRTC's diagnostics, not a crash in the middle of the checks.
    """
    import cupy
    from cupy.cuda.compiler import CompileException

    for name in ("RawModule", "RawKernel"):
        current = getattr(cupy, name)
        base = getattr(current, _ORIGINAL, current)
        init = _eager_init(base, CompileException, str(submission_file))
        try:
            eager = type(
                name, (base,), {"__init__": init, "__doc__": base.__doc__, _ORIGINAL: base}
            )
        except TypeError:
            logger.warning("cupy.%s cannot be subclassed; it compiles at its first call", name)
            continue
        eager.__module__ = base.__module__
        setattr(cupy, name, eager)


def _eager_init(
    base: type, compile_error: type[Exception], submission_file: str
) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)  # type: ignore[misc]
        try:
            self.compile()
        except compile_error as err:
            code = str(getattr(self, "code", "") or "")
            default = SourceFile(label="code", lines=code.count("\n") + 1)
            raise KernelCompileError(
                f"NVRTC did not compile the cupy.{base.__name__} created at "
                f"{_creation_site(submission_file)}:\n"
                + trim_diagnostics(str(err), {}, default=default)
            ) from err

    return __init__


def _creation_site(submission_file: str) -> str:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == submission_file:
            return f"{Path(submission_file).name} line {frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return Path(submission_file).name


# -- The GPU worker's side ------------------------------------------------------------------


def prepare_run(submission_dir: Path) -> None:
    """Set up a GPU worker to load the prebuilt extensions; call before any task code loads.

    Reads the run manifest the build gate wrote next to the submission's files, sets the
    environment (`run_environment`), serves `load_inline` from the built units and makes CuPy
    kernels compile when created. Without a manifest (no CUDA build ran) it changes nothing.
    """
    path = submission_dir / MANIFEST_NAME
    if not path.is_file():
        return
    manifest = RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    os.environ.update(run_environment(manifest, Path.home(), os.environ.get("PATH", "")))
    _Extensions(
        mode="run",
        arch_list=manifest.arch_list,
        units=manifest.units,
        trusted_root=Path(manifest.task_root).resolve(),
        tools=manifest.toolchain,
    ).install()
    if manifest.uses_cupy and importlib.util.find_spec("cupy") is not None:
        _compile_cupy_eagerly(Path(manifest.submission_file))


# -- The orchestrator's side ----------------------------------------------------------------


def relocate_manifest(folder: Path, *, task_root: Path, submission_file: Path) -> None:
    """Point the run manifest in `folder` at copies of the task's code and submission's file.

    A spare worker (`spares.py`) sees the task files and the built submission as copies in its
    slot; the prebuilt units stay in the shared build cache, which it sees read-only.
    """
    path = folder / MANIFEST_NAME
    if not path.is_file():
        return
    manifest = RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    moved = manifest.model_copy(
        update={"task_root": str(task_root.resolve()), "submission_file": str(submission_file)}
    )
    path.write_text(moved.model_dump_json(), encoding="utf-8")


def _cache_root() -> Path:
    return settings.CACHE_DIR / "cuda"


def _needs_build(files: Mapping[str, str]) -> bool:
    """Whether the files can reach load_inline at all (the guards admit no other way to it)."""
    return any("cpp_extension" in text for text in files.values())


def _read_record(folder: Path) -> UnitRecord | None:
    path = folder / "record.json"
    if not path.is_file():
        return None
    try:
        return UnitRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError:
        return None


def _complete(folder: Path, record: UnitRecord) -> bool:
    return all((folder / "ext" / k / e.file).is_file() for k, e in record.extensions.items())


def _commit(staging: Path, record: UnitRecord, folder: Path) -> UnitRecord:
    """Write the record into the staging folder and rename it into place (first one wins)."""
    (staging / "record.json").write_text(record.model_dump_json(), encoding="utf-8")
    folder.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            os.rename(staging, folder)
            return record
        except OSError as err:
            if not folder.exists():
                raise JudgeError(f"cannot store the CUDA build in '{folder}': {err}") from err
        existing = _read_record(folder)
        if existing is not None and _complete(folder, existing):
            shutil.rmtree(staging, ignore_errors=True)
            return existing
        # A broken entry (deleted files, an old format): move it aside and store ours.
        aside = folder.with_name(f"{folder.name}.stale-{uuid.uuid4().hex}")
        try:
            os.rename(folder, aside)
        except FileNotFoundError:
            continue  # a concurrent build moved it first
        shutil.rmtree(aside, ignore_errors=True)
    raise JudgeError(f"cannot store the CUDA build in '{folder}': another build keeps replacing it")


@dataclass(frozen=True)
class _Unit:
    """A unit built (or found in the cache), and how its build ended."""

    record: UnitRecord
    folder: Path
    failure: Failure = "build_error"
    """The verdict's status when the record is not ok."""

    def ref(self) -> UnitRef:
        return UnitRef(
            role=self.record.role, folder=str(self.folder), extensions=self.record.extensions
        )


@dataclass(frozen=True)
class _Source:
    """What a build process imports: the unit's files and its entry."""

    role: Role
    files: dict[str, str]
    main: str
    """The file to import, among `files`."""
    entry: str
    task_root: Path
    """The task's folder, which the build process must not see (expert, hidden configs)."""


def _ensure_unit(
    source: _Source,
    arch_list: str,
    readable: Sequence[UnitRef],
    timeout_s: float,
    memory_limit_bytes: int,
) -> _Unit:
    """The unit from the cache, or built by a build process and stored in the cache."""
    tools = toolchain()
    key = unit_key(source.files, source.role, arch_list, tools)
    folder = _cache_root() / "units" / key
    cached = _read_record(folder)
    if cached is not None and _complete(folder, cached):
        logger.debug("CUDA build of the %s found in the cache (%s)", source.role, key[:12])
        return _Unit(cached, folder)
    staging = _cache_root() / "staging" / uuid.uuid4().hex
    staging.mkdir(parents=True)
    if not _needs_build(source.files):
        record = UnitRecord(
            role=source.role,
            ok=True,
            log="no load_inline in the files: nothing for nvcc; CuPy (NVRTC) kernels compile "
            "in the GPU worker",
        )
        return _Unit(_commit(staging, record, folder), folder)
    try:
        record, failure = _build_unit(
            source, arch_list, readable, staging, timeout_s, memory_limit_bytes
        )
    except JudgeError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if failure != "build_error":
        # A hang or a death says nothing lasting about the files: not cached.
        shutil.rmtree(staging, ignore_errors=True)
        return _Unit(record, folder, failure)
    return _Unit(_commit(staging, record, folder), folder)


def _build_unit(
    source: _Source,
    arch_list: str,
    readable: Sequence[UnitRef],
    staging: Path,
    timeout_s: float,
    memory_limit_bytes: int,
) -> tuple[UnitRecord, Failure]:
    """Run a build process on the unit's files; its record, and the status if it failed."""
    if shutil.which("ninja", path=_with_python_bin(os.environ.get("PATH", ""))) is None:
        raise JudgeError(
            "cannot build CUDA submissions here: PyTorch's load_inline needs 'ninja', which is "
            "not on PATH (pip install ninja)"
        )
    with tempfile.TemporaryDirectory(prefix="gauntlet-cuda-build-") as tmp_name:
        tmp = Path(tmp_name)
        sources = tmp / "src"
        for name, text in source.files.items():
            target = sources / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        request = {
            "role": source.role,
            "file": str(sources / source.main),
            "entry": source.entry,
            "arch_list": arch_list,
            "staging": str(staging),
            "readable": [u.model_dump() for u in readable],
        }
        report, finished, failure, problem = _run_build_process(
            request, tmp, arch_list, timeout_s, memory_limit_bytes, source.task_root
        )
    if report is None:
        log = f"{problem}\n--- stdout ---\n{finished.stdout}\n--- stderr ---\n{finished.stderr}"
        return UnitRecord(role=source.role, ok=False, reason=problem, log=_cap_bytes(log)), failure
    for failed in report.failures:
        known = next((k for k in ENVIRONMENT_PROBLEMS if k in failed.message), None)
        if known is not None:
            raise JudgeError(
                f"cannot build CUDA submissions on this machine ({known}); "
                f"the build said:\n{_cut(failed.message, 2000)}"
            )
    record = _record(source.role, arch_list, toolchain(), report, finished)
    if not _complete(staging, record):
        problem = "the build process reported libraries that are not in its build folder"
        return UnitRecord(role=source.role, ok=False, reason=problem, log=record.log), "crash"
    return record, "build_error"


def _record(
    role: Role,
    arch_list: str,
    tools: Mapping[str, str],
    report: _Report,
    finished: process.Finished,
) -> UnitRecord:
    parts = [
        f"CUDA build of the {role}: TORCH_CUDA_ARCH_LIST={arch_list}, torch {tools['torch']}, "
        f"CUDA {tools['cuda']}, nvcc {tools['nvcc']}, Python {tools['python']}"
    ]
    for failure in report.failures:
        parts.append(f"--- load_inline(name='{failure.name}') failed ---\n{failure.message}")
    if report.import_error and not report.failures:
        parts.append(
            "--- importing without a GPU raised; the GPU worker imports it again and reports "
            f"what it raises there ---\n{report.import_error}"
        )
    for stream, text in (("stdout", finished.stdout), ("stderr", finished.stderr)):
        if text.strip():
            parts.append(f"--- {stream} ---\n{text}")
    log = _cap_bytes("\n".join(parts))
    if report.failures:
        first = report.failures[0]
        reason = _failure_reason(first, arch_list, len(report.failures) - 1)
        return UnitRecord(role=role, ok=False, reason=reason, log=log)
    return UnitRecord(role=role, ok=True, log=log, extensions=report.extensions)


def _run_build_process(
    request: dict[str, Any],
    tmp: Path,
    arch_list: str,
    timeout_s: float,
    memory_limit_bytes: int,
    task_root: Path,
) -> tuple[_Report | None, process.Finished, Failure, str]:
    """Start a build process, send the request, and wait for its report or its end.

    The process imports the submission, so it runs confined where the machine allows
    (`build_confinement`): it reads only what a build needs and writes only its folder and
    its staging folder, so a submission's code at import can neither read the task nor plant
    files in another unit of the cache.
    """
    try:
        worker = workers.WorkerHandle(
            "gauntlet.judge.cuda_build",
            env=build_environment(tmp, arch_list),
            cwd=tmp,
            memory_limit_bytes=memory_limit_bytes,
            confined=build_confinement(request, tmp, task_root),
        )
    except OSError as err:
        raise JudgeError(f"cannot start a CUDA build process: {err}") from err
    try:
        worker.send(request)
        try:
            header, _ = worker.read(time.monotonic() + timeout_s)
        except ChannelTimeout:
            finished = worker.finish()
            return (
                None,
                finished,
                "timeout",
                (
                    f"the build did not finish within {timeout_s:g} s (importing the submission "
                    "hung, or a compile never ended)"
                ),
            )
        except (ChannelClosed, ProtocolError):
            finished = worker.finish(grace_s=10)
            if finished.returncode == confine.SETUP_FAILED and "confine:" in finished.stderr:
                raise JudgeError(
                    f"cannot confine the CUDA build process: {finished.stderr.strip()[-500:]}"
                ) from None
            how = (
                f"was killed by {finished.signal_name}"
                if finished.signal_name
                else f"exited with code {finished.returncode}"
            )
            return (
                None,
                finished,
                "crash",
                (
                    f"the build process {how} while importing the {request['role']}, before "
                    "reporting"
                ),
            )
        finished = worker.finish(grace_s=10)
    finally:
        worker.close()
    try:
        report = _Report.model_validate(header)
    except ValidationError as err:
        return None, finished, "crash", f"the build process broke the build protocol: {err}"
    bad = [k for k in report.extensions if not _HEX_KEY.match(k)]
    if bad:
        return None, finished, "crash", f"the build process reported malformed keys {bad[:3]}"
    return report, finished, "build_error", ""


def build_confinement(
    request: dict[str, Any], tmp: Path, task_root: Path
) -> confine.Confinement | None:
    """What a build process sees, or None where this machine cannot confine.

    Its folder (the unit's sources) and its staging folder writable; the CUDA toolkit, ninja
    and the units it may load read-only; never the task folder.
    """
    from torch.utils import cpp_extension

    readonly = [Path(unit["folder"]) for unit in request["readable"]]
    if cpp_extension.CUDA_HOME:
        readonly.append(Path(cpp_extension.CUDA_HOME).resolve())
    ninja = shutil.which("ninja", path=_with_python_bin(os.environ.get("PATH", "")))
    if ninja is not None:
        readonly.append(Path(ninja).resolve().parent)
    writable = [tmp, Path(request["staging"])]
    shown = [p for p in readonly if p.exists()]
    return workers.confinement(shown, writable, hidden=task_root)


def _units(
    task: Task,
    files: Mapping[str, str],
    arch_list: str,
    timeout_s: float,
) -> tuple[list[UnitRef], _Unit]:
    """Build (or find) the task's baseline unit, then the submission's."""
    spec = task.spec
    memory = max(spec.memory_limit_mb << 20, BUILD_MEMORY_LIMIT_BYTES)
    refs: list[UnitRef] = []
    if spec.baseline is not None and spec.baseline.file.endswith(".py"):
        text = task.path(spec.baseline.file).read_text(encoding="utf-8")
        baseline = _ensure_unit(
            _Source(
                "baseline",
                {spec.baseline.file: text},
                spec.baseline.file,
                spec.baseline.entry,
                task.root,
            ),
            arch_list,
            [],
            timeout_s,
            memory,
        )
        if not baseline.record.ok:
            raise JudgeError(
                f"the baseline of task '{task.task_id}' does not build "
                f"({baseline.failure}):\n{baseline.record.reason}"
            )
        refs.append(baseline.ref())
    # A class the task's adapter builds per config (with init inputs) is imported, not built.
    entry = spec.submission.entry if spec.submission.adapter is None else ""
    submission = _ensure_unit(
        _Source("submission", dict(files), spec.submission.files[0], entry, task.root),
        arch_list,
        refs,
        timeout_s,
        memory,
    )
    return [*refs, submission.ref()], submission


def build(
    task: Task,
    submission: Submission,
    folder: Path,
    device: str,
    *,
    arch_list: str | None = None,
    timeout_s: float = BUILD_TIMEOUT_S,
) -> BuildResult:
    """The build gate for a CUDA submission whose files are already in `folder`.

    Builds (or finds in the cache) the baseline's and the submission's units, and writes the run
    manifest into `folder` for the GPU worker.

    Args:
        task: The task.
        submission: The submission's files.
        folder: Where the worker will import them from (the build's artifact).
        device: The device the submission will run on; its architecture is the target.
        arch_list: The target's TORCH_CUDA_ARCH_LIST, instead of the device's.
        timeout_s: Limit of each build process.

    Raises:
        ConfigError: The device is not a CUDA GPU and no `arch_list` is given.
        JudgeError: This machine cannot build (no ninja, no CUDA toolkit), or the task's
            baseline does not build.
    """
    arch = arch_list or arch_list_for(device)
    refs, unit = _units(task, submission.files, arch, timeout_s)
    record = unit.record
    if not record.ok:
        return BuildResult(
            False, reason=record.reason, log=record.log, artifact=folder, failure=unit.failure
        )
    manifest = RunManifest(
        arch_list=arch,
        task_root=str(task.root.resolve()),
        submission_file=str(folder / task.spec.submission.files[0]),
        uses_cupy=any("cupy" in text for text in submission.files.values()),
        units=refs,
        toolchain=toolchain(),
    )
    (folder / MANIFEST_NAME).write_text(manifest.model_dump_json(), encoding="utf-8")
    return BuildResult(True, log=record.log, artifact=folder)


def build_ahead(
    task: Task,
    files: Mapping[str, str],
    arch_list: str,
    timeout_s: float = BUILD_TIMEOUT_S,
) -> BuildResult:
    """Build a submission's files into the cache, with no folder to evaluate from.

    The build step of `pipeline.prebuild`, which runs the gates before it (the build imports
    the submission, so the guards must pass first).
    """
    _, unit = _units(task, files, arch_list, timeout_s)
    record = unit.record
    return BuildResult(record.ok, reason=record.reason, log=record.log, failure=unit.failure)


# -- The build process ----------------------------------------------------------------------


def _load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: Sequence[str] | None = None) -> int:
    """Build process entry point: import the unit with no GPU, so its load_inline calls build.

    Reads one request frame, imports the file (and instantiates its entry if it is a class, as
    the judge will: a KernelBench `ModelNew` may build in `__init__`), and answers with one
    frame: what was built, what failed, and the import's traceback if it raised.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    request_fd, result_fd = int(args[0]), int(args[1])
    # Nothing the submission starts may inherit either end of the channel.
    os.set_inheritable(request_fd, False)
    os.set_inheritable(result_fd, False)
    request, _ = FrameReader(request_fd).read(None)
    os.close(request_fd)
    extensions = _Extensions(
        mode="build",
        arch_list=request["arch_list"],
        units=[UnitRef.model_validate(u) for u in request["readable"]],
        staging=Path(request["staging"]),
    )
    extensions.install()
    import_error = ""
    module_name = "kernel_submission" if request["role"] == "submission" else "_gauntlet_baseline"
    try:
        module = _load_module(Path(request["file"]), module_name)
        entry = module.__dict__.get(request["entry"])
        if isinstance(entry, type):
            entry()
    except BaseException:  # noqa: BLE001 - whatever the import raises goes into the report
        import_error = traceback.format_exc()[-6000:]
    write_frame(
        result_fd,
        {
            "event": "built",
            "extensions": {k: v.model_dump() for k, v in extensions.built.items()},
            "failures": [f.model_dump() for f in extensions.failures],
            "import_error": import_error,
        },
    )
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
