"""Generators of the tile tasks' compiler baselines and expert solutions.

Every task folder under `tasks/accel/tile/` holds a `baseline.asm` and an `expert.asm` written
by these generators (`python -m _codegen` from `tasks/accel/tile/`; `--check` compares instead
of writing). The sources are parametric: the judge assembles them once per configuration with
that configuration's symbols, so one program serves every shape and every array size.
"""

from __future__ import annotations

from collections.abc import Callable

from .tasks import TASKS

#: Task folder name -> (baseline source, expert source).
GENERATORS: dict[str, Callable[[], tuple[str, str]]] = dict(TASKS)


def generate(name: str) -> tuple[str, str]:
    """The baseline and expert sources of one task."""
    return GENERATORS[name]()
