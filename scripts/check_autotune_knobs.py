"""Every value of every Triton task's knobs, judged correct at small sizes on this CPU.

    .venv/bin/python scripts/check_autotune_knobs.py        # every Triton task with knobs
    .venv/bin/python scripts/check_autotune_knobs.py torch2triton/causal_conv1d ...

The `autotune` agent judges only the visible configs, so a knob value that is wrong at some
other size would pass its search and fail the final verdict (`overfit`). This script moves each
knob off the template's value, one knob at a time (the others at the template's), rewrites the
template with `gauntlet.knobs`, and judges the result through `gauntlet.Judge` on the `cpu`
device (Triton's interpreter): GPU tasks at the tiny, odd sizes of `check_tasks_interpreter.py`
(TINY), CPU tasks at their visible and hidden configs, every distribution. Nothing is timed.
Prints one line per point and exits 1 if any fails.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import cast

from gauntlet import suites
from gauntlet.judge.service import Judge
from gauntlet.knobs import apply, template_point
from gauntlet.task import Task

SCRIPTS = Path(__file__).resolve().parent


def _interpreter_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_tasks_interpreter", SCRIPTS / "check_tasks_interpreter.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _small(task: Task) -> Task:
    """The task as judged here: at TINY sizes when it is a GPU task."""
    if "cpu" in task.spec.device_kinds():
        return task
    interpreter = _interpreter_script()
    return cast(Task, interpreter.tiny_task(task, interpreter.tiny_configs(task.task_id)))


def main(argv: list[str]) -> int:
    """Judge every knob value of the named tasks (default: every Triton task with knobs)."""
    tasks = [suites.load_by_id(i) for i in argv] or [
        t
        for t in suites.select()
        if t.spec.autotune is not None and t.spec.submission.language == "triton"
    ]
    failed = 0
    with Judge(device="cpu") as judge, tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            tuning = task.spec.autotune
            assert tuning is not None, f"{task.task_id} declares no knobs"
            template = task.path(tuning.template).read_text(encoding="utf-8")
            start = template_point(template, tuning.template, tuning.knobs)
            small = _small(task)
            target = tuning.file or task.spec.submission.files[0]
            for name, values in tuning.knobs.items():
                for value in values:
                    if value == start[name] and name != next(iter(tuning.knobs)):
                        continue  # the template's own point is judged once, with the first knob
                    point = {**start, name: value}
                    folder = Path(tmp) / f"{task.task_id.replace('/', '-')}-{name}-{value}"
                    folder.mkdir()
                    (folder / target).write_text(apply(template, tuning.template, point))
                    started = time.monotonic()
                    verdict = judge.eval(small, folder, configs="all", seed=1)
                    mark = "ok  " if verdict.passed else "FAIL"
                    failed += not verdict.passed
                    print(
                        f"{mark} {task.task_id:38s} {name}={value!s:8s} {verdict.status:10s} "
                        f"({time.monotonic() - started:.0f} s) {verdict.reason[:160]}",
                        flush=True,
                    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
