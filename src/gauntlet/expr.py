"""Safe arithmetic expressions over a configuration (roofline models, constraints).

Task files write formulas such as ``"2 * rows * cols * itemsize"``; they are parsed once into an
AST that admits only numbers, names, arithmetic, comparisons, boolean logic and a few pure
functions, so a task file can never run code.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from gauntlet import syntax

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "cdiv": lambda a, b: -(-a // b),
}


class ExprError(ValueError):
    """An expression that does not parse or uses something not allowed."""


@lru_cache(maxsize=1024)
def parse(source: str) -> ast.Expression:
    """Parse and validate an expression; raises ExprError naming the offending part."""
    try:
        tree = syntax.parse(source, mode="eval")
    except SyntaxError as err:
        raise ExprError(f"'{source}' is not an expression: {err.msg}") from err
    for node in ast.walk(tree):
        allowed = (
            ast.Expression,
            ast.Constant,
            ast.Name,
            ast.Load,
            ast.BinOp,
            ast.UnaryOp,
            ast.BoolOp,
            ast.And,
            ast.Or,
            ast.Compare,
            ast.Call,
            ast.IfExp,
            *_BINARY,
            *_UNARY,
            *_COMPARE,
        )
        if not isinstance(node, allowed):
            raise ExprError(f"'{source}': {type(node).__name__} is not allowed in an expression")
        if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | bool):
            raise ExprError(f"'{source}': only numeric constants are allowed")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ExprError(
                f"'{source}': only these functions may be called: {', '.join(sorted(FUNCTIONS))}"
            )
    return tree


def names(source: str) -> set[str]:
    """The variable names an expression reads (function names excluded)."""
    tree = parse(source)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def evaluate(source: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate an expression over the given variables."""
    return _eval(parse(source).body, variables, source)


def _eval(node: ast.AST, env: Mapping[str, Any], source: str) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Name(id=name):
            if name not in env:
                raise ExprError(f"'{source}': unknown name '{name}' (known: {', '.join(env)})")
            return env[name]
        case ast.BinOp(left=left, op=binary, right=right):
            return _BINARY[type(binary)](_eval(left, env, source), _eval(right, env, source))
        case ast.UnaryOp(op=unary, operand=operand):
            return _UNARY[type(unary)](_eval(operand, env, source))
        case ast.BoolOp(op=ast.And(), values=values):
            return all(_eval(v, env, source) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return any(_eval(v, env, source) for v in values)
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            current = _eval(left, env, source)
            for compare, right in zip(ops, comparators, strict=True):
                value = _eval(right, env, source)
                if not _COMPARE[type(compare)](current, value):
                    return False
                current = value
            return True
        case ast.IfExp(test=test, body=body, orelse=orelse):
            return _eval(body if _eval(test, env, source) else orelse, env, source)
        case ast.Call(func=ast.Name(id=fname), args=args):
            return FUNCTIONS[fname](*(_eval(a, env, source) for a in args))
    raise ExprError(f"'{source}': cannot evaluate {type(node).__name__}")
