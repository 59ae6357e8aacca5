"""The attempt's workspace: the one folder an agent sees, built from what it may see.

A workspace holds the brief (`TASK.md`), the submission's starting file under the contract's
name, the baseline (`triton2triton`, `cuda2cuda`) or the reference (`torch2*`, `accel`) as
read-only files under `reference/`, the visible configs (`configs.json`), the ISA manual for
`accel` (`MANUAL.md`) and `.gauntlet-ws.json`, which tells the `gauntlet-ws` command which task
and device it serves. It never holds the hidden configs or their domain, the input generator,
the expert solution, the judge's secrets or anything of another attempt.

The manifest taken when the workspace is built (path -> sha256) is the tamper digest:
`workspace_changes` compares the folder against it after the agent stopped. The judge reads the
contract's files from the workspace and nothing else.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gauntlet.agents.base import Budget
from gauntlet.agents.tools import tools_for
from gauntlet.errors import ConfigError
from gauntlet.task import Task

logger = logging.getLogger(__name__)

BRIEF_FILE = "TASK.md"
CONFIGS_FILE = "configs.json"
MANUAL_FILE = "MANUAL.md"
REFERENCE_DIR = "reference"
WS_CONFIG_FILE = ".gauntlet-ws.json"
WS_LOG_FILE = ".gauntlet-ws.log"
WS_CONFIG_SCHEMA_VERSION = 1

#: Iteration budget per task level when neither the run nor the task sets one (as KernelCraft).
LEVEL_TURNS = {1: 15, 2: 20, 3: 25}

#: At most this many entries in `workspace_changes`; the rest are counted under one key.
MAX_CHANGES = 500

Change = Literal["added", "modified", "deleted"]

#: The rules of the brief for kernels in Python, Triton or CUDA.
GPU_RULES = (
    "Do the task's work in your own kernel: no calls to the reference, to PyTorch operations or "
    "libraries that compute the result, and no fallback to them.",
    "No `try`/`except` around the kernel, no threads, processes or extra streams, no file, "
    "network or environment access, no patching of timers, PyTorch or the judge.",
    "No caching of results across calls, no hard-coded values for the visible configurations, "
    "no lower precision than the task allows.",
    "Outputs must be plain tensors of the right shape, dtype and device, and inputs must not be "
    "modified.",
)
#: The rules of the brief for assembly programs of the `accel` track.
ACCEL_RULES = (
    "Write the program for the symbols the assembler knows (shape symbols, `itemsize`, the "
    "hardware parameters), not for the numbers of the visible configurations: no hard-coded "
    "values for them.",
    "Write only the output and scratch regions, and every output element.",
    "No lower precision than the task allows.",
)


class WorkspaceConfig(BaseModel):
    """`.gauntlet-ws.json`: what `gauntlet-ws` needs to serve this workspace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = WS_CONFIG_SCHEMA_VERSION
    task_id: str
    track: str
    device: str
    task_dir: str
    """The task folder, for running the tools in-process when no tool server is reachable.
    Under a sandbox the folder is invisible and the tools run outside, behind a socket."""


class Workspace(BaseModel):
    """A built workspace: where it is, its brief, and its manifest as built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path
    task_id: str
    device: str
    brief: str
    """The text of `TASK.md`."""
    manifest: dict[str, str]
    """Relative POSIX path -> sha256 of every file as built."""
    submission_files: tuple[str, ...]
    """The contract's files (relative paths)."""


def turn_limit(task: Task, budget: Budget) -> int:
    """The iteration budget: the run's, else the task's, else the default for the task's level."""
    if budget.turns:
        return budget.turns
    if task.spec.budget.turns:
        return task.spec.budget.turns
    return LEVEL_TURNS[task.spec.level]


