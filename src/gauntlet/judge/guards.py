"""Static exploit checks on a submission's source, before any of it runs.

Python submissions are checked on their AST against an allowlist of imports and a denylist of
constructs that JUDGE.md names: fallbacks through `try/except`, threads and processes, new
streams, patching of modules (timers, `torch.cuda`, the judge), file/network/environment access,
reflection that reaches around these rules, and imports of the task's reference or of gauntlet.
The dynamic checks in the worker (ATen dispatch watch, identity checks) back these up.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

#: Modules a Python submission may import, per language.
ALLOWED_IMPORTS: dict[str, frozenset[str]] = {
    "triton": frozenset(
        {
            "torch",
            "triton",
            "triton.language",
            "triton.language.extra",
            "triton.language.extra.libdevice",
            "math",
            "typing",
            "functools",
            "itertools",
            "operator",
            "dataclasses",
            "enum",
            "collections",
            "collections.abc",
            "__future__",
        }
    ),
}
ALLOWED_IMPORTS["torch"] = ALLOWED_IMPORTS["triton"]
# CUDA submissions (docs/cuda_submissions.md): nvcc through load_inline, KernelBench's
# `import torch.nn as nn` for `ModelNew`, and NVRTC through CuPy's raw kernels.
ALLOWED_IMPORTS["cuda"] = ALLOWED_IMPORTS["triton"] | {
    "torch.utils.cpp_extension",
    "torch.nn",
    "cupy",
}

#: Names whose use is never needed by a kernel and always a way around the rules.
FORBIDDEN_NAMES = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "__import__",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "input",
        "memoryview",
        "__builtins__",
        "__loader__",
        "__spec__",
    }
)

#: Attributes that reach interpreter internals, other modules' state or the file system.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "__dict__",
        "__class__",
        "__subclasses__",
        "__globals__",
        "__code__",
        "__closure__",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__set__",
        "__delete__",
        "__reduce__",
        "__reduce_ex__",
        "__mro__",
        "__bases__",
        "__builtins__",
        "__import__",
        "f_globals",
        "f_locals",
        "f_back",
        "gi_frame",
        "modules",
        "environ",
    }
)

#: Attributes that do a task's work, change precision or leave the measured stream.
FORBIDDEN_TORCH_ATTRIBUTES = frozenset(
    {
        "compile",
        "jit",
        "library",
        "ops",
        "backends",
        "set_default_dtype",
        "set_float32_matmul_precision",
        "Stream",
        "stream",
        "set_stream",
        "ExternalStream",
        "StreamContext",
        "cuda_graph",
        "CUDAGraph",
        "graph",
        "synchronize",
        "Event",
        "profiler",
        "hub",
        "load",
        "save",
        "from_file",
        "multiprocessing",
        "distributed",
    }
)


#: CuPy is allowed in CUDA submissions for NVRTC kernels only: these names and nothing else
#: (its array functions would call cuBLAS, its runtime could make streams).
ALLOWED_CUPY = frozenset(
    {
        "cupy.RawModule",
        "cupy.RawKernel",
        "cupy.from_dlpack",
        "cupy.cuda.ExternalStream",
        *(
            f"cupy.{t}"
            for t in ("float16", "float32", "float64", "int8", "int16", "int32", "int64")
        ),
        *(f"cupy.{t}" for t in ("uint8", "uint16", "uint32", "uint64", "bool_")),
    }
)

#: Text inside a CUDA submission's sources (C++ and CUDA in string literals) that reaches past
#: the kernel: files, processes, dynamic loading, interpreter access, own streams and threads,
#: graphs, and vendor libraries that would do the task's work.
CUDA_SOURCE_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), message)
    for pattern, message in (
        (r"\b(fopen|freopen|popen|system|execve?|execl|fork|open)\s*\(", "file or process access"),
        (r"\b(dlopen|dlsym|syscall|mmap|ptrace)\b", "dynamic loading or system calls"),
        (
            r"#\s*include\s*<(fstream|unistd\.h|dlfcn\.h|sys/[^>]*|thread|pthread\.h|future)>",
            "an include for files, processes or threads",
        ),
        (r"__attribute__\s*\(\(\s*constructor", "code that runs at load time"),
        (
            r"\b(PyRun_\w+|PyImport_\w+|py::module_?::import|py::exec|py::eval)\b",
            "access to the Python interpreter",
        ),
        (
            r"\b(cudaStreamCreate\w*|getStreamFromPool|cudaGraph\w*|std::thread|std::async|"
            r"pthread_create)\b",
            "own streams, graphs or threads",
        ),
        (
            r"\b(cublas\w*|cudnn\w*|cufft\w*|cusparse\w*|curand\w*|cutlass)\b",
            "a vendor library that does the work",
        ),
    )
)


@dataclass(frozen=True)
class Finding:
    """One violation, with its place."""

    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, col {self.col}: {self.message}"


def check_python(
    source: str,
    filename: str,
    language: str,
    forbidden_modules: Iterable[str] = (),
    allowed_calls: Iterable[str] = (),
) -> list[Finding]:
    """All static violations in one Python file (empty if it passes)."""
    tree = ast.parse(source, filename=filename)
    allowed = ALLOWED_IMPORTS.get(language, ALLOWED_IMPORTS["triton"])
    banned_modules = {m for m in forbidden_modules}
    extra = {c.rsplit(".", 1)[-1] for c in allowed_calls}
    module_aliases = _module_aliases(tree)
    findings: list[Finding] = []

    def add(node: ast.AST, message: str) -> None:
        findings.append(
            Finding(getattr(node, "lineno", 0), getattr(node, "col_offset", 0), message)
        )

    if language == "cuda":
        findings += _cuda_findings(tree, extra)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                root = name.split(".")[0]
                if name in banned_modules or root in banned_modules or root == "gauntlet":
                    add(
                        node, f"importing '{name}' is forbidden (the task's reference or the judge)"
                    )
                elif name not in allowed:
                    add(
                        node,
                        f"importing '{name}' is not allowed "
                        f"(allowed: {', '.join(sorted(allowed))})",
                    )
            if isinstance(node, ast.ImportFrom) and node.level:
                add(node, "relative imports are not allowed")
        elif isinstance(node, ast.Try | ast.TryStar):
            add(node, "try/except is not allowed: a kernel failure must surface, not fall back")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            add(node, f"'{node.id}' is not allowed in a submission")
        elif isinstance(node, ast.Attribute):
            if node.attr in FORBIDDEN_ATTRIBUTES:
                add(node, f"attribute '{node.attr}' is not allowed in a submission")
            elif (
                node.attr in FORBIDDEN_TORCH_ATTRIBUTES
                and node.attr not in extra
                and _root_module(node, module_aliases) == "torch"
            ):
                add(node, f"'{_dotted(node)}' is not allowed in a submission")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and _root_module(sub, module_aliases):
                        add(
                            sub,
                            f"assigning to '{_dotted(sub)}' patches a module; not allowed",
                        )
        elif isinstance(node, ast.Global | ast.Nonlocal):
            add(node, "global/nonlocal state is not allowed (results must not be cached)")
    return findings


def _cuda_findings(tree: ast.Module, allowed: set[str]) -> list[Finding]:
    """Rules for CUDA submissions: their C++/CUDA text, link flags and CuPy's reach."""
    findings: list[Finding] = []
    aliases = _module_aliases(tree)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for pattern, message in CUDA_SOURCE_RULES:
                match = pattern.search(node.value)
                if match and match.group(0).split("(")[0].strip() not in allowed:
                    findings.append(
                        Finding(node.lineno, node.col_offset, f"'{match.group(0)}': {message}")
                    )
        elif isinstance(node, ast.keyword) and node.arg in ("extra_ldflags", "extra_include_paths"):
            findings.append(
                Finding(
                    getattr(node.value, "lineno", 0),
                    0,
                    f"'{node.arg}' is not allowed: it links or includes outside code",
                )
            )
        elif (
            isinstance(node, ast.Attribute)
            and id(node) not in inner
            and _root_module(node, aliases) == "cupy"
        ):
            dotted = "cupy." + _dotted(node).split(".", 1)[1]
            if dotted not in ALLOWED_CUPY:
                findings.append(
                    Finding(
                        node.lineno,
                        node.col_offset,
                        f"'{dotted}' is not allowed (CuPy is for NVRTC kernels: "
                        f"{', '.join(sorted(n for n in ALLOWED_CUPY if n[5].isupper()))})",
                    )
                )
    return findings


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> root module, for every module bound by an import."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = node.module.split(".")[0]
    return aliases


def _root_module(node: ast.Attribute, aliases: dict[str, str]) -> str | None:
    base: ast.expr = node
    while isinstance(base, ast.Attribute):
        base = base.value
    if isinstance(base, ast.Name):
        return aliases.get(base.id)
    return None


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return "..."
