"""Static exploit checks on a submission's source, before any of it runs.

Python submissions are checked in two steps. First the text itself: the guards must read exactly
what the interpreter will run, so an encoding cookie other than UTF-8, control and invisible
characters, and any difference between the AST of the text and that of its bytes (what the
import compiles) are findings. Then the AST, against an allowlist of imports and a denylist of
constructs that JUDGE.md names: fallbacks through `try/except`, threads and processes, new
streams, patching of anything the submission did not create (timers, `torch.cuda`, torch classes,
the judge), file/network/environment access, reflection and string-based attribute access that
reach around these rules (dunders, private `_` internals, frames and code objects, `attrgetter`,
format fields, evaluated annotations), modules reached as attributes (`torch.sys`), NumPy, and
imports of the task's reference or of gauntlet. The dynamic checks in the worker (ATen dispatch
watch, identity checks) back these up.
"""

from __future__ import annotations

import ast
import codecs
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gauntlet import syntax

#: Modules a Python submission may import, per language. `torch.nn` and its `functional` are
#: glue (`nn.Module` for KernelBench's `ModelNew`, `F.pad`); the dispatch watch catches them
#: doing a task's work.
ALLOWED_IMPORTS: dict[str, frozenset[str]] = {
    "triton": frozenset(
        {
            "torch",
            "torch.nn",
            "torch.nn.functional",
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
    "cupy",
}

#: Builtins whose use is never needed by a kernel and always a way around the rules. A
#: function's own parameter or local of the same name (`def forward(self, input)`) is fine:
#: only a name that resolves to the builtin is a finding.
FORBIDDEN_NAMES = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "__import__",
        "__build_class__",
        "globals",
        "locals",
        "vars",
        "dir",
        "type",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "input",
        "help",
        "exit",
        "quit",
        "memoryview",
        "__builtins__",
        "__loader__",
        "__spec__",
    }
)

#: Dunder attributes a submission may read or call (`super().__init__()`, a function's name).
#: Every other `__x__` attribute reaches interpreter internals (`__class__`, `__globals__`,
#: `__setattr__`, `__self__`, `__wrapped__`, `__torch_function__`, ...).
ALLOWED_DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__qualname__", "__doc__"})

#: Dunder methods a submission's classes may define; any other hook (`__torch_function__`,
#: `__torch_dispatch__`, `__getattr__`, `__del__`, `__exit__` that swallows errors,
#: `__init_subclass__`, ...) changes how other code behaves.
ALLOWED_DUNDER_DEFINITIONS = frozenset(
    {
        "__init__",
        "__call__",
        "__repr__",
        "__str__",
        "__len__",
        "__iter__",
        "__getitem__",
        "__post_init__",
        "__hash__",
        "__eq__",
    }
)

#: Attributes of frames, generators, tracebacks and code objects, and of processes' state.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_back",
        "f_code",
        "gi_frame",
        "gi_code",
        "cr_frame",
        "cr_code",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "func_globals",
        "mro",
        "environ",
    }
)

#: Prefixes of attributes of frames and code objects (`co_code`, `co_consts`, ...).
FORBIDDEN_ATTRIBUTE_PREFIXES = ("co_",)

#: Attributes that read attributes or evaluate code from strings, or hand the work to NumPy.
STRING_ACCESS_ATTRIBUTES = frozenset(
    {
        "attrgetter",
        "methodcaller",
        "get_type_hints",
        "ForwardRef",
        "from_numpy",
    }
)

#: Attributes that do a task's work, change precision, leave the measured stream, load code or
#: reach the dispatcher. They are findings on any object except a `triton`/`cupy` module (where
#: `tl.load` and `triton.jit` are the kernel's own tools), whatever alias or helper returned it.
FORBIDDEN_TORCH_ATTRIBUTES = frozenset(
    {
        "compile",
        "jit",
        "library",
        "ops",
        "backends",
        "overrides",
        "fx",
        "export",
        "package",
        "classes",
        "TorchFunctionMode",
        "TorchDispatchMode",
        "set_default_dtype",
        "set_default_tensor_type",
        "set_float32_matmul_precision",
        "autocast",
        "amp",
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
        "cudart",
        "CUDAPluggableAllocator",
        "change_current_allocator",
        "profiler",
        "hub",
        "load",
        "save",
        "from_file",
        "multiprocessing",
        "distributed",
    }
)

