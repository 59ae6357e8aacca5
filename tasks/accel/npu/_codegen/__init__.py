"""Generators of the npu tasks' compiler baselines and expert solutions.

Every task folder under `tasks/accel/npu/` holds a `baseline.asm` and an `expert.asm` written
by these generators (`python -m _codegen` from `tasks/accel/npu/`; `--check` compares instead of
writing, as the tests do). The sources are parametric: the judge assembles them once per
configuration with that configuration's symbols.
"""

from __future__ import annotations

from collections.abc import Callable

from . import attntasks, blocktasks, convtasks, flashtask, mlptasks, mmtasks, rows, rowtasks

#: Task folder name -> (baseline source, expert source).
GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {}


def _row_task(name: str) -> Callable[[], tuple[str, str]]:
    def generate() -> tuple[str, str]:
        kernel = rowtasks.KERNELS[name]()
        return rows.baseline(kernel), rows.expert(kernel)

    return generate


for _name in rowtasks.KERNELS:
    GENERATORS[_name] = _row_task(_name)
GENERATORS.update(mmtasks.GENERATORS)
GENERATORS.update(convtasks.GENERATORS)
GENERATORS.update(mlptasks.GENERATORS)
GENERATORS.update(attntasks.GENERATORS)
GENERATORS.update(flashtask.GENERATORS)
GENERATORS.update(blocktasks.GENERATORS)


def generate(name: str) -> tuple[str, str]:
    """The baseline and expert sources of one task."""
    return GENERATORS[name]()
