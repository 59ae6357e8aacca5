"""GPU MODE's contract for imported tasks: what their generated files call.

Trusted task code, light on imports: `compat.py` (the task's `[submission] adapter`, run in
the candidate's process) binds a GPU MODE submission, `custom_kernel(data)`, to the judge's
call with one argument per input; `inputs.py` names the items of `generate_input`'s tuple;
`check.py` (run in the reference worker) hands the problem's `check_implementation` the data
tuple and reads its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Seeds GPU MODE's generators take (`manual_seed` of a Python int; the problems add small
#: offsets to it).
SEED_RANGE = 1 << 62


def pack(values: Sequence[Any], single: bool) -> Any:
    """GPU MODE's `data`: the inputs as a tuple, or the one tensor of a single-input problem."""
    return values[0] if single else tuple(values)


def bind(entry: Callable[..., Any], single: bool) -> Callable[..., Any]:
    """`custom_kernel(data)` as a function of the task's inputs, in order."""

    def call(*inputs: Any) -> Any:
        return entry(pack(inputs, single))

    return call


def make_inputs(
    generate_input: Callable[..., Any],
    config: Mapping[str, Any],
    seed: int,
    names: Sequence[str],
    single: bool,
) -> dict[str, Any]:
    """The problem's own `generate_input(**spec, seed)`, its items named in call order."""
    data = generate_input(**config, seed=seed % SEED_RANGE)
    items = (data,) if single else tuple(data)
    if len(items) != len(names):
        raise ValueError(f"generate_input returned {len(items)} items, expected {list(names)}")
    return dict(zip(names, items, strict=True))


def outcome(result: Any) -> tuple[bool, str]:
    """`check_implementation`'s answer, `(ok, message)`, as the judge's checker returns it."""
    if isinstance(result, tuple) and len(result) == 2:
        return bool(result[0]), str(result[1])
    raise TypeError(f"check_implementation returned {type(result).__name__}, not (ok, message)")
