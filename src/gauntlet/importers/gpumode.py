"""`gauntlet import gpumode`: GPU MODE reference-kernels problems to ordinary task folders.

For each problem the competition files list (`gmsource`: read as text, never run): refuse it
when it runs on AMD GPUs only, is quantised, or is not in the reference format; else write a
task whose reference is the problem's `ref_kernel` in its own dtypes (`[reference] mode =
"native"`), whose inputs are its `generate_input` (distribution `problem`), whose checker is
its `check_implementation` (`[check]`, run by the judge's trusted reference worker), whose
submission is GPU MODE's `custom_kernel(data)` (`[submission] adapter`, `gmcompat.bind`) and
which may fill the preallocated buffers of `data` (`[submission] outputs`). The problem's
`tests` are the visible configs (the first eight), the rest and its `benchmarks` the fixed
hidden ones; the public seeds are the judge's own.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gauntlet.errors import ConfigError, TaskFormatError
from gauntlet.importers.gmsource import (
    GpuModeProblem,
    Listing,
    competitions,
    read_problem,
)
from gauntlet.importers.kbsource import ProblemRefused
from gauntlet.importers.report import ImportReport, ProblemReport
from gauntlet.task import load_task

#: The submission's file and entry point, as GPU MODE's runner imports it.
SUBMISSION_FILE = "submission.py"
ENTRY = "custom_kernel"
#: Visible configs at most (the task format's bound); later tests are hidden.
MAX_VISIBLE = 8
#: GPU MODE's default `make_match_reference` tolerance, stated for the task format's sake:
#: the problem's own checker decides (`[check]`).
TOLERANCE = {"atol": 1e-8, "rtol": 1e-5}
#: Names the generated files add to the problem's module.
ADDED = frozenset({"reference", "make_inputs", "check", "adapt", "_gmcompat"})


class GpuModeOptions(BaseModel):
    """How to import."""

    track: str = "torch2cuda"
    id_prefix: str = "gpumode"
    """Task ids are `<id_prefix>/<set>/<problem>`."""
    sets: list[str] | None = None
    """Problem sets (the folders under `problems/`, `pmpp_v2`) to import (None: all)."""


def task_name(listing: Listing) -> str:
    """`pmpp_v2/vectorsum` for `pmpp_v2/vectorsum_py`, lowercased."""
    parts = [re.sub(r"[^a-z0-9]+", "_", p.lower()).strip("_") for p in listing.directory.split("/")]
    parts[-1] = parts[-1].removesuffix("_py")
    return "/".join(parts)


def import_gpumode(
    root: Path,
    out: Path,
    options: GpuModeOptions,
    on_problem: Callable[[ProblemReport], None] | None = None,
) -> ImportReport:
    """Import the problems of a GPU MODE reference-kernels checkout into `out`."""
    if options.track not in ("torch2cuda", "torch2triton"):
        raise ConfigError(f"unknown track '{options.track}' (known: torch2cuda, torch2triton)")
    problems = root / "problems" if (root / "problems").is_dir() else root
    try:
        listings = competitions(problems)
    except ProblemRefused as err:
        raise ConfigError(f"cannot read the competition files under '{problems}': {err}") from err
    if not listings:
        raise ConfigError(f"no competition files (*.yaml) under '{problems}'; give a checkout")
    chosen = [
        listing
        for listing in listings
        if options.sets is None or listing.directory.split("/")[0] in options.sets
    ]
    reports = []
    for listing in chosen:
        problem = import_problem(problems, listing, out, options)
        if on_problem is not None:
            on_problem(problem)
        reports.append(problem)
    report = ImportReport(source="gpumode", path=str(root), out=str(out),
                          created=datetime.now(UTC), problems=reports)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "import_report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    return report


def import_problem(
    problems: Path, listing: Listing, out: Path, options: GpuModeOptions
) -> ProblemReport:
    """One problem: its task folder written and loaded, or the reason it is refused."""
    name = task_name(listing)
    folder = out / name
    task_id = f"{options.id_prefix}/{name}"
    try:
        problem = read_problem(problems, listing)
        notes = write_task(problem, folder, task_id, options.track)
        load_task(folder, expected_id=None)
    except (ProblemRefused, TaskFormatError) as err:
        shutil.rmtree(folder, ignore_errors=True)
        return ProblemReport(problem=listing.directory, outcome="refused", reason=str(err))
    return ProblemReport(
        problem=listing.directory, outcome="imported", task_id=task_id, notes=notes
    )


def split_configs(
    problem: GpuModeProblem,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Visible configs (the first tests) and fixed hidden ones (the rest, the benchmarks).

    A spec repeated with another public seed is one config: the judge draws its own seeds.
    """
    unique: list[dict[str, Any]] = []
    for params in problem.tests + problem.benchmarks:
        if params not in unique:
            unique.append(params)
    tests = [p for p in unique if p in problem.tests]
    visible = tests[:MAX_VISIBLE]
    hidden = [p for p in unique if p not in visible]
    if not hidden and len(visible) > 1:
        hidden = [visible.pop()]
    if not hidden:
        raise ProblemRefused("one test and no benchmarks: nothing to hold out")
    return visible, hidden


