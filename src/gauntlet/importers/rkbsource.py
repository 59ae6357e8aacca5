"""robust-kbench task folders read as text: a KernelBench-format problem and its configs.

A robust-kbench task (`tasks/<name>/`) holds `func_forward.py` (and `func_backward.py` for a
backward task): `forward_fn(inputs..., weights..., scalars)`, a `Model(**init_config)` that owns
the weights and calls `forward_fn` from its `forward(..., fn=forward_fn)`, and
`get_inputs(**input_config)` with defaults; `config_forward.json` (`config_backward.json`) lists
input, init and shared settings whose cross product is the task's configs (shared values
override both). This module never runs a task: it parses the file (`ast`) and writes it as a
KernelBench problem (module constants for every numeric setting, `get_inputs()` and
`get_init_inputs()` reading them), so the KernelBench importer's analysis, writer and checks
(`kbprobe`, `kbwrite`) serve both sources.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gauntlet import syntax
from gauntlet.importers.kbsource import ProblemRefused, ProblemSource, parse_problem

Direction = Literal["forward", "backward"]

#: What a robust-kbench function file must define.
REQUIRED = ("forward_fn", "Model", "get_inputs")
#: The name the task's own `get_inputs` takes in the written problem.
OWN_GET_INPUTS = "_rkb_get_inputs"
#: Values an init setting may take in robust-kbench, in the order the importer prefers them:
#: `random` (std-1 weights) over `standard` (ones and zeros, the identity a kernel could skip).
INIT_PREFERENCE = ("random",)
#: Most visible configs a task keeps (the task format's limit).
MAX_VISIBLE = 8

Settings = dict[str, Any]


@dataclass(frozen=True)
class RkbProblem:
    """One robust-kbench task in one direction, as a KernelBench-format problem."""

    name: str
    """The task folder's name (`layernorm`)."""
    direction: Direction
    text: str
    """The problem written in KernelBench's format."""
    source: ProblemSource
    configs: list[dict[str, int | float]]
    """The numeric settings of each config of the cross product, deduplicated, in order."""
    fixed: dict[str, Any]
    """Settings that are not numbers (`init_method`) and the value every config takes."""


def task_folders(root: Path, ports: bool) -> list[Path]:
    """The task folders under a robust-kbench checkout (or its `tasks/` folder).

    The ports of KernelBench v0 (`tasks/kernelbench/`) are left out unless `ports`: they hold
    v0's shapes and problem set, better imported from current KernelBench.
    """
    base = tasks_root(root)
    if not base.is_dir():
        raise ProblemRefused(f"'{root}' is not a folder; give a robust-kbench checkout")
    found = sorted(p.parent for p in base.rglob("func_forward.py"))
    return [p for p in found if ports or "kernelbench" not in p.relative_to(base).parts]


def tasks_root(root: Path) -> Path:
    """The folder of task folders: a checkout's `tasks/`, or the folder given."""
    return root / "tasks" if (root / "tasks").is_dir() else root


def directions(folder: Path) -> list[Direction]:
    """The directions a task folder defines: forward, and backward where it has one."""
    found: list[Direction] = ["forward"]
    if (folder / "func_backward.py").is_file():
        found.append("backward")
    return found


def read_problem(folder: Path, direction: Direction) -> RkbProblem:
    """The task in this direction; raises ProblemRefused naming what does not fit."""
    func = folder / f"func_{direction}.py"
    config_file = folder / f"config_{direction}.json"
    label = f"{folder.name}/{func.name}"
    if not config_file.is_file():
        raise ProblemRefused(f"no {config_file.name} beside {func.name}")
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ProblemRefused(f"{config_file.name} is not valid JSON: {err}") from err
    settings = cross_product(raw, config_file.name)
    text = problem_text(func.read_text(encoding="utf-8"), label, settings)
    fixed, numeric = _split(settings)
    return RkbProblem(name=folder.name, direction=direction, text=text,
                      source=parse_problem(text, label), configs=numeric, fixed=fixed)  # fmt: skip


def cross_product(raw: Any, where: str) -> list[Settings]:
    """Every config: init x input x shared, shared applied last, as robust-kbench runs them.

    The `multi_*` lists where they hold settings, else the `single_*` ones.
    """
    if not isinstance(raw, dict):
        raise ProblemRefused(f"{where} holds no object of config lists")

    def lists(prefix: str) -> list[list[Settings]]:
        found = []
        for kind in ("init", "input", "shared"):
            value = raw.get(f"{prefix}_{kind}_configs", [{}]) or [{}]
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise ProblemRefused(f"{where}: '{prefix}_{kind}_configs' is not a list of objects")
            found.append(value)
        return found

    multi = lists("multi")
    chosen = multi if any(any(d for d in group) for group in multi) else lists("single")
    configs: list[Settings] = []
    for init, inputs, shared in itertools.product(*chosen):
        merged = {**init, **inputs, **shared}
        if merged not in configs:
            configs.append(merged)
    return configs