#: Names of standard-library attributes that are ordinary methods too (`x.select`, `x.chunk`,
#: `torch.trace`, `torch.random`, `d.copy()`), so they are not read as a module reached by
#: attribute.
_METHOD_NAMES = frozenset({"chunk", "select", "trace", "random", "copy"})

#: Modules a submission must not reach, by import or as an attribute of another module
#: (`torch.sys`, `typing.types`, `x.numpy()`): the standard library beyond the allowed imports,
#: and libraries that would do the work (NumPy) or reach the machine.
FORBIDDEN_MODULE_ATTRIBUTES = frozenset(
    (set(sys.stdlib_module_names) | {"numpy", "scipy", "numba", "cffi", "psutil", "gauntlet"})
    - {name.split(".")[0] for names in ALLOWED_IMPORTS.values() for name in names}
    - _METHOD_NAMES
)

#: Attributes of `triton` that reach its runtime, compiler or driver rather than a kernel.
FORBIDDEN_TRITON_ATTRIBUTES = frozenset({"runtime", "compiler", "backends", "knobs", "tools"})

#: Submodules of `torch.utils` a submission may reach (all others hold internals).
ALLOWED_TORCH_UTILS = frozenset({"cpp_extension", "dlpack"})

#: Characters that render differently than Python reads them, or not at all: C0/C1 controls
#: (form feed, vertical tab, file separators that `str.splitlines` splits on, NUL), a carriage
#: return not followed by a newline (a terminal shows the text after it over the line), the
#: Unicode line and paragraph separators. Invisible format characters (category Cf: bidi
#: overrides, zero-width spaces) are found by category.
_HIDING_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]|\r(?!\n)")

#: PEP 263's encoding declaration, searched for in each of the first two lines (a little wider
#: than CPython's own pattern, so no spelling CPython accepts is missed).
_CODING_COOKIE = re.compile(r"#.*?coding[:=][ \t]*([-\w.]+)")

_BOM = "\ufeff"

_CONTROL_NAMES = {
    "\x00": "NUL",
    "\x0b": "vertical tab",
    "\x0c": "form feed",
    "\r": "carriage return without a newline",
}

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
    """All static violations in one Python file (empty if it passes).

    `source` is the file's text as read by the contract gate (UTF-8); the judge writes it back
    as UTF-8, so its UTF-8 bytes are what the interpreter compiles.
    """
    text_findings = _text_findings(source)
    if text_findings:
        return text_findings
    tree = syntax.parse(source.removeprefix(_BOM), filename=filename)
    try:
        as_run = syntax.parse(source.encode("utf-8"), filename=filename)
    except (SyntaxError, ValueError, UnicodeError, LookupError) as err:
        return [
            Finding(1, 0, f"Python cannot compile the file's bytes as it reads its text: {err}")
        ]
    if ast.dump(as_run) != ast.dump(tree):
        return [
            Finding(
                1,
                0,
                "the file's bytes compile to other code than its text reads "
                "(an encoding or newline trick); save it as plain UTF-8",
            )
        ]
    return _Checker(tree, language, forbidden_modules, allowed_calls).run()


def _text_findings(source: str) -> list[Finding]:
    """Encoding cookies other than UTF-8, and characters that hide code from a reader."""
    findings: list[Finding] = []
    body = source.removeprefix(_BOM)
    for number, line in enumerate(body.split("\n")[:2], start=1):
        match = _CODING_COOKIE.search(line)
        if match is None:
            continue
        cookie = match.group(1)
        try:
            codec = codecs.lookup(cookie).name
        except LookupError:
            codec = ""
        if codec != "utf-8":
            meant = f"as '{codec}'" if codec else "with an unknown codec"
            bom = " after a UTF-8 byte-order mark" if source.startswith(_BOM) else ""
            findings.append(
                Finding(
                    number,
                    match.start(),
                    f"the encoding cookie 'coding: {cookie}'{bom} makes Python decode the file "
                    f"{meant}, not as the UTF-8 text the guards read; remove the cookie or "
                    "write '# -*- coding: utf-8 -*-'",
                )
            )
    seen: set[str] = set()
    for offset, char in _hiding_characters(body):
        if char in seen:
            continue
        seen.add(char)
        row = body.count("\n", 0, offset) + 1
        col = offset - (body.rfind("\n", 0, offset) + 1)
        name = _CONTROL_NAMES.get(char) or unicodedata.name(char, "control character").lower()
        findings.append(
            Finding(
                row,
                col,
                f"character U+{ord(char):04X} ({name}) is not allowed in a submission: "
                "it hides code or splits lines differently for readers, tools and Python; "
                "use plain newlines and spaces",
            )
        )
    return findings


