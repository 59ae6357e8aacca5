"""KernelBench problem files read as text: their constants, and the code rewritten around them.

This module never runs a problem. It parses the file (`ast`), finds the module constants a
config may rebind, and writes the problem's code inside one function, `_problem(constants...)`,
so that re-running the whole module with other constants is a function call: the model, its
helper classes and `get_inputs` read the constants as closure variables, derived assignments
(`input_shape = (num_classes,)`, `groups = in_channels`) are recomputed, and globals read
inside the model (KernelBench L2/83 reads `min_value` in `forward`) keep working.
"""

from __future__ import annotations

import ast
import importlib.util
import operator
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from gauntlet import syntax
from gauntlet.errors import ConfigError

#: Names every KernelBench problem file defines.
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


def installed(module: str) -> bool:
    """Whether a module a problem imports can be found here (found, not imported).

    Any installed module will do: the reference (the baseline of a torch2* task) is the task's
    own code, which the judge's guards do not read (numpy in a Swin transformer's window mask).
    """
    return importlib.util.find_spec(module.split(".")[0]) is not None


#: The arithmetic a constant's literal expression may use.
_OPERATORS: dict[type[ast.operator], Callable[[int | float, int | float], int | float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


#: Layer constructors whose size arguments (by position, and by keyword) a problem may write as
#: literals (`nn.Conv2d(3, 96, ...)`, level 3's networks): those become module constants. The
#: structural arguments (kernel, stride, groups, heads) are never among them.
SIZE_ARGUMENTS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    **dict.fromkeys(
        ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"),
        ((0, 1), ("in_channels", "out_channels")),
    ),
    "Linear": ((0, 1), ("in_features", "out_features")),
    **dict.fromkeys(
        (
            "BatchNorm1d",
            "BatchNorm2d",
            "BatchNorm3d",
            "InstanceNorm1d",
            "InstanceNorm2d",
            "InstanceNorm3d",
        ),
        ((0,), ("num_features",)),
    ),  # fmt: skip
    "LayerNorm": ((0,), ("normalized_shape",)),
    "GroupNorm": ((1,), ("num_channels",)),
    "Embedding": ((0, 1), ("num_embeddings", "embedding_dim")),
    **dict.fromkeys(("LSTM", "GRU", "RNN"), ((0, 1), ("input_size", "hidden_size"))),
    "MultiheadAttention": ((0,), ("embed_dim",)),
    # Tensor factories: every positional argument is a size.
    **dict.fromkeys(("rand", "randn", "zeros", "ones", "empty"), ((0, 1, 2, 3, 4, 5), ())),
}
#: Integer literals at least this large in a size argument are hoisted (smaller ones: kernel
#: sizes, factors of a spatial size such as AlexNet's `256 * 6 * 6`).
LITERAL_MIN = 8
#: Names of attributes that hold a size (`self.in_channels = 64`).
SIZE_NAME = re.compile(r"channel|feature|dim|size|width|hidden|embed")
#: Names of integer constants and arguments that are never sizes, whatever their value.
STRUCTURAL = re.compile(r"kernel|stride|pad|dilation|group|axis|heads|layers")


class ProblemRefused(ConfigError):
    """A problem file the importer cannot turn into a task; the message is the reason."""


@dataclass(frozen=True)
class ProblemSource:
    """A problem file, parsed."""

    imports: list[str]
    """The top-level import statements, as written."""
    constants: dict[str, int | float]
    """Module constants a config may rebind, in file order, with their shipped values."""
    body: list[str]
    """Every other top-level statement, as source, in file order."""
    forward_args: list[str]
    """Names of `Model.forward`'s parameters after `self`."""
    hoisted: list[str] = field(default_factory=list)
    """Constants made of size literals in layer calls (`size_256` for `nn.Conv2d(96, 256)`)."""


def parse_problem(text: str, name: str) -> ProblemSource:
    """Read a KernelBench problem file; raises ProblemRefused naming what does not fit."""
    try:
        tree = syntax.parse(text, filename=name)
    except SyntaxError as err:
        raise ProblemRefused(f"not valid Python: {err.msg} (line {err.lineno})") from err
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    missing = [r for r in REQUIRED if r not in defined]
    if missing:
        raise ProblemRefused(f"defines no {', '.join(missing)}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global | ast.Nonlocal):
            raise ProblemRefused("uses a global or nonlocal statement")
    assigned: dict[str, int] = {}
    for node in tree.body:
        for target in _targets(node):
            assigned[target] = assigned.get(target, 0) + 1
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(assigned)
    hoister = _SizeLiterals(taken, _own_callables(tree))
    hoister.visit(tree)
    for node in tree.body:
        # `input_shape = (batch_size, 3, 224, 224)`: a shape of names and literals (a shape of
        # literals only is one constant per element, below).
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Tuple | ast.List)
            and any(isinstance(e, ast.Name) for e in node.value.elts)
        ):
            node.value.elts = [hoister.sized(e) for e in node.value.elts]
    imports: list[str] = []
    constants: dict[str, int | float] = dict(hoister.constants)
    body: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            )
            missing = [m or "a relative import" for m in modules if m is None or not installed(m)]
            if missing:
                raise ProblemRefused(f"imports {', '.join(missing)}, which is not installed here")
            imports.append(ast.unparse(node))
            continue
        found = _literal_constants(node)
        # A name assigned twice is state, not a constant: it stays in the code as written.
        if found and all(assigned[k] == 1 for k in found):
            constants.update(found)
            continue
        shape = _literal_tuple(node)
        if shape is not None and assigned[shape[0]] == 1:
            # `input_shape = (32768,)`, `layer_sizes = [400, 800]`, `sizes = [1024] * 16`: each
            # element a constant of its own (`input_shape_0`; one for a repeated element), so
            # sizes inside them are reduced and varied too.
            name, values, brackets, times = shape
            elements = {f"{name}_{i}": v for i, v in enumerate(values)}
            if not set(elements) & (set(assigned) | set(constants)):
                constants.update(elements)
                repeat = f" * {times}" if times is not None else ""
                body.append(f"{name} = {brackets[0]}{', '.join(elements)},{brackets[1]}{repeat}")
                continue
        body.append(ast.unparse(node))
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    forward = next(
        (n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None
    )
    if forward is None:
        raise ProblemRefused("Model defines no forward")
    args = forward.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise ProblemRefused("Model.forward takes *args, **kwargs or keyword-only arguments")
    return ProblemSource(
        imports=imports,
        constants=constants,
        body=body,
        forward_args=[a.arg for a in args.args[1:]],
        hoisted=list(hoister.constants),
    )


class _SizeLiterals(ast.NodeTransformer):
    """Integer literals in the size arguments of layer calls, replaced by one name per value.

    One name per value keeps sizes that are equal tied (a conv's output channels and the next
    layer's input), as the shipped problem has them; a config then rebinds them all at once.
    """

    def __init__(self, taken: set[str], own: set[str]) -> None:
        self.taken = taken
        self.own = own
        self.depth = 0
        """How many functions deep the visit is."""
        self.constants: dict[str, int] = {}
        self.names: dict[int, str] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:  # noqa: N802 - ast's naming
        """Sizes in a function, and the literals `get_init_inputs` returns.

        Constructor arguments are sizes (DenseNet's `return [32, num_classes]`).
        """
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        if node.name == "get_init_inputs":
            for returned in ast.walk(node):
                if isinstance(returned, ast.Return) and isinstance(
                    returned.value, ast.List | ast.Tuple
                ):
                    returned.value.elts = [self.sized(e) for e in returned.value.elts]
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:  # noqa: N802 - ast's visitor naming
        """A size named as one, in a function: `self.in_channels = 64`, `num_features = 64`.

        Module constants are handled apart (`parse_problem`).
        """
        self.generic_visit(node)
        target = node.targets[0] if len(node.targets) == 1 else None
        name = (
            target.attr if isinstance(target, ast.Attribute)
            else target.id if isinstance(target, ast.Name) and self.depth else ""
        )  # fmt: skip
        if name and SIZE_NAME.search(name.lower()) and not STRUCTURAL.search(name.lower()):
            node.value = self.sized(node.value)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802 - ast's visitor naming
        self.generic_visit(node)
        func = node.func
        callee = func.attr if isinstance(func, ast.Attribute) else None
        if callee in SIZE_ARGUMENTS:
            positions, keywords = SIZE_ARGUMENTS[callee]
            node.args = [self.sized(a) if i in positions else a for i, a in enumerate(node.args)]
            for keyword in node.keywords:
                if keyword.arg in keywords:
                    keyword.value = self.sized(keyword.value)
        elif (func.id if isinstance(func, ast.Name) else callee) in self.own:
            # The problem's own blocks (`InceptionModule(192, 64, 96, ...)`, `_make_layer(block,
            # 64, 2)`): their arguments feed its layers; structural keywords stay.
            node.args = [self.sized(a) for a in node.args]
            for keyword in node.keywords:
                if keyword.arg is not None and not STRUCTURAL.search(keyword.arg.lower()):
                    keyword.value = self.sized(keyword.value)
        return node

    def sized(self, node: ast.expr) -> ast.expr:
        """The argument with its integer literals of LITERAL_MIN or more named.

        Only arithmetic of literals, names and attributes (`512 * Block.expansion`), also
        rounded by `int(...)` (MobileNet's width multiplier, `int(64 * alpha)`); another call or
        a subscript is left as written.
        """
        allowed = (
            ast.Constant | ast.Name | ast.Attribute | ast.BinOp | ast.UnaryOp | ast.operator
            | ast.unaryop
        )  # fmt: skip
        for part in ast.walk(node):
            if isinstance(part, ast.Call):
                if not (
                    isinstance(part.func, ast.Name)
                    and part.func.id == "int"
                    and len(part.args) == 1
                    and not part.keywords
                ):
                    return node
            elif not isinstance(part, allowed | ast.expr_context):
                return node
        return _Replace(self).visit(node)  # type: ignore[no-any-return]

    def name_of(self, value: int) -> str:
        if value not in self.names:
            name = f"size_{value}"
            while name in self.taken:
                name += "_"
            self.taken.add(name)
            self.names[value] = name
            self.constants[name] = value
        return self.names[value]


def _own_callables(tree: ast.Module) -> set[str]:
    """Classes and functions the problem defines, and its classes' methods (not `Model`).

    Also functions defined inside a method that build layers (MobileNet's `conv_bn(inp, oup,
    stride)` inside `__init__`); a nested helper that builds none (`_make_divisible(v, 8)`)
    takes numbers that need not be sizes.
    """
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name not in REQUIRED:
            found.add(node.name)
        if isinstance(node, ast.ClassDef) and node.name != "Model":
            found.add(node.name)
        if isinstance(node, ast.ClassDef):
            found.update(
                n.name for n in node.body
                if isinstance(n, ast.FunctionDef) and not n.name.startswith("__")
                and n.name != "forward"
            )  # fmt: skip
            for method in node.body:
                if isinstance(method, ast.FunctionDef):
                    found.update(
                        n.name for n in ast.walk(method)
                        if isinstance(n, ast.FunctionDef) and n is not method and _builds_layers(n)
                    )  # fmt: skip
    return found


def _builds_layers(function: ast.FunctionDef) -> bool:
    """Whether a function calls a layer constructor with size arguments (`nn.Conv2d(...)`)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in SIZE_ARGUMENTS
        for n in ast.walk(function)
    )


class _Replace(ast.NodeTransformer):
    def __init__(self, owner: _SizeLiterals) -> None:
        self.owner = owner

    def visit_Constant(self, node: ast.Constant) -> ast.AST:  # noqa: N802 - ast's visitor naming
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool) and value >= LITERAL_MIN:
            return ast.copy_location(ast.Name(id=self.owner.name_of(value), ctx=ast.Load()), node)
        return node


def _targets(node: ast.stmt) -> list[str]:
    names: list[str] = []
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return names


def _literal_constants(node: ast.stmt) -> dict[str, int | float]:
    """`name = 16`, `M = 1024 * 2`, `a, b = 3, 4`, `h = w = 256`: the names and numbers.

    Booleans are not numbers here. Each name of a chained assignment is a constant of its own.
    """
    if not isinstance(node, ast.Assign):
        return {}
    if len(node.targets) > 1:
        number = _number(node.value)
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if number is None or len(names) != len(node.targets):
            return {}
        return dict.fromkeys(names, number)
    target, value = node.targets[0], node.value
    if isinstance(target, ast.Name):
        number = _number(value)
        return {} if number is None else {target.id: number}
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Tuple)
        and len(target.elts) == len(value.elts)
        and all(isinstance(t, ast.Name) for t in target.elts)
    ):
        numbers = [_number(v) for v in value.elts]
        if any(n is None for n in numbers):
            return {}
        return {t.id: n for t, n in zip(target.elts, numbers, strict=True)}  # type: ignore[attr-defined,misc]
    return {}


def _literal_tuple(node: ast.stmt) -> tuple[str, list[int | float], str, int | None] | None:
    """`name = (a, b)`, `name = [a, b]` or `name = [a] * n` of number literals.

    The name, the numbers, the brackets and the repeat count (None: not repeated).
    """
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        return None
    value: ast.expr = node.value
    times: int | None = None
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        right = value.right
        if isinstance(right, ast.Constant) and type(right.value) is int:
            value, times = value.left, right.value
    if not isinstance(value, ast.Tuple | ast.List) or not value.elts:
        return None
    numbers = [_number(v) for v in value.elts]
    if any(n is None for n in numbers):
        return None
    brackets = "()" if isinstance(value, ast.Tuple) else "[]"
    return node.targets[0].id, [n for n in numbers if n is not None], brackets, times


def _number(node: ast.expr) -> int | float | None:
    """The value of an arithmetic expression of number literals, else None."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        if inner is None:
            return None
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Pow
    ):
        left, right = _number(node.left), _number(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Pow) and (not isinstance(right, int) or abs(right) > 64):
            return None
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            return None
        result: int | float = _OPERATORS[type(node.op)](left, right)
        return result
    return None


def problem_function(source: ProblemSource) -> str:
    """The problem's code as `_problem(constants...)`, returning its three entry points."""
    params = ", ".join(source.constants)
    lines = "\n".join(source.body)
    returned = "return Model, get_inputs, get_init_inputs"
    inner = textwrap.indent(f"{lines}\n{returned}", "    ")
    return f"def _problem({params}):\n{inner}\n"


def module_text(source: ProblemSource) -> str:
    """The imports and `_problem`: what the analysis runs, and the start of reference.py."""
    imports = "\n".join(source.imports)
    return f"{imports}\n\n\n{problem_function(source)}"
