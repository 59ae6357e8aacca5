"""The attempt's workspace: the one folder an agent sees, built from what it may see.

A workspace holds the brief (`TASK.md`), the submission's starting file under the contract's
name, the baseline (`triton2triton`, `cuda2cuda`) or the reference (`torch2*`, `accel`) as
read-only files under `reference/`, the visible configs (`configs.json`), the ISA manual for
`accel` (`MANUAL.md`) and `.gauntlet-ws.json`, which tells the `gauntlet-ws` command which task
and device it serves. It never holds the hidden configs or their domain, the input generator,
the expert solution, the judge's secrets or anything of another attempt.

Beside the workspace, never inside it, lies its tools folder (`<workspace>.tools`, see
`tools_dir`): copies of the documents the feedback tools search, made when the workspace is
built, and the tool-call log. The feedback tools read those copies, never the agent's versions.

Everything in the workspace is the agent's to write, links included, so the harness reads it
only through `read_beneath` and `scan`: no link is followed on any component of a path, only
regular files are opened, and every read is capped.

The manifest taken when the workspace is built (path -> sha256) is the tamper digest:
`workspace_changes` compares the folder against it after the agent stopped. The digest is
bounded (`digest`): links are recorded as links, special files by their kind, files above
`DIGEST_FILE_BYTES` (sparse ones included) by their size and a hash of their first
`DIGEST_PREFIX_BYTES`, and the walk stops after `DIGEST_MAX_ENTRIES` entries. The judge reads
the contract's files from the workspace and nothing else.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import json
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gauntlet import syntax
from gauntlet.agents.base import Budget
from gauntlet.errors import ConfigError
from gauntlet.task import Task

logger = logging.getLogger(__name__)

BRIEF_FILE = "TASK.md"
CONFIGS_FILE = "configs.json"
MANUAL_FILE = "MANUAL.md"
REFERENCE_DIR = "reference"
WS_CONFIG_FILE = ".gauntlet-ws.json"
WS_CONFIG_SCHEMA_VERSION = 1
#: The tools folder of a workspace is `<workspace><TOOLS_DIR_SUFFIX>`, beside it.
TOOLS_DIR_SUFFIX = ".tools"
#: In the tools folder: the copies of the documents `grep` searches, and the tool-call log.
DOCS_DIR = "docs"
TOOL_LOG_FILE = "tool-calls.jsonl"

#: Iteration budget per task level when neither the run nor the task sets one (as KernelCraft).
LEVEL_TURNS = {1: 15, 2: 20, 3: 25}

#: At most this many entries in `workspace_changes`; the rest are counted under one key.
MAX_CHANGES = 500
#: The digest hashes files up to this size whole; a larger one by its first bytes only.
DIGEST_FILE_BYTES = 16 << 20
DIGEST_PREFIX_BYTES = 1 << 20
#: Bytes the digest reads in all; once spent, files are recorded by size and time only.
DIGEST_TOTAL_BYTES = 256 << 20
#: Entries (files, links, folders) the digest walks at most, and folders deep.
DIGEST_MAX_ENTRIES = 20_000
MAX_DEPTH = 32
#: The digest's key saying the walk stopped early (no relative path starts with '/').
DIGEST_CUT_KEY = "/digest-cut"

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
    """Relative POSIX path -> sha256 of every file as built (see `digest`)."""
    submission_files: tuple[str, ...]
    """The contract's files (relative paths)."""
    tools_dir: Path
    """The harness's folder beside the workspace: the documents' copies and the tool log."""


def turn_limit(task: Task, budget: Budget) -> int:
    """The iteration budget: the run's, else the task's, else the default for the task's level."""
    if budget.turns:
        return budget.turns
    if task.spec.budget.turns:
        return task.spec.budget.turns
    return LEVEL_TURNS[task.spec.level]


def tools_dir(workspace: Path) -> Path:
    """The tools folder of `workspace`: `<workspace>.tools`, beside it and never inside it.

    The sandboxes make only the workspace (and the agent's home and the tool server's socket
    folder) writable, so the agent cannot reach this folder from a sandbox.
    """
    workspace = Path(workspace)
    return workspace.parent / f"{workspace.name}{TOOLS_DIR_SUFFIX}"


