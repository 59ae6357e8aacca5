"""GPU MODE reference-kernels problems, read as text: what a task needs, never run.

A checkout lists its problems in competition files (`problems/<set>.yaml`: each problem's
directory and the GPUs it runs on). A problem directory holds `task.yml` (the files the runner
copies, `lang`, the description, `tests` and `benchmarks` specs with public seeds, timeouts)
and `reference.py` with `generate_input(**spec, seed)`, `ref_kernel(data)` and
`check_implementation(data, output)`; `data` is a tuple (or one tensor), sometimes holding
preallocated output tensors the kernel fills. `reference.py` imports its siblings (`utils`,
`task`), which `task.yml` names; the importer joins their text into one module, since a task's
files each run alone.

Everything here reads the files and their syntax trees; the problem's code runs only in the
judge's workers, as task code, once the task is written.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from gauntlet import syntax
from gauntlet.importers.kbsource import ProblemRefused

#: The functions a GPU MODE `reference.py` provides.
REQUIRED = ("generate_input", "ref_kernel", "check_implementation")
#: Names of quantised formats (fp8, fp4, block-scaled) in a reference: its data or its work is
#: quantised (`fp8_quant` clamps to FP8's range), which the judge's channel and tolerances do
#: not describe and Blackwell's fp4 our GPUs (H100, H200) lack, so these problems are refused.
QUANTISED = re.compile(r"fp8|fp4|float8|float4|mxfp|nvfp", re.IGNORECASE)
#: Calls that make an uninitialised tensor: one returned by `generate_input` and never written
#: there is a destination buffer for the kernel to fill.
EMPTY_CALLS = frozenset({"empty", "empty_like", "empty_strided"})
#: Spec keys that cannot be config parameters (a config's own fields).
RESERVED_KEYS = frozenset({"name", "hidden", "params"})


class Listing(BaseModel):
    """One problem as a competition file lists it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    directory: str
    """The problem's folder under `problems/` (`pmpp_v2/vectorsum_py`)."""
    name: str
    """Its leaderboard name (`vectorsum_v2`)."""
    gpus: list[str]
    competition: str
    """The competition file's stem (`pmpp_v2`)."""


class GpuModeProblem(BaseModel):
    """What the importer read from one problem folder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    listing: Listing
    description: str
    module_text: str
    """The problem's `task.py`, `utils.py` and `reference.py` joined into one module, the
    imports between them removed (each name is defined above its use)."""
    template_text: str
    """The problem's starting submission, joined with `task.py` the same way."""
    inputs: list[str]
    """Names of `data`'s items, in order (one name when `data` is a single tensor)."""
    single: bool
    """Whether `data` is one tensor rather than a tuple."""
    outputs: list[str]
    """Items of `data` that `generate_input` leaves uninitialised: buffers the kernel fills."""
    tests: list[dict[str, Any]]
    """The `tests` specs without their seeds."""
    benchmarks: list[dict[str, Any]]
    timeout_s: float


def competitions(problems: Path) -> list[Listing]:
    """Every problem the competition files under `problems/` list, each directory once."""
    import yaml

    seen: dict[str, Listing] = {}
    for path in sorted(problems.glob("*.yaml")):
        try:
            listed = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as err:
            raise ProblemRefused(f"{path.name} is not valid YAML: {err}") from err
        for entry in listed.get("problems") or []:
            directory = str(entry.get("directory", ""))
            if directory and directory not in seen:
                seen[directory] = Listing(
                    directory=directory,
                    name=str(entry.get("name", directory)),
                    gpus=[str(g) for g in entry.get("gpus") or []],
                    competition=path.stem,
                )
    return list(seen.values())


def runs_on_nvidia(listing: Listing) -> bool:
    """Whether a listed GPU is NVIDIA's (AMD's are the Instinct `MI` parts)."""
    return any(not gpu.upper().startswith("MI") for gpu in listing.gpus)


