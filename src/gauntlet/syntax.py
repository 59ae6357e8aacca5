"""Parsing Python source into a syntax tree, safely from several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in state shared by the whole
interpreter, so two threads parsing at once can corrupt each other's count and one of them
fails with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905).
The judge parses guards and signatures from the threads that run judgments side by side, and
a run's tasks are loaded from several threads: every parse goes through this one lock.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(
    source: str | bytes, filename: str = "<unknown>", mode: Literal["exec"] = "exec"
) -> ast.Module: ...


@overload
def parse(
    source: str | bytes, filename: str = "<unknown>", *, mode: Literal["eval"]
) -> ast.Expression: ...


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse(source, filename, mode)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
