from __future__ import annotations

import pytest

from gauntlet.expr import ExprError, evaluate, names


def test_arithmetic_and_functions() -> None:
    assert evaluate("2 * rows * cols * itemsize", {"rows": 3, "cols": 5, "itemsize": 4}) == 120
    assert evaluate("cdiv(n, 128) * max(a, 2)", {"n": 129, "a": 1}) == 4
    assert evaluate("n % 2 == 1 and n < 10", {"n": 7}) is True
    assert evaluate("1 if big else 0", {"big": False}) == 0
    assert names("min(a, b) + ceil(c)") == {"a", "b", "c"}


@pytest.mark.parametrize(
    "source",
    ["__import__('os')", "x.__class__", "[1, 2]", "lambda: 1", "'text'", "open('f')", "a[0]"],
)
def test_unsafe_or_unknown_constructs_are_refused(source: str) -> None:
    with pytest.raises(ExprError):
        evaluate(source, {"x": 1, "a": [1]})


def test_unknown_name() -> None:
    with pytest.raises(ExprError, match="unknown name 'm'"):
        evaluate("m + 1", {"n": 1})