def tool_log_path(workspace: Path) -> Path:
    """Where the tool calls of `workspace` are logged by default (JSONL, in its tools folder)."""
    return tools_dir(workspace) / TOOL_LOG_FILE


def build_workspace(task: Task, dest: Path, *, device: str, budget: Budget) -> Workspace:
    """Build the workspace of one attempt in `dest` (which must not exist or be empty).

    The documents the feedback tools search are also copied into the tools folder beside it
    (`tools_dir(dest)`), which must not hold anything either.

    Args:
        task: The loaded task.
        dest: The folder to create.
        device: The device the feedback tools judge on (`cpu`, `cuda:0`, `sim:npu`).
        budget: The attempt's budget, stated in the brief.

    Returns:
        The workspace, with its brief and its manifest as built.

    Raises:
        ConfigError: `dest` or its tools folder holds files already, or an `accel` task's
            manual cannot be made.
    """
    dest = Path(dest)
    private = tools_dir(dest)
    for folder in (dest, private):
        if folder.is_symlink() or (folder.exists() and any(folder.iterdir())):
            raise ConfigError(f"workspace folder '{folder}' is not empty; attempts never share one")
    dest.mkdir(parents=True, exist_ok=True)
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    spec = task.spec

    starting = starting_file(task)
    if starting is not None:
        target = dest / spec.submission.files[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.path(starting), target)

    documents: dict[str, str] = {}
    for relative in _reference_files(task):
        name = f"{REFERENCE_DIR}/{Path(relative).name}"
        documents[name] = task.path(relative).read_text(encoding="utf-8")
    shown = list(documents)
    configs = [{"name": c.name, **c.params} for c in task.visible_configs]
    documents[CONFIGS_FILE] = json.dumps(configs, indent=2) + "\n"
    if spec.track == "accel":
        documents[MANUAL_FILE] = _accel_manual(task)
    brief = render_brief(task, device=device, budget=budget, reference_files=shown)
    documents[BRIEF_FILE] = brief

    for name, text in documents.items():
        for root in (dest, private / DOCS_DIR):
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            if name.startswith(f"{REFERENCE_DIR}/") or root != dest:
                target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)

    ws_config = WorkspaceConfig(
        task_id=task.task_id, track=spec.track, device=device, task_dir=str(task.root)
    )
    (dest / WS_CONFIG_FILE).write_text(ws_config.model_dump_json(indent=2) + "\n")

    workspace = Workspace(
        path=dest,
        task_id=task.task_id,
        device=device,
        brief=brief,
        manifest=digest(dest),
        submission_files=tuple(spec.submission.files),
        tools_dir=private,
    )
    logger.debug("built workspace of '%s' in %s", task.task_id, dest)
    return workspace


class UnsafeFileError(Exception):
    """A workspace path the harness will not open: a link, not a regular file, too large."""


@dataclass(frozen=True)
class Entry:
    """One entry of a folder as `scan` saw it (never through a link)."""

    relative: str
    """POSIX path relative to the scanned folder."""
    status: os.stat_result
    """Its `lstat`."""