def _hiding_characters(text: str) -> Iterator[tuple[int, str]]:
    for match in _HIDING_CHARACTERS.finditer(text):
        yield match.start(), match.group(0)[0]
    for offset, char in enumerate(text):
        if ord(char) > 0x7F and unicodedata.category(char) == "Cf":
            yield offset, char


#: A function-like scope: its locally bound names (reliable: never falls back to builtins).
_Scope = frozenset[str]
_FunctionLike = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class _Checker:
    """The AST rules for one Python file."""

    def __init__(
        self,
        tree: ast.Module,
        language: str,
        forbidden_modules: Iterable[str],
        allowed_calls: Iterable[str],
    ) -> None:
        self.tree = tree
        self.language = language
        self.allowed = ALLOWED_IMPORTS.get(language, ALLOWED_IMPORTS["triton"])
        self.banned_modules = set(forbidden_modules)
        self.extra = {c.rsplit(".", 1)[-1] for c in allowed_calls}
        self.aliases = _module_aliases(tree)
        self.imported_modules = {
            alias.asname or alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        self.owners, self.rebinding = _own_receivers(tree)
        self.findings: list[Finding] = []

    def add(self, node: ast.AST, message: str) -> None:
        self.findings.append(
            Finding(getattr(node, "lineno", 0), getattr(node, "col_offset", 0), message)
        )

    def run(self) -> list[Finding]:
        """Every rule over the tree, in source order."""
        if self.language == "cuda":
            self.findings += _cuda_findings(self.tree, self.extra)
        parents = {id(c): p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
            elif isinstance(node, ast.Try | ast.TryStar):
                self.add(
                    node, "try/except is not allowed: a kernel failure must surface, not fall back"
                )
            elif isinstance(node, ast.Global | ast.Nonlocal):
                self.add(node, "global/nonlocal state is not allowed (results must not be cached)")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._definition(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Name):
                self._module_as_value(node, parents.get(id(node)))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self._format_fields(node, node.value)
            elif isinstance(node, ast.Call):
                self._format_call(node)
        for name in _builtin_uses(self.tree):
            self.add(
                name,
                f"'{name.id}' is not allowed in a submission: it is the builtin (a parameter or "
                "local variable of that name is fine)",
            )
        self._class_bodies()
        self.findings.sort(key=lambda f: (f.line, f.col))
        return self.findings

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        names = (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        for name in names:
            root = name.split(".")[0]
            if name in self.banned_modules or root in self.banned_modules or root == "gauntlet":
                self.add(
                    node, f"importing '{name}' is forbidden (the task's reference or the judge)"
                )
            elif name not in self.allowed:
                self.add(
                    node,
                    f"importing '{name}' is not allowed (allowed: {_listed(self.allowed)})",
                )
        if isinstance(node, ast.ImportFrom):
            if node.level:
                self.add(node, "relative imports are not allowed")
            for alias in node.names:
                if alias.name == "*":
                    self.add(node, f"'from {node.module} import *' is not allowed: import names")
                    continue
                dotted = f"{node.module}.{alias.name}"
                problem = self._name_problem(alias.name, (node.module or "").split(".")[0], dotted)
                if problem is None and node.module == "cupy" and dotted not in ALLOWED_CUPY:
                    problem = f"'{dotted}' is not allowed (CuPy is for NVRTC kernels)"
                if problem:
                    self.add(node, problem)

    def _name_problem(self, attr: str, root: str | None, dotted: str) -> str | None:
        """Why reading attribute `attr` (of a module rooted at `root`, if known) is a finding."""
        if attr.startswith("__") and attr.endswith("__"):
            if attr not in ALLOWED_DUNDER_ATTRIBUTES:
                return (
                    f"'{dotted}': attribute '{attr}' reaches interpreter internals "
                    "(classes, globals, frames, hooks); not allowed in a submission"
                )
            return None
        if attr.startswith("_"):
            return (
                f"'{dotted}': private attribute '{attr}' reaches another module's internals "
                "(dispatch keys, modes, caches); not allowed in a submission"
            )
        if attr in FORBIDDEN_ATTRIBUTES or attr.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES):
            return (
                f"'{dotted}': attribute '{attr}' reaches frames, code objects or the process's "
                "state; not allowed in a submission"
            )
        if attr in FORBIDDEN_MODULE_ATTRIBUTES:
            return (
                f"'{dotted}' reaches the module '{attr}', which a submission may not use "
                f"(allowed imports: {_listed(self.allowed)})"
            )
        if attr in STRING_ACCESS_ATTRIBUTES:
            return (
                f"'{dotted}' reads attributes or evaluates code from strings, or hands the work "
                "to NumPy; not allowed in a submission"
            )
        if root == "triton":
            if attr in FORBIDDEN_TRITON_ATTRIBUTES:
                return f"'{dotted}' reaches Triton's runtime or compiler; not allowed"
            return None
        if root == "cupy" or attr in self.extra:
            return None
        if attr in FORBIDDEN_TORCH_ATTRIBUTES:
            return f"'{dotted}' is not allowed in a submission (work, precision, streams or timers)"
        if dotted.startswith("torch.utils.") and dotted.count(".") == 2:
            if attr not in ALLOWED_TORCH_UTILS:
                return f"'{dotted}' is not allowed (torch.utils: {_listed(ALLOWED_TORCH_UTILS)})"
        return None

    def _attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        root = _root_module(node, self.aliases)
        own = isinstance(node.value, ast.Name) and self._owns(node.value)
        if own and node.attr.startswith("_") and not node.attr.startswith("__"):
            problem = None
        else:
            problem = self._name_problem(node.attr, root, dotted)
        if problem:
            self.add(node, problem)
        if isinstance(node.ctx, ast.Store | ast.Del) and not own:
            self.add(
                node,
                f"assigning to '{dotted}' patches a module or another object the submission did "
                "not create (a class, a function, through any alias); only 'self.<name> = ...' "
                "in the submission's own methods is allowed",
            )
        elif isinstance(node.ctx, ast.Load) and node.attr in self.owners:
            receiver = node.value
            bound = (isinstance(receiver, ast.Name) and self._owns(receiver)) or (
                isinstance(receiver, ast.Call)
                and isinstance(receiver.func, ast.Name)
                and receiver.func.id == "super"
            )
            if self.owners[node.attr] == "static" or not bound:
                self.add(
                    node,
                    f"'{dotted}': method '{node.attr}' sets attributes on its first parameter; "
                    "reached this way, it could be handed a module or class to patch "
                    "(call it only as 'self.<method>(...)')",
                )

    def _owns(self, name: ast.Name) -> bool:
        """Whether `name` is the first parameter of the submission's own method, never rebound."""
        return any(
            name.id == first
            and _encloses(function, name)
            and name.id not in self.rebinding[id(function)]
            for function, first in self._methods()
        )

    def _methods(self) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
        for cls in ast.walk(self.tree):
            if isinstance(cls, ast.ClassDef):
                for item in cls.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _receiver(item):
                        yield item, _receiver(item) or ""

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        name = node.name
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDER_DEFINITIONS:
            self.add(
                node,
                f"defining '{name}' hooks into how other code treats the submission's objects "
                f"(allowed: {', '.join(sorted(ALLOWED_DUNDER_DEFINITIONS))})",
            )

    def _module_as_value(self, node: ast.Name, parent: ast.AST | None) -> None:
        """An imported module may only be the base of an attribute access (`torch.x`)."""
        if node.id not in self.imported_modules or not isinstance(node.ctx, ast.Load):
            return
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return
        self.add(
            node,
            f"the module '{node.id}' is used as a value: use its attributes ('{node.id}.x'), "
            "so every use of the module can be checked",
        )

    def _format_fields(self, node: ast.AST, text: str) -> None:
        """Fields like '{0.__globals__}' read attributes by name when the string is formatted."""
        for field in re.findall(r"\{([^{}]*)\}", text):
            name = re.split(r"[!:]", field, maxsplit=1)[0]
            for part in re.split(r"[.\[]", name)[1:]:
                attr = part.strip().rstrip("]").strip()
                problem = self._name_problem(attr, None, "{" + name.strip() + "}") if attr else None
                if problem and attr.isidentifier():
                    self.add(node, f"format field {problem}")

    def _format_call(self, node: ast.Call) -> None:
        """`.format`/`.format_map` only on a literal string, whose fields are checked."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in ("format", "format_map")):
            return
        if isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
            return
        self.add(
            node,
            f"'{_dotted(func)}(...)' formats a string the guards cannot read: its fields can "
            "read any attribute ('{0.__globals__}'); call '.format' on a string literal or use "
            "an f-string",
        )

    def _class_bodies(self) -> None:
        """A method named in its class body is a plain function: any first argument goes."""
        for cls in ast.walk(self.tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            methods = {
                item.name
                for item in cls.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name in self.owners
            }
            for item in cls.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for sub in ast.walk(item):
                    if isinstance(sub, ast.Name) and sub.id in methods:
                        self.add(
                            sub,
                            f"method '{sub.id}' is used in its class body, where it is a plain "
                            "function that could be handed any object to patch",
                        )


def _listed(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


def _receiver(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The first parameter of a method whose decorators cannot call it with another object."""
    decorators = {d.id if isinstance(d, ast.Name) else "" for d in function.decorator_list}
    if not decorators <= {"staticmethod", "classmethod"}:
        return None
    params = function.args.posonlyargs + function.args.args
    return params[0].arg if params else None


def _own_receivers(tree: ast.Module) -> tuple[dict[str, str], dict[int, set[str]]]:
    """Methods that set attributes on their first parameter, and the names each method rebinds.

    Returns (method name -> "static" or "bound", id(method) -> names stored in its body).
    """
    owners: dict[str, str] = {}
    rebinding: dict[int, set[str]] = {}
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for item in cls.body:
            if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            stored = {
                n.id
                for n in ast.walk(item)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)
            }
            stored |= {
                a.arg
                for sub in ast.walk(item)
                if isinstance(sub, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef)
                and sub is not item
                for a in sub.args.posonlyargs + sub.args.args + sub.args.kwonlyargs
            }
            rebinding[id(item)] = stored
            first = _receiver(item)
            if first is None or first in stored:
                continue
            decorators = {d.id for d in item.decorator_list if isinstance(d, ast.Name)}
            if "classmethod" in decorators:
                continue
            sets_attributes = any(
                isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store | ast.Del)
                and isinstance(n.value, ast.Name)
                and n.value.id == first
                for n in ast.walk(item)
            )
            if sets_attributes:
                owners[item.name] = "static" if "staticmethod" in decorators else "bound"
    return owners, rebinding


