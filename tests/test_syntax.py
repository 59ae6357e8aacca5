"""`syntax.parse`: the one way the project parses Python, one thread at a time."""

from __future__ import annotations

import ast
import re
import threading
import time
from pathlib import Path

import pytest

from gauntlet import syntax

SRC = Path(__file__).resolve().parents[1] / "src" / "gauntlet"


def test_parses_as_ast_does() -> None:
    assert ast.dump(syntax.parse("x = f(1)\n")) == ast.dump(ast.parse("x = f(1)\n"))
    assert isinstance(syntax.parse("a + 1", mode="eval"), ast.Expression)
    with pytest.raises(SyntaxError) as caught:
        syntax.parse("def (:\n", filename="broken.py")
    assert caught.value.filename == "broken.py"


def test_threads_parse_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # CPython 3.11's AST constructor keeps shared state: two parses at once may fail with
    # "AST constructor recursion depth mismatch" (python/cpython#106905).
    inside, most = 0, 0
    count = threading.Lock()
    real = ast.parse

    def watched(*args: object, **kwargs: object) -> ast.AST:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.002)
        try:
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with count:
                inside -= 1

    monkeypatch.setattr(ast, "parse", watched)
    threads = [
        threading.Thread(target=syntax.parse, args=("y = [i for i in range(3)]\n",))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1


def test_no_module_parses_around_the_lock() -> None:
    direct = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if path.name != "syntax.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bast\.parse\(", line)
    ]
    assert direct == []
