"""Which GPU kernels are the submission's own: names read from its source by the judge.

The candidate's worker records the kernels each judged call launched (CUPTI, through PyTorch's
profiler); whose they are is decided here, in the orchestrator, against names the judge reads
from the submission's files itself: Triton functions (`@triton.jit`, under any other
decorator too) and CUDA `__global__` functions in any string or `.cu`/`.cuh` file (the sources
of `load_inline`, `load`, CuPy's `RawKernel`/`RawModule`). A kernel counts as the submission's
when its function name is one of those, unqualified, in an anonymous namespace or in a
namespace the submission declares (never PyTorch's, CUB's, CUTLASS's or another library's):
so a kernel of ATen (`at::native::reduce_kernel<...>`) is never mistaken for one of the
submission's, whatever the submission names its own.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from gauntlet import syntax
from gauntlet.judge.timing import LIBRARY_KERNELS

_IDENT = r"[A-Za-z_]\w*"
#: `__global__` [qualifiers] `void` [`__launch_bounds__(...)`] name, as CUDA C++ writes it.
_GLOBAL = re.compile(
    r"__global__(?:\s+(?:static|inline|__forceinline__|__noinline__|__launch_bounds__\s*\([^)]*\)))*"
    rf"\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?({_IDENT})\s*[(<]"
)
_NAMESPACE = re.compile(rf"\bnamespace\s+({_IDENT}(?:\s*::\s*{_IDENT})*)\s*\{{")
#: Namespaces of PyTorch and of the libraries a task's work could be handed to.
_FOREIGN_NAMESPACES = frozenset(
    "at c10 caffe2 torch cub thrust cutlass cute cublas cublasLt cudnn cufft curand cusparse "
    "cusolver cupy triton flash flashinfer xformers std cuda".split()
)
_ANONYMOUS = "(anonymous namespace)"
#: Source files of the submission read for kernel names (never run: read as text).
_SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".h", ".hpp")
_MAX_SOURCE_BYTES = 4 << 20


@dataclass(frozen=True)
class OwnKernels:
    """The kernel names a submission defines, and the namespaces its CUDA code declares."""

    names: frozenset[str]
    namespaces: frozenset[str]

    def owns(self, kernel: str) -> bool:
        """Whether a kernel name from the profiler is one of the submission's functions."""
        qualified = function_name(kernel)
        if not qualified:
            return False
        *scopes, name = qualified.split("::")
        if name not in self.names:
            return False
        return all(
            scope == _ANONYMOUS or (scope in self.namespaces and scope not in _FOREIGN_NAMESPACES)
            for scope in scopes
        )


def own_kernels(submission_dir: Path) -> OwnKernels:
    """The kernels the submission's files define (read as text and parsed, never imported)."""
    names: set[str] = set()
    namespaces: set[str] = set()
    for path in sorted(submission_dir.rglob("*")):
        if not path.is_file() or path.suffix not in _SOURCE_SUFFIXES:
            continue
        if path.stat().st_size > _MAX_SOURCE_BYTES:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        cuda_texts = [text]
        if path.suffix == ".py":
            try:
                tree = syntax.parse(text)
            except SyntaxError:
                continue
            names.update(_triton_functions(tree))
            cuda_texts = [
                node.value
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
            ]
        for source in cuda_texts:
            names.update(_GLOBAL.findall(source))
            for declared in _NAMESPACE.findall(source):
                namespaces.update(part.strip() for part in declared.split("::"))
    return OwnKernels(frozenset(names), frozenset(namespaces))


def _triton_functions(tree: ast.AST) -> set[str]:
    """Functions decorated with anything ending in `jit` (`triton.jit`, `tl.jit`, `jit`)."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name == "jit":
                found.add(node.name)
    return found


def function_name(kernel: str) -> str:
    """The qualified function name in a profiler's kernel name, demangled or mangled.

    `void ns::k<128>(float const*, int)` and `k(float*)` give `ns::k` and `k`; an Itanium
    mangled name (`_Z1kPf`, `_ZN2ns1kEPf`) gives the same; a Triton kernel's name is its
    function's name.
    """
    text = kernel.strip()
    if text.startswith("_Z"):
        return _demangled_name(text)
    # The one scope name with brackets and a space, out of the way of the cut below.
    text = text.replace(_ANONYMOUS, "\0")
    head = re.split(r"[(<]", text, maxsplit=1)[0].split()
    return head[-1].replace("\0", _ANONYMOUS) if head else ""


def _demangled_name(mangled: str) -> str:
    """The qualified name in `_Z<len><name>...` or `_ZN<len><name>...E...`."""
    rest = mangled[2:]
    nested = rest.startswith("N")
    if nested:
        rest = rest[1:]
    parts = []
    while rest and rest[0].isdigit():
        digits = re.match(r"\d+", rest)
        assert digits is not None
        length = int(digits.group())
        start = digits.end()
        part = rest[start : start + length]
        parts.append(_ANONYMOUS if part == "_GLOBAL__N_1" else part)
        rest = rest[start + length :]
        if not nested:
            break
    return "::".join(parts)


def is_library(kernel: str) -> bool:
    """Whether a kernel belongs to a library that would do the task's work (cuBLAS, cuDNN...)."""
    return bool(LIBRARY_KERNELS.match(kernel))