def _encloses(function: ast.AST, node: ast.AST) -> bool:
    return any(sub is node for sub in ast.walk(function))


def _builtin_uses(tree: ast.Module) -> list[ast.Name]:
    """Loads of FORBIDDEN_NAMES that resolve to the builtin, not to a function's own variable.

    Only function scopes (def, lambda, comprehension) bind reliably: a module or class name
    falls back to the builtin when it is unset (`del`, a branch not taken).
    """
    found: list[ast.Name] = []

    def visit(node: ast.AST, scopes: tuple[_Scope, ...]) -> None:
        if isinstance(node, ast.Name):
            if (
                isinstance(node.ctx, ast.Load)
                and node.id in FORBIDDEN_NAMES
                and not any(node.id in s for s in scopes)
            ):
                found.append(node)
            return
        if isinstance(node, _FunctionLike):
            outer: list[ast.AST] = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            if not isinstance(node, ast.Lambda):
                outer += node.decorator_list
                outer += [a.annotation for a in _params(node.args) if a.annotation]
                outer += [node.returns] if node.returns else []
            for sub in outer:
                visit(sub, scopes)
            inner = scopes + (_bound_names(node),)
            body = node.body if isinstance(node.body, list) else [node.body]
            for stmt in body:
                visit(stmt, inner)
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            first, *rest = node.generators
            visit(first.iter, scopes)
            names = frozenset(
                n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
            )
            inner = scopes + (names,)
            visit(first.target, inner)
            for cond in first.ifs:
                visit(cond, inner)
            for gen in rest:
                visit(gen, inner)
            elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for element in elements:
                visit(element, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, scopes)

    visit(tree, ())
    return found


def _params(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _bound_names(function: _FunctionLike) -> _Scope:
    """Names local to a function: its parameters and every name its own body binds."""
    names = {a.arg for a in _params(function.args)}
    body = function.body if isinstance(function.body, list) else [function.body]
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            # Only a walrus inside a comprehension binds in the function.
            names |= {
                n.target.id
                for n in ast.walk(node)
                if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
            }
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names)


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
        elif (
            isinstance(node, ast.keyword)
            and node.arg in ("extra_ldflags", "extra_include_paths")
            and not _no_flags(node.value)
        ):
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


def _no_flags(value: ast.expr) -> bool:
    """Whether a flags argument is written out as nothing: None, or a list of blank strings.

    KernelBench's published solutions pass `extra_ldflags=[""]`: that links nothing.
    """
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    if not isinstance(value, ast.List | ast.Tuple):
        return False
    return all(
        isinstance(item, ast.Constant) and isinstance(item.value, str) and not item.value.strip()
        for item in value.elts
    )


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
