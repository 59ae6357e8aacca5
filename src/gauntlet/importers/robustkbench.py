"""`gauntlet import robust-kbench`: robust-kbench task folders to ordinary task folders.

Each task folder gives a forward task, and a backward task where it has `func_backward.py`
(`rkbsource` writes it as a KernelBench problem, never running it). From there the KernelBench
importer's machinery does the rest in its probe processes: analysis on the meta device with
the task's own cross product of configs as the visible configs, the written task, its checks
and the degeneracy gate, rewrites or a refusal. A backward task declares `[backward]` over every
float forward input and parameter, so the judge compares all their gradients and times the
forward plus the backward.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from gauntlet.importers.kbprobe import KERNELBENCH_TOL, Analysis
from gauntlet.importers.kbsource import ProblemRefused
from gauntlet.importers.kbwrite import TaskPlan
from gauntlet.importers.kernelbench import (
    DISTRIBUTIONS,
    ImportOptions,
    import_plan,
    refused,
)
from gauntlet.importers.report import ImportReport, ProblemReport
from gauntlet.importers.rkbsource import (
    Direction,
    directions,
    read_problem,
    task_folders,
    tasks_root,
)

#: robust-kbench's tolerance (atol = rtol) in float32 with TF32 off; half dtypes, which it does
#: not run, keep KernelBench's.
TOLERANCES = {**KERNELBENCH_TOL, "float32": 1e-5}
#: The level of a curated task (a KernelBench port keeps its own level).
CURATED_LEVEL = 2


def task_name(root: Path, folder: Path, direction: Direction) -> str:
    """`layernorm_backward`, or `l1/task_23` for a KernelBench port, lowercased."""
    parts = folder.relative_to(tasks_root(root)).parts
    stem = "/".join(parts[1:]) if parts[0] == "kernelbench" else folder.name
    stem = re.sub(r"level_(\d+)", r"l\1", stem)
    slug = re.sub(r"[^a-z0-9/]+", "_", stem.lower()).strip("_")
    return slug + ("_backward" if direction == "backward" else "")


def _level(folder: Path) -> int:
    match = re.search(r"level_(\d+)", folder.as_posix())
    return min(int(match.group(1)), 3) if match else CURATED_LEVEL


def import_robust_kbench(
    root: Path,
    out: Path,
    options: ImportOptions,
    ports: bool = False,
    names: list[str] | None = None,
    on_problem: Callable[[ProblemReport], None] | None = None,
) -> ImportReport:
    """Import the task folders under `root` (forward and backward) into `out`.

    Args:
        root: A robust-kbench checkout or its `tasks/` folder.
        out: Where the task folders and `import_report.json` go.
        options: The KernelBench importer's options (track, id prefix, caps, jobs).
        ports: Also the KernelBench v0 ports under `tasks/kernelbench/`.
        names: Task folder names to import (None: all).
        on_problem: Called with each problem's report as it is done.
    """
    if not root.is_dir():
        raise ProblemRefused(f"'{root}' is not a folder; give a robust-kbench checkout")
    items = [
        (folder, direction)
        for folder in task_folders(root, ports)
        if names is None or folder.name in names
        for direction in directions(folder)
    ]

    def one(item: tuple[Path, Direction]) -> ProblemReport:
        report = import_task(root, item[0], item[1], out, options)
        if on_problem is not None:
            on_problem(report)
        return report

    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        problems = list(pool.map(one, items))
    report = ImportReport(source="robust-kbench", path=str(root), out=str(out),
                          created=datetime.now(UTC), problems=problems)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "import_report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    return report


def import_task(
    root: Path, folder: Path, direction: Direction, out: Path, options: ImportOptions
) -> ProblemReport:
    """One task folder in one direction: read, then as a KernelBench problem from there."""
    name = task_name(root, folder, direction)
    problem = f"{folder.relative_to(tasks_root(root)).as_posix()}/func_{direction}.py"
    target = out / name
    try:
        read = read_problem(folder, direction)
    except (ProblemRefused, UnicodeDecodeError) as err:
        return refused(problem, target, str(err))
    plan = TaskPlan(
        task_id=f"{options.id_prefix}/{name}", problem=problem, level=_level(folder),
        track=options.track, source=read.source, analysis=Analysis(),
        distributions=list(DISTRIBUTIONS), origin="robust-kbench",
        title=f"robust-kbench {folder.name}" + (" (backward)" if direction == "backward" else ""),
        backward=direction == "backward", tolerances=dict(TOLERANCES),
    )  # fmt: skip
    report = import_plan(plan, target, options, read.configs)
    if read.fixed and report.outcome != "refused":
        fixed = ", ".join(f"{k} = {v!r}" for k, v in sorted(read.fixed.items()))
        return report.model_copy(
            update={"notes": [*report.notes, f"settings fixed for every config: {fixed}"]}
        )
    return report