def write_task(problem: GpuModeProblem, folder: Path, task_id: str, track: str) -> list[str]:
    """Write the task folder; returns the notes for the report."""
    clash = ADDED & _defined(problem.module_text)
    if clash:
        raise ProblemRefused(f"the problem defines {sorted(clash)[0]!r}, a name the task adds")
    visible, hidden = split_configs(problem)
    folder.mkdir(parents=True, exist_ok=True)
    header = _header(problem)
    names = ", ".join(problem.inputs)
    data = problem.inputs[0] if problem.single else f"({names},)"
    constants = f"_NAMES = {tuple(problem.inputs)!r}\n_SINGLE = {problem.single!r}\n"
    files = {
        "reference.py": f"{header}\n{problem.module_text}\n\n# --- the task's reference ---\n\n\n"
        f"def reference({names}):\n"
        '    """`ref_kernel` on the task\'s inputs, packed as GPU MODE\'s `data`."""\n'
        f"    return ref_kernel({data})\n",
        "inputs.py": f"{header}\n{problem.module_text}\n\n# --- the task's inputs ---\n"
        f"from gauntlet.importers import gmcompat as _gmcompat\n\n{constants}\n\n"
        "def make_inputs(config, seed, distribution, device):\n"
        '    """The problem\'s `generate_input` (distribution `problem`; it picks the device)."""\n'
        "    return _gmcompat.make_inputs(generate_input, config, seed, _NAMES, _SINGLE)\n",
        "check.py": f"{header}\n{problem.module_text}\n\n# --- the task's checker ---\n"
        f"from gauntlet.importers import gmcompat as _gmcompat\n\n{constants}\n\n"
        "def check(inputs, output):\n"
        '    """The problem\'s `check_implementation` on the trial\'s own inputs."""\n'
        "    data = _gmcompat.pack(list(inputs.values()), _SINGLE)\n"
        "    return _gmcompat.outcome(check_implementation(data, output))\n",
        "compat.py": f"{header}\nfrom gauntlet.importers import gmcompat as _gmcompat\n\n\n"
        "def adapt(entry, config, device):\n"
        '    """GPU MODE\'s `custom_kernel(data)` as a function of the task\'s inputs."""\n'
        f"    return _gmcompat.bind(entry, {problem.single!r})\n",
        "template.py": f"{header}\n{problem.template_text}",
        "task.toml": task_toml(problem, task_id, track, visible, hidden),
    }
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    notes = [
        "no roofline: the problem's inputs are drawn on CUDA only, so nothing is measured here"
    ]
    if problem.outputs:
        notes.append(f"output buffers the kernel may fill: {', '.join(problem.outputs)}")
    notes.append(f"{len(visible)} visible configs (tests), {len(hidden)} fixed hidden configs")
    return notes


def _defined(text: str) -> set[str]:
    import ast

    from gauntlet import syntax

    names: set[str] = set()
    for node in syntax.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _header(problem: GpuModeProblem) -> str:
    return (
        f'"""GPU MODE problem {problem.listing.directory} ({problem.listing.name}).\n\n'
        "Generated by `gauntlet import gpumode` (docs/importers.md); the problem's code is its\n"
        'authors\'. Regenerate rather than edit.\n"""\n'
    )