def _split(settings: list[Settings]) -> tuple[dict[str, Any], list[dict[str, int | float]]]:
    """Non-numeric settings fixed at one value each; the numeric ones per config, deduplicated."""
    fixed: dict[str, Any] = {}
    for key in {k for s in settings for k in s}:
        values = [s[key] for s in settings if key in s]
        if all(_is_number(v) for v in values):
            continue
        preferred = [v for v in INIT_PREFERENCE if v in values]
        fixed[key] = preferred[0] if preferred else values[0]
    numeric: list[dict[str, int | float]] = []
    for config in settings:
        kept = {k: v for k, v in config.items() if k not in fixed}
        if kept not in numeric:
            numeric.append(kept)
    return fixed, numeric[:MAX_VISIBLE]


def _volume(config: dict[str, int | float]) -> float:
    return math.prod(float(v) for v in config.values() if isinstance(v, int) and v > 0)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def problem_text(text: str, label: str, settings: list[Settings]) -> str:
    """The function file written as a KernelBench problem.

    `get_inputs` becomes `_rkb_get_inputs`; `Model.forward` loses its `fn=forward_fn` argument
    (bound in its body instead, so the forward inputs are its only arguments); every numeric
    setting and every numeric default of `get_inputs` and `Model.__init__` becomes a module
    constant (the largest config's value where it sets one); `get_inputs()` and
    `get_init_inputs()` call the task's own with them.
    """
    try:
        tree = syntax.parse(text, filename=label)
    except SyntaxError as err:
        raise ProblemRefused(f"not valid Python: {err.msg} (line {err.lineno})") from err
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    missing = [r for r in REQUIRED if r not in defined]
    if missing:
        raise ProblemRefused(f"defines no {', '.join(missing)}")
    if "get_init_inputs" in defined or OWN_GET_INPUTS in defined:
        raise ProblemRefused("defines get_init_inputs or _rkb_get_inputs itself")
    get_inputs = defined["get_inputs"]
    model = defined["Model"]
    assert isinstance(get_inputs, ast.FunctionDef) and isinstance(model, ast.ClassDef)
    get_inputs.name = OWN_GET_INPUTS
    init = _method(model, "__init__")
    _bind_fn(_method(model, "forward"), label)
    fixed, numeric = _split(settings)
    # The constants are the largest config's (the hidden domain spans below them).
    first = max(numeric, key=_volume) if numeric else {}
    constants: dict[str, int | float] = {}
    input_names = _arguments(get_inputs, "get_inputs")
    init_names = _arguments(init, "Model.__init__")[1:]
    init_values: list[str] = []
    for name, default in [*input_names, *init_names]:
        if name in first:
            constants.setdefault(name, first[name])
        elif default is not None and _is_number(_literal(default)):
            constants.setdefault(name, _literal(default))
    for name, default in init_names:
        if name in constants:
            init_values.append(name)
        elif name in fixed:
            init_values.append(repr(fixed[name]))
        elif default is not None:
            init_values.append(ast.unparse(default))
        else:
            raise ProblemRefused(f"Model.__init__ argument '{name}' has no value in any config")
    unknown = sorted(set(first) - {n for n, _ in [*input_names, *init_names]})
    if unknown:
        raise ProblemRefused(
            f"config setting '{unknown[0]}' is no argument of get_inputs or Model "
            "(so the task fails as published)"
        )
    calls = ", ".join(f"{n}={n}" for n, _ in input_names if n in constants)
    lines = [ast.unparse(tree), ""]
    lines += [f"{name} = {value!r}" for name, value in constants.items()]
    lines += [
        "",
        "",
        "def get_inputs():",
        f"    return {OWN_GET_INPUTS}({calls})",
        "",
        "",
        "def get_init_inputs():",
        f"    return [{', '.join(init_values)}]",
        "",
    ]
    return "\n".join(lines)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    found = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if found is None:
        raise ProblemRefused(f"Model defines no {name}")
    return found


def _bind_fn(forward: ast.FunctionDef, label: str) -> None:
    """`def forward(self, x, fn=forward_fn)` -> `def forward(self, x)` with `fn = forward_fn`."""
    args = forward.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise ProblemRefused("Model.forward takes *args, **kwargs or keyword-only arguments")
    names = [a.arg for a in args.args]
    if "fn" not in names:
        return
    index = names.index("fn")
    offset = len(args.args) - len(args.defaults)
    if index < offset or index != len(names) - 1:
        raise ProblemRefused(
            f"{label}: Model.forward's 'fn' is not its last argument with a default"
        )
    default = args.defaults.pop()
    args.args.pop()
    bind = ast.Assign(targets=[ast.Name(id="fn", ctx=ast.Store())], value=default, lineno=0)
    documented = isinstance(forward.body[0], ast.Expr) and isinstance(
        getattr(forward.body[0], "value", None), ast.Constant
    )
    forward.body.insert(1 if documented else 0, bind)
    ast.fix_missing_locations(forward)


def _arguments(func: ast.FunctionDef, label: str) -> list[tuple[str, ast.expr | None]]:
    """A function's positional arguments with their defaults (None: no default)."""
    args = func.args
    if args.vararg or args.kwarg or args.posonlyargs or args.kwonlyargs:
        raise ProblemRefused(
            f"{label} takes *args, **kwargs, positional- or keyword-only arguments"
        )
    plain = args.args
    defaults: list[ast.expr | None] = [None] * (len(plain) - len(args.defaults))
    return list(zip([a.arg for a in plain], [*defaults, *args.defaults], strict=True))


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None