def build_workspace(task: Task, dest: Path, *, device: str, budget: Budget) -> Workspace:
    """Build the workspace of one attempt in `dest` (which must not exist or be empty).

    Args:
        task: The loaded task.
        dest: The folder to create.
        device: The device the feedback tools judge on (`cpu`, `cuda:0`, `sim:npu`).
        budget: The attempt's budget, stated in the brief.

    Returns:
        The workspace, with its brief and its manifest as built.

    Raises:
        ConfigError: `dest` holds files already, or an `accel` task's manual cannot be made.
    """
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ConfigError(f"workspace folder '{dest}' is not empty; attempts never share one")
    dest.mkdir(parents=True, exist_ok=True)
    spec = task.spec

    starting = _starting_file(task)
    if starting is not None:
        target = dest / spec.submission.files[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.path(starting), target)

    shown: list[str] = []
    for relative in _reference_files(task):
        target = dest / REFERENCE_DIR / Path(relative).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.path(relative), target)
        target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        shown.append(f"{REFERENCE_DIR}/{target.name}")

    configs = [{"name": c.name, **c.params} for c in task.visible_configs]
    (dest / CONFIGS_FILE).write_text(json.dumps(configs, indent=2) + "\n", encoding="utf-8")

    if spec.track == "accel":
        (dest / MANUAL_FILE).write_text(_accel_manual(task), encoding="utf-8")

    ws_config = WorkspaceConfig(
        task_id=task.task_id, track=spec.track, device=device, task_dir=str(task.root)
    )
    (dest / WS_CONFIG_FILE).write_text(ws_config.model_dump_json(indent=2) + "\n")

    brief = render_brief(task, device=device, budget=budget, reference_files=shown)
    (dest / BRIEF_FILE).write_text(brief, encoding="utf-8")

    workspace = Workspace(
        path=dest,
        task_id=task.task_id,
        device=device,
        brief=brief,
        manifest=digest(dest),
        submission_files=tuple(spec.submission.files),
    )
    logger.debug("built workspace of '%s' in %s", task.task_id, dest)
    return workspace


def digest(folder: Path) -> dict[str, str]:
    """Relative POSIX path -> sha256 of every file under `folder`; symlinks are not followed.

    A symlink is recorded by its target (`symlink:<target>`), so pointing a submission file at
    another file shows up as a change.
    """
    found: dict[str, str] = {}
    for root, dirnames, filenames in os.walk(folder):
        base = Path(root)
        names = list(filenames) + [d for d in dirnames if (base / d).is_symlink()]
        for name in names:
            path = base / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[relative] = f"symlink:{os.readlink(path)}"
            elif path.is_file():
                found[relative] = _sha256(path)
    return found


def workspace_changes(ws: Workspace) -> dict[str, str]:
    """What changed in the workspace since it was built: path -> added / modified / deleted.

    At most `MAX_CHANGES` entries; beyond that one key `...` says how many more there are.
    """
    now = digest(ws.path)
    changes: dict[str, str] = {}
    for path in sorted(set(now) | set(ws.manifest)):
        if path not in ws.manifest:
            changes[path] = "added"
        elif path not in now:
            changes[path] = "deleted"
        elif now[path] != ws.manifest[path]:
            changes[path] = "modified"
    if len(changes) > MAX_CHANGES:
        kept = dict(list(changes.items())[:MAX_CHANGES])
        kept["..."] = f"{len(changes) - MAX_CHANGES} more changes"
        return kept
    return changes


def read_ws_config(workspace: Path) -> WorkspaceConfig:
    """Read `.gauntlet-ws.json` of a workspace.

    Raises:
        ConfigError: The file is missing or malformed.
    """
    path = workspace / WS_CONFIG_FILE
    try:
        return WorkspaceConfig.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ConfigError(
            f"'{workspace}' is not a Kernel Gauntlet workspace (no {WS_CONFIG_FILE})"
        ) from err
    except ValueError as err:
        raise ConfigError(f"{path}: not a valid workspace config: {err}") from err