def open_beneath(root: Path, relative: str, *, directory: bool = False) -> int:
    """Open `relative` under `root` without following a link on any component; a descriptor.

    `root` itself is the harness's path and is trusted; every component below it is opened
    with `O_NOFOLLOW` relative to its parent's descriptor, so a link swapped in anywhere, at
    any moment, fails the open instead of leading elsewhere. A FIFO is opened without blocking.

    Raises:
        UnsafeFileError: `relative` is absolute, climbs out with `..`, or a component is a link.
        OSError: Anything else (missing file, permissions).
    """
    pure = PurePosixPath(relative)
    parts = pure.parts
    if not parts or pure.is_absolute() or ".." in parts:
        raise UnsafeFileError(f"'{relative}': give a path inside the workspace, relative to it")
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if last and not directory:
                flags = os.O_RDONLY | os.O_NONBLOCK | nofollow
            else:
                flags = os.O_RDONLY | os.O_DIRECTORY | nofollow
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    where = "/".join(parts[: index + 1])
                    raise UnsafeFileError(
                        f"'{where}' is a symbolic link; links in the workspace are not followed"
                    ) from err
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_beneath(root: Path, relative: str, *, limit_bytes: int) -> bytes:
    """The bytes of the regular file `relative` under `root`, read without following links.

    Raises:
        UnsafeFileError: A link on the way, not a regular file (FIFO, device, socket, folder),
            or larger than `limit_bytes` (checked before reading, and while reading).
        OSError: The file is missing or unreadable.
    """
    fd = open_beneath(root, relative)
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            kind = file_kind(status.st_mode)
            raise UnsafeFileError(f"'{relative}' is {kind}, not a regular file")
        if status.st_size > limit_bytes:
            raise UnsafeFileError(
                f"'{relative}' has {status.st_size} bytes, above the limit of {limit_bytes}"
            )
        data = handle.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise UnsafeFileError(f"'{relative}' grew above the limit of {limit_bytes} bytes")
    return data


def write_beneath(root: Path, relative: str, data: bytes) -> None:
    """Replace (or create) the regular file `relative` under `root`, following no link.

    Missing folders on the way are created; an existing entry of that name (a file or a link,
    never a folder) is removed first and the new file is created exclusively, so the write
    lands in the workspace whatever the agent placed there.

    Raises:
        UnsafeFileError: A link on the way, or `relative` names a folder.
        OSError: The write failed.
    """
    pure = PurePosixPath(relative)
    parent = str(pure.parent)
    if parent != ".":
        _make_dirs_beneath(root, pure.parent.parts)
        fd = open_beneath(root, parent, directory=True)
    else:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        name = pure.name
        try:
            status = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            status = None
        if status is not None:
            if stat.S_ISDIR(status.st_mode):
                raise UnsafeFileError(f"'{relative}' is a folder")
            os.unlink(name, dir_fd=fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, 0o644, dir_fd=fd)
        with os.fdopen(out, "wb") as handle:
            handle.write(data)
    finally:
        os.close(fd)


def scan(root: Path, *, max_entries: int = DIGEST_MAX_ENTRIES) -> tuple[list[Entry], bool]:
    """Every entry under `root` (files, links, special files, folders), never through a link.

    Folders are opened with `open_beneath`, links are listed and not entered, and the walk
    stops at `max_entries` entries or `MAX_DEPTH` folders deep.

    Returns:
        The entries in walk order, and whether the walk stopped early.
    """
    found: list[Entry] = []
    pending: list[tuple[str, int]] = [("", 0)]
    cut = False
    while pending:
        folder, depth = pending.pop()
        try:
            fd = (
                open_beneath(root, folder, directory=True)
                if folder
                else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            )
        except (OSError, UnsafeFileError):
            continue  # removed or swapped for a link since it was listed
        try:
            with os.scandir(fd) as listing:
                names = sorted(entry.name for entry in listing)
            for name in names:
                if len(found) >= max_entries:
                    return found, True
                try:
                    status = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                relative = f"{folder}/{name}" if folder else name
                found.append(Entry(relative, status))
                if stat.S_ISDIR(status.st_mode):
                    if depth + 1 >= MAX_DEPTH:
                        cut = True
                    else:
                        pending.append((relative, depth + 1))
        finally:
            os.close(fd)
    return found, cut