def read_problem(problems: Path, listing: Listing) -> GpuModeProblem:
    """Read a problem folder; `ProblemRefused` says why it cannot become a task."""
    import yaml

    if not runs_on_nvidia(listing):
        raise ProblemRefused(f"runs on AMD GPUs only (gpus: {', '.join(listing.gpus) or 'none'})")
    folder = problems / listing.directory
    task_yml = folder / "task.yml"
    if not task_yml.is_file():
        raise ProblemRefused(f"no task.yml in {listing.directory}")
    try:
        spec = yaml.safe_load(task_yml.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ProblemRefused(f"task.yml is not valid YAML: {err}") from err
    if spec.get("lang") != "py":
        raise ProblemRefused(f"lang '{spec.get('lang')}' (only Python problems are read)")
    sources = {
        str(f["name"]): str(f["source"])
        for f in spec.get("files") or []
        if isinstance(f, dict) and "name" in f and "source" in f
    }
    siblings = {Path(name).stem for name in sources} | {"reference", "task", "utils"}
    reference = folder / "reference.py"
    if not reference.is_file():
        raise ProblemRefused("no reference.py")
    reference_text = reference.read_text(encoding="utf-8")
    if QUANTISED.search(reference_text):
        found = QUANTISED.search(reference_text)
        raise ProblemRefused(
            f"quantised ({found.group(0) if found else ''} data): the judge has no fp8/fp4 formats"
        )
    tree = _parse(reference_text, "reference.py")
    defined = _top_level(tree)
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise ProblemRefused(
            f"reference.py defines no {', '.join(missing)} (not GPU MODE's reference format)"
        )
    # `task.py` holds the types of `data` (TypeVars, a TypedDict), used in annotations only:
    # left out, and the annotations never evaluated. Its TypeVars would call `sys._getframe`
    # at the top of the baseline's module, which the candidate's worker stops.
    if "task.py" in sources:
        _types_only(_sibling_text(folder, sources, "task.py"), reference_text)
    parts = (
        [("utils.py", _sibling_text(folder, sources, "utils.py"))] if "utils.py" in sources else []
    )
    module = join_modules([*parts, ("reference.py", reference_text)], siblings)
    template_module = join_modules([("template", _template(folder, spec))], siblings)
    names, single = _data_names(defined["ref_kernel"])
    returned = _returned(defined["generate_input"])
    if not single and returned is not None and len(returned) != len(names):
        raise ProblemRefused(
            f"generate_input returns {len(returned)} items, ref_kernel unpacks {len(names)}"
        )
    outputs = _outputs(defined["generate_input"], returned or [], names)
    tests = [_params(s, "tests") for s in spec.get("tests") or []]
    if not tests:
        raise ProblemRefused("task.yml has no tests")
    return GpuModeProblem(
        listing=listing,
        description=str(spec.get("description", "")).strip(),
        module_text=module,
        template_text=template_module,
        inputs=names,
        single=single,
        outputs=outputs,
        tests=tests,
        benchmarks=[_params(s, "benchmarks") for s in spec.get("benchmarks") or []],
        timeout_s=float(spec.get("test_timeout", 180)),
    )


#: The starting file when the problem has none that parses (Helion's is a fill-in form).
BLANK_TEMPLATE = '''def custom_kernel(data):
    """GPU MODE's entry point: the problem's `data` in, its output out."""
    raise NotImplementedError
'''


def _template(folder: Path, spec: dict[str, Any]) -> str:
    """The problem's starter: its `submission.py`, else its `templates` file, if one parses."""
    named = (spec.get("templates") or {}).get("Python")
    for path in [folder / "submission.py"] + ([folder / str(named)] if named else []):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            try:
                syntax.parse(text)
            except SyntaxError:
                continue
            return text
    return BLANK_TEMPLATE


def _sibling_text(folder: Path, sources: dict[str, str], name: str) -> str:
    path = (folder / sources[name]).resolve()
    if not path.is_file():
        raise ProblemRefused(f"task.yml names {sources[name]} for {name}, which does not exist")
    return path.read_text(encoding="utf-8")


def _parse(text: str, name: str) -> ast.Module:
    try:
        return syntax.parse(text, filename=name)
    except SyntaxError as err:
        raise ProblemRefused(f"{name} is not valid Python (line {err.lineno}: {err.msg})") from err


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level functions, classes and assigned names of a module, by name."""
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            found.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return found


def join_modules(parts: list[tuple[str, str]], siblings: set[str]) -> str:
    """The files' text as one module: imports between them dropped, `__future__` first.

    Annotations are postponed (`ANNOTATIONS`), so the names of the left-out `task.py` that
    they use need no definition. `from utils import a as b` becomes `b = a` (the name is
    defined above); importing a sibling whole (`import utils`) is refused, since its
    attributes would need rewriting.
    """
    future: list[str] = []
    body: list[str] = []
    for name, text in parts:
        tree = _parse(text, name)
        lines = text.splitlines()
        drop: dict[int, list[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                future.append(ast.get_source_segment(text, node) or "")
                drop[node.lineno] = []
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in siblings:
                drop[node.lineno] = [
                    f"{a.asname} = {a.name}" for a in node.names if a.asname and a.asname != a.name
                ]
            elif isinstance(node, ast.Import) and any(a.name in siblings for a in node.names):
                raise ProblemRefused(
                    f"{name} imports a sibling module whole ({node.names[0].name})"
                )
            else:
                continue
            for number in range(node.lineno + 1, (node.end_lineno or node.lineno) + 1):
                drop[number] = []
        kept: list[str] = []
        for number, line in enumerate(lines, start=1):
            kept.extend(drop.get(number, [line]))
        body.append(f"# --- {name} ---\n" + "\n".join(kept).strip() + "\n")
    head = "\n".join(sorted({*future, ANNOTATIONS}))
    return head + "\n\n" + "\n\n".join(body)


#: Annotations kept as text, so names only they use need no definition (`input_t`).
ANNOTATIONS = "from __future__ import annotations"


def _types_only(task_text: str, reference_text: str) -> None:
    """Refuse a reference that uses a name of `task.py` outside an annotation."""
    types = set(_top_level(_parse(task_text, "task.py")))
    tree = _parse(reference_text, "reference.py")
    annotations: set[int] = set()
    for node in ast.walk(tree):
        hints: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            every = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            hints = [a.annotation for a in every] + [node.returns]
        elif isinstance(node, ast.AnnAssign):
            hints = [node.annotation]
        annotations.update(id(n) for hint in hints if hint for n in ast.walk(hint))
    used = sorted(
        {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id in types and id(n) not in annotations
        }
    )
    if used:
        raise ProblemRefused(f"reference.py uses task.py's {used[0]!r} outside an annotation")


def _data_names(ref_kernel: ast.AST) -> tuple[list[str], bool]:
    """The names `ref_kernel` unpacks its `data` into (`A, B, output = data`), in order.

    A reference that never unpacks `data` takes one tensor, named after its parameter.
    """
    if not isinstance(ref_kernel, ast.FunctionDef) or not ref_kernel.args.args:
        raise ProblemRefused("ref_kernel is not a function of one argument")
    data = ref_kernel.args.args[0].arg
    for node in ast.walk(ref_kernel):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == data
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
        ):
            names = [e.id for e in node.targets[0].elts if isinstance(e, ast.Name)]
            if len(names) != len(node.targets[0].elts):
                raise ProblemRefused("ref_kernel unpacks its data into something but names")
            return names, False
    return [data], True


def _returned(generate_input: ast.AST) -> list[ast.expr] | None:
    """The items of `generate_input`'s last `return` of a tuple (None: it returns one value)."""
    found: list[ast.expr] | None = None
    for node in ast.walk(generate_input):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            found = list(node.value.elts)
    return found


def _root_name(node: ast.expr) -> str | None:
    """`x` of `x`, `x.contiguous()`, `x.to(...).contiguous()`."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None


def _outputs(generate_input: ast.AST, returned: list[ast.expr], names: list[str]) -> list[str]:
    """Which returned items are destination buffers: made by `torch.empty*`, never written.

    A returned dict (weights, settings) is refused: the judge's inputs are tensors and numbers.
    """
    bound: dict[str, ast.expr] = {}
    written: set[str] = set()
    for node in ast.walk(generate_input):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = node.value
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    written.add(target.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_")
            and isinstance(node.func.value, ast.Name)
        ):
            written.add(node.func.value.id)
    outputs = []
    for name, item in zip(names, returned, strict=False):
        root = _root_name(item)
        value = bound.get(root) if root else None
        if isinstance(value, ast.Dict) or (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "dict"
        ):
            raise ProblemRefused(
                f"its input '{name}' is a dict: the judge's inputs are tensors and numbers"
            )
        made = value
        while isinstance(made, ast.Call) and isinstance(made.func, ast.Attribute):
            if made.func.attr in EMPTY_CALLS:
                break
            made = made.func.value
        empty = (
            isinstance(made, ast.Call)
            and isinstance(made.func, ast.Attribute)
            and made.func.attr in EMPTY_CALLS
        )
        if empty and root not in written:
            outputs.append(name)
    return outputs


def _params(entry: Any, where: str) -> dict[str, Any]:
    """A spec's parameters: every key but its public seed (the judge draws its own)."""
    if not isinstance(entry, dict):
        raise ProblemRefused(f"a {where} entry is not a mapping: {entry!r}")
    params = {str(k): v for k, v in entry.items() if k != "seed"}
    clash = RESERVED_KEYS & set(params)
    if clash:
        raise ProblemRefused(f"a {where} spec has the key {sorted(clash)[0]!r}")
    bad = [k for k, v in params.items() if not isinstance(v, int | float | str | bool)]
    if bad:
        raise ProblemRefused(f"the {where} spec key {bad[0]!r} is not a number, string or flag")
    return params