def render_brief(task: Task, *, device: str, budget: Budget, reference_files: list[str]) -> str:
    """The text of `TASK.md`: the task, the contract, the configs, the tools, the budget, the rules.

    Args:
        task: The task.
        device: The device the feedback tools judge on.
        budget: The attempt's budget.
        reference_files: Workspace paths of the read-only reference files.

    Returns:
        Markdown text.
    """
    spec = task.spec
    contract = spec.submission
    lines = [
        f"# {spec.title}",
        "",
        f"Task `{spec.id}`, track `{spec.track}`, level {spec.level}"
        + (f", platform `{spec.platform}`" if spec.platform else "")
        + f". The feedback tools run on device `{device}`.",
        "",
        spec.description.strip(),
        "",
        "## What you must leave in this folder",
        "",
        f"- Files: {', '.join(f'`{f}`' for f in contract.files)} "
        f"(written in `{contract.language}`, at most {contract.max_bytes} bytes each).",
        f"- Entry point: `{contract.entry}`.",
    ]
    signature = _entry_signature(task)
    if signature:
        lines += ["- Signature:", "", "```python", signature, "```"]
    starting = _starting_file(task)
    if starting is not None:
        lines.append(f"- `{contract.files[0]}` starts as a copy of the task's starting point.")
    lines.append(
        "- When you stop (or your budget runs out) the judge takes these files from this folder, "
        "and only these; nothing else you leave here is used."
    )
    if reference_files:
        what = "the reference implementation" if _shows_reference(task) else "the baseline"
        lines += [
            "",
            f"Read-only files under `{REFERENCE_DIR}/` hold {what}: "
            + ", ".join(f"`{f}`" for f in reference_files)
            + ". Editing them changes nothing: the judge uses the task's pristine files.",
        ]
    if spec.track == "accel":
        lines += ["", f"The ISA manual of platform `{spec.platform}` is in `{MANUAL_FILE}`."]
    lines += ["", "## Visible configurations", "", f"Also in `{CONFIGS_FILE}`:", ""]
    lines += [f"- {config.label()}" for config in task.visible_configs]
    lines += [
        "",
        "The final judgment also runs **configurations you cannot see** (other and unaligned "
        "sizes, larger and smaller shapes, other allowed dtypes) and **other input "
        "distributions** (scaled and offset values, heavy tails, special values). A kernel that "
        "is only right, or only fast, on the visible configurations fails.",
        "",
        "## Tools",
        "",
        "Run them from this folder as `gauntlet-ws <tool> [arguments]` (function-calling agents "
        "get the same tools as functions; arguments in brackets are optional). They take the "
        "contract's files as they are in this folder now, and only the visible configurations. "
        "Every call is logged.",
        "",
    ]
    for tool in tools_for(spec.track, scope="feedback"):
        lines.append(f"- `gauntlet-ws {tool.usage()}`: {tool.summary}")
    lines += ["", "## Budget", ""]
    lines += [f"- {item}" for item in _budget_lines(task, budget)]
    lines += [
        "",
        "When the wall-clock budget runs out your processes are killed, and whatever the "
        "contract's files hold at that moment is judged.",
        "",
        "## Rules",
        "",
    ]
    lines += [f"- {rule}" for rule in (ACCEL_RULES if spec.track == "accel" else GPU_RULES)]
    lines.append("")
    return "\n".join(lines)


def _budget_lines(task: Task, budget: Budget) -> list[str]:
    minutes = budget.wall_s / 60
    items = [
        f"Wall clock: {minutes:g} minutes.",
        f"Turns (model iterations): {turn_limit(task, budget)}.",
    ]
    items.append(f"Tokens: {budget.tokens}." if budget.tokens else "Tokens: no limit.")
    items.append(f"Cost: ${budget.cost_usd:g}." if budget.cost_usd else "Cost: no limit.")
    return items


def _starting_file(task: Task) -> str | None:
    """The task file copied to the contract's first file.

    The template, else a same-language baseline (`triton2triton`, `cuda2cuda`), else nothing.
    """
    spec = task.spec
    if spec.submission.template is not None:
        return spec.submission.template
    if spec.baseline is not None and spec.track in ("triton2triton", "cuda2cuda"):
        return spec.baseline.file
    return None


def _shows_reference(task: Task) -> bool:
    return task.spec.track.startswith("torch2") or task.spec.track == "accel"


def _reference_files(task: Task) -> list[str]:
    """Task files shown read-only: the baseline, or the reference for `torch2*` and `accel`."""
    if _shows_reference(task) or task.spec.baseline is None:
        return [task.spec.reference.file]
    return [task.spec.baseline.file]


def _entry_signature(task: Task) -> str | None:
    """The entry point's `def` line, read from the starting file, the baseline or the reference."""
    spec = task.spec
    if spec.submission.language == "asm":
        return None
    candidates = [_starting_file(task)]
    if spec.baseline is not None:
        candidates.append(spec.baseline.file)
    candidates.append(spec.reference.file)
    for relative in candidates:
        if relative is None or not relative.endswith(".py"):
            continue
        try:
            tree = ast.parse(task.path(relative).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == spec.submission.entry:
                returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
                return f"def {node.name}({ast.unparse(node.args)}){returns}: ..."
    return None


def _accel_manual(task: Task) -> str:
    """The ISA manual of the task's platform, with its default hardware parameters."""
    platform = task.spec.platform
    try:
        from gauntlet.accel import get_platform, manual
    except ImportError as err:
        raise ConfigError(
            f"task '{task.task_id}' is an accel task, but gauntlet.accel cannot be imported "
            f"({err}); its workspace needs the ISA manual of platform '{platform}'"
        ) from err
    text: str = manual(get_platform(str(platform)))
    return text


def _sha256(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()