def digest(folder: Path) -> dict[str, str]:
    """Relative POSIX path -> fingerprint of every file under `folder`, bounded in time.

    - a regular file up to `DIGEST_FILE_BYTES`: its sha256, while the digest has read less
      than `DIGEST_TOTAL_BYTES` in all;
    - a larger file (a sparse one too): `partial:` with its size, the bytes allocated, its
      modification time and the sha256 of its first `DIGEST_PREFIX_BYTES`; once the total is
      spent, `unread:` with size and time only;
    - a symbolic link: `symlink:<target>`, never followed (pointing a submission file at another
      file shows up as a change); a FIFO, socket or device: `special:<kind>`, never opened;
    - when the walk stops early (`DIGEST_MAX_ENTRIES`, `MAX_DEPTH`), the key `DIGEST_CUT_KEY`.
    """
    folder = Path(folder)
    entries, cut = scan(folder, max_entries=DIGEST_MAX_ENTRIES)
    found: dict[str, str] = {}
    budget = DIGEST_TOTAL_BYTES
    for entry in entries:
        mode = entry.status.st_mode
        if stat.S_ISDIR(mode):
            continue
        if stat.S_ISLNK(mode):
            try:
                found[entry.relative] = f"symlink:{_read_link(folder, entry.relative)}"
            except (OSError, UnsafeFileError):
                found[entry.relative] = "symlink:?"
            continue
        if not stat.S_ISREG(mode):
            found[entry.relative] = f"special:{file_kind(mode)}"
            continue
        size = entry.status.st_size
        times = f"mtime_ns={entry.status.st_mtime_ns}"
        whole = size <= DIGEST_FILE_BYTES
        limit = size if whole else DIGEST_PREFIX_BYTES
        if limit > budget:
            found[entry.relative] = f"unread:size={size}:{times}"
            continue
        try:
            hashed, read = _hash_beneath(folder, entry.relative, limit)
        except (OSError, UnsafeFileError) as err:
            found[entry.relative] = f"unreadable:{err}"
            continue
        budget -= read
        if whole:
            found[entry.relative] = hashed
        else:
            allocated = entry.status.st_blocks * 512
            found[entry.relative] = (
                f"partial:size={size}:allocated={allocated}:{times}:"
                f"sha256_first_{DIGEST_PREFIX_BYTES}={hashed}"
            )
    if cut:
        found[DIGEST_CUT_KEY] = (
            f"the digest stopped after {len(entries)} entries (at most {DIGEST_MAX_ENTRIES}, "
            f"{MAX_DEPTH} folders deep)"
        )
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
    from gauntlet.agents.tools import tools_for

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
    starting = starting_file(task)
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


def starting_file(task: Task) -> str | None:
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
    candidates = [starting_file(task)]
    if spec.baseline is not None:
        candidates.append(spec.baseline.file)
    candidates.append(spec.reference.file)
    for relative in candidates:
        if relative is None or not relative.endswith(".py"):
            continue
        try:
            tree = syntax.parse(task.path(relative).read_text(encoding="utf-8"))
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


def _hash_beneath(root: Path, relative: str, limit_bytes: int) -> tuple[str, int]:
    """sha256 of the first `limit_bytes` of a regular file (opened without following links)."""
    fd = open_beneath(root, relative)
    hasher = hashlib.sha256()
    read = 0
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFileError(f"'{relative}' is not a regular file")
        while read < limit_bytes:
            block = handle.read(min(1 << 20, limit_bytes - read))
            if not block:
                break
            hasher.update(block)
            read += len(block)
    return hasher.hexdigest(), read


def _read_link(root: Path, relative: str) -> str:
    pure = PurePosixPath(relative)
    parent = str(pure.parent)
    if parent == ".":
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    else:
        fd = open_beneath(root, parent, directory=True)
    try:
        return os.readlink(pure.name, dir_fd=fd)[:4096]
    finally:
        os.close(fd)


def _make_dirs_beneath(root: Path, parts: tuple[str, ...]) -> None:
    for index in range(len(parts)):
        relative = "/".join(parts[: index + 1])
        try:
            os.close(open_beneath(root, relative, directory=True))
        except FileNotFoundError:
            parent = "/".join(parts[:index])
            fd = (
                open_beneath(root, parent, directory=True)
                if parent
                else os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            )
            try:
                os.mkdir(parts[index], dir_fd=fd)
            except FileExistsError:
                pass
            finally:
                os.close(fd)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def file_kind(mode: int) -> str:
    """What a file mode is, in words."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "an unknown kind of file"
