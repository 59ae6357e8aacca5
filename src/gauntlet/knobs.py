"""Tuning knobs: named constants of a task's source file, found and rewritten as text.

A task's `[autotune]` table names a template (its expert or baseline file) and, per knob, the
values to try. A knob is a constant the template defines exactly once, in its language's
plainest form:

- Python (Triton, CUDA through Python, PyTorch): a module-level `NAME = literal` (or
  `NAME: type = literal`);
- accelerator assembly: `.equ NAME, expression`;
- C++/CUDA sources (`.cu`, `.cuh`, `.h`, `.cpp`): `#define NAME value`.

Rewriting replaces the value's text and nothing else, so a tuned file is the template with a
few values changed: it reads like the template, and the judge sees an ordinary submission.
Nothing here imports or runs the template.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gauntlet import syntax

Value = int | float | str | bool

_ASM_EQU = r"^[ \t]*\.equ[ \t]+{name}[ \t]*,[ \t]*(?P<value>[^;\n]*?)[ \t]*(?:;[^\n]*)?$"
_C_DEFINE = r"^[ \t]*#[ \t]*define[ \t]+{name}[ \t]+(?P<value>[^\n]*?)[ \t]*(?://[^\n]*)?$"
_C_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc")


class KnobError(ValueError):
    """A knob the template does not define once in a form that can be rewritten."""


@dataclass(frozen=True)
class Span:
    """Where a knob's value lies in the template text (character offsets)."""

    start: int
    end: int


def syntax_of(file_name: str) -> str:
    """The constant syntax a file uses: `python`, `asm` or `c`, from its name."""
    if file_name.endswith(".py"):
        return "python"
    if file_name.endswith(".asm"):
        return "asm"
    if file_name.endswith(_C_SUFFIXES):
        return "c"
    raise KnobError(
        f"'{file_name}' is not a file whose constants can be tuned "
        f"(.py, .asm, {', '.join(_C_SUFFIXES)})"
    )


def render_value(value: Value, syntax: str) -> str:
    """A value as it is written in a source of that syntax."""
    if syntax == "python":
        return repr(value)
    if isinstance(value, bool):
        return ("1" if value else "0") if syntax == "asm" else ("true" if value else "false")
    return str(value)


def locate(text: str, file_name: str, name: str) -> Span:
    """The span of knob `name`'s value in `text`.

    Raises:
        KnobError: The file defines `name` not at all, more than once, or not as a constant.
    """
    syntax = syntax_of(file_name)
    if syntax == "python":
        return _locate_python(text, file_name, name)
    pattern = _ASM_EQU if syntax == "asm" else _C_DEFINE
    found = list(re.finditer(pattern.format(name=re.escape(name)), text, re.MULTILINE))
    form = ".equ NAME, value" if syntax == "asm" else "#define NAME value"
    if len(found) != 1:
        raise KnobError(
            f"knob '{name}' must be defined exactly once in {file_name} as '{form}' "
            f"(found {len(found)})"
        )
    if not found[0].group("value"):
        raise KnobError(f"knob '{name}' has no value in {file_name}")
    return Span(found[0].start("value"), found[0].end("value"))


def current(text: str, file_name: str, name: str) -> str:
    """The text of knob `name`'s value as the template has it."""
    span = locate(text, file_name, name)
    return text[span.start : span.end]


def template_point(text: str, file_name: str, space: Mapping[str, list[Value]]) -> dict[str, Value]:
    """The point of `space` that the template itself is (each knob's current value).

    Raises:
        KnobError: A knob is not a constant of the template, or its value is not in the space.
    """
    syntax = syntax_of(file_name)
    point: dict[str, Value] = {}
    for name, values in space.items():
        written = current(text, file_name, name).strip()
        matches = [v for v in values if _same(v, written, syntax)]
        if not matches:
            raise KnobError(
                f"knob '{name}' is {written!r} in {file_name}, which is not one of its values "
                f"{values} (the template must be a point of the space)"
            )
        point[name] = matches[0]
    return point


def apply(text: str, file_name: str, values: Mapping[str, Value]) -> str:
    """The template with each knob's value replaced.

    Raises:
        KnobError: A knob is not defined once as a constant in the template.
    """
    syntax = syntax_of(file_name)
    spans = sorted(
        (
            (locate(text, file_name, name), render_value(value, syntax))
            for name, value in values.items()
        ),
        key=lambda item: item[0].start,
        reverse=True,
    )
    for span, written in spans:
        text = text[: span.start] + written + text[span.end :]
    return text


def _same(value: Value, written: str, syntax: str) -> bool:
    if syntax != "python":
        return render_value(value, syntax) == written
    # A Python literal may be spelled several ways ('x' or "x", 0x10 or 16).
    literal = ast.literal_eval(written)
    return type(literal) is type(value) and literal == value


def _locate_python(text: str, file_name: str, name: str) -> Span:
    try:
        tree = syntax.parse(text, filename=file_name)
    except SyntaxError as err:
        raise KnobError(f"{file_name} is not valid Python (line {err.lineno}): {err.msg}") from err
    found: list[ast.expr] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            found.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                found.append(node.value)
    if len(found) != 1:
        raise KnobError(
            f"knob '{name}' must be assigned exactly once at the top level of {file_name} "
            f"(found {len(found)})"
        )
    value = found[0]
    if not isinstance(value, ast.Constant) or value.end_col_offset is None:
        raise KnobError(
            f"knob '{name}' in {file_name} line {value.lineno} must be a literal "
            f"(a number, string or bool), not an expression"
        )
    starts = _line_starts(text)
    end_line = value.end_lineno or value.lineno
    # ast offsets are in UTF-8 bytes; a knob's line is ASCII up to its value in practice, and
    # a non-ASCII line is measured in bytes to stay exact.
    return Span(
        starts[value.lineno - 1] + _chars(text, starts[value.lineno - 1], value.col_offset),
        starts[end_line - 1] + _chars(text, starts[end_line - 1], value.end_col_offset),
    )


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


def _chars(text: str, line_start: int, byte_offset: int) -> int:
    line = text[line_start:].split("\n", 1)[0]
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