def description(problem: GpuModeProblem) -> str:
    """What the agent reads: the problem's description, then the contract."""
    if problem.single:
        data = f"the tensor `{problem.inputs[0]}`"
    else:
        data = f"the tuple `({', '.join(problem.inputs)})`"
    buffers = (
        "are preallocated output buffers"
        if len(problem.outputs) > 1
        else "is a preallocated output buffer"
    )
    filled = (
        f" `{'`, `'.join(problem.outputs)}` {buffers} your kernel may fill;"
        " every other input must be left unchanged."
        if problem.outputs
        else " Leave the inputs unchanged."
    )
    return (
        f"{problem.description}\n\nGPU MODE problem {problem.listing.directory}, imported. "
        f"Submit `{SUBMISSION_FILE}` defining `{ENTRY}(data)` as GPU MODE's runner calls it: "
        f"`data` is {data} that the problem's `generate_input` makes.{filled} The problem's own "
        "`check_implementation` judges the output. The configs are its tests and benchmarks; "
        "the judge draws its own seeds, and unseen configs are tested."
    )


def _toml(value: Any) -> str:
    """A TOML value: JSON's strings, numbers and lists are TOML's too; booleans in lowercase."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def _config(name: str, params: dict[str, Any]) -> str:
    return "{ " + ", ".join([f"name = {_toml(name)}"] + [
        f"{key} = {_toml(value)}" for key, value in params.items()
    ]) + " }"  # fmt: skip


def task_toml(
    problem: GpuModeProblem,
    task_id: str,
    track: str,
    visible: list[dict[str, Any]],
    hidden: list[dict[str, Any]],
) -> str:
    """task.toml of the problem."""
    language = "triton" if track == "torch2triton" else "cuda"
    dtypes = {"float32"} | {str(p["dtype"]) for p in visible + hidden if "dtype" in p}
    lines = [
        f"id = {_toml(task_id)}",
        f"track = {_toml(track)}",
        f"title = {_toml('GPU MODE ' + problem.listing.directory.removesuffix('_py'))}",
        "level = 1",
        f"description = {_toml(description(problem))}",
        '# GPU MODE\'s generators draw on CUDA ("cuda" is written into them).',
        'devices = ["cuda"]',
        f"timeout_s = {problem.timeout_s!r}",
        "",
        "[reference]",
        'file = "reference.py"',
        'entry = "reference"',
        "# GPU MODE compares with ref_kernel in its own dtypes (TF32 off), not float64.",
        'mode = "native"',
        "",
        "[inputs]",
        'file = "inputs.py"',
        'distributions = ["problem"]',
        "",
        "[submission]",
        f"files = [{_toml(SUBMISSION_FILE)}]",
        f"entry = {_toml(ENTRY)}",
        f"language = {_toml(language)}",
        'template = "template.py"',
        f"outputs = {_toml(problem.outputs)}",
        'adapter = { file = "compat.py", entry = "adapt" }',
        "",
        "[check]",
        'file = "check.py"',
        'entry = "check"',
        "",
    ]
    lines += ["[[configs.visible]]\n" + "\n".join(
        [f"name = \"C{i}\""] + [f"{k} = {_toml(v)}" for k, v in params.items()]
    ) + "\n" for i, params in enumerate(visible, start=1)]  # fmt: skip
    lines += [
        "[configs.hidden]",
        "fixed = [",
        *[f"    {_config(f'H{i}', params)}," for i, params in enumerate(hidden, start=1)],
        "]",
        "count = 0",
        "",
        "[tolerance]",
    ]
    for dtype in sorted(dtypes):
        lines += [f"[tolerance.{dtype}]", *[f"{k} = {v!r}" for k, v in TOLERANCE.items()]]
    lines += [
        "",
        "# Not measured: the inputs are drawn on CUDA only (see the import report).",
        "[roofline]",
        'flops = "0"',
        'bytes = "0"',
        "",
        "# GPU MODE does not ask two calls to agree (atomic float sums are allowed).",
        "[determinism]",
        "bitwise = false",
        "bound = inf",
        "",
    ]
    return "\n".join(lines)
