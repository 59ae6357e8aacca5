"""Finding tasks: by id, by suite (`tasks/suites.toml`), by glob, track and device."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from collections.abc import Sequence
from pathlib import Path

from gauntlet import settings
from gauntlet.errors import ConfigError, TaskFormatError, UnknownNameError
from gauntlet.task import Task, load_task

SUITES_FILE = "suites.toml"


def tasks_root() -> Path:
    """The folder holding the shipped suite."""
    return settings.TASKS_DIR


def task_ids(root: Path | None = None) -> list[str]:
    """Ids of every task folder under the root (its path relative to the root)."""
    base = root or tasks_root()
    return sorted(p.parent.relative_to(base).as_posix() for p in base.rglob("task.toml"))


def suites(root: Path | None = None) -> dict[str, list[str]]:
    """Suite name -> id glob patterns (`in_suite`), from `suites.toml`; `all` is implicit."""
    base = root or tasks_root()
    path = base / SUITES_FILE
    table: dict[str, list[str]] = {"all": ["*"]}
    if not path.is_file():
        return table
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise TaskFormatError(str(path), "", f"not valid TOML: {err}") from err
    for name, patterns in raw.items():
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise TaskFormatError(str(path), name, "expected a list of task id patterns")
        table[name] = patterns
    return table


def in_suite(task_id: str, patterns: Sequence[str]) -> bool:
    """Whether a task id is in a suite of these patterns.

    The last pattern that matches the id decides; one that starts with `!` takes the ids it
    matches out, so `["*", "!accel/tile/*", "accel/tile/gemm"]` is every task but the tile
    platform's, and its gemm.
    """
    member = False
    for pattern in patterns:
        if fnmatch.fnmatchcase(task_id, pattern.removeprefix("!")):
            member = not pattern.startswith("!")
    return member


def add_suite(name: str, patterns: list[str], root: Path | None = None) -> bool:
    """Add `name = [patterns]` to `suites.toml` (the importers' suites); False if already there.

    A suite of that name with other patterns is a ConfigError naming both: the file is the
    user's, so it is never rewritten, only appended to.
    """
    base = root or tasks_root()
    existing = suites(base).get(name)
    if existing == patterns:
        return False
    if existing is not None:
        raise ConfigError(
            f"suite '{name}' is already {existing} in {base / SUITES_FILE}, not {patterns}; "
            "edit or remove that line"
        )
    path = base / SUITES_FILE
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    line = f"{name} = [{', '.join(json.dumps(p) for p in patterns)}]\n"
    separator = "" if not text or text.endswith("\n") else "\n"
    path.write_text(text + separator + line, encoding="utf-8")
    return True


def load_by_id(task_id: str, root: Path | None = None) -> Task:
    """Load one task by id, or from a folder path."""
    base = root or tasks_root()
    as_path = Path(task_id)
    folder = base / task_id
    if not as_path.is_absolute() and (folder / "task.toml").is_file():
        return load_task(folder, expected_id=task_id)
    if (as_path / "task.toml").is_file():
        return load_task(as_path)
    raise UnknownNameError("task", task_id, task_ids(base), "see 'gauntlet tasks'")


def select(
    suite: str | None = None,
    pattern: str | Sequence[str] | None = None,
    track: str | None = None,
    root: Path | None = None,
) -> list[Task]:
    """Tasks of a suite (default `all`), narrowed by id globs (any may match) and a track."""
    base = root or tasks_root()
    table = suites(base)
    name = suite or "all"
    if name not in table:
        raise UnknownNameError(
            "suite", name, sorted(table), f"suites are defined in {base / SUITES_FILE}"
        )
    ids = [i for i in task_ids(base) if in_suite(i, table[name])]
    patterns = [pattern] if isinstance(pattern, str) else list(pattern or [])
    if patterns:
        ids = [i for i in ids if any(fnmatch.fnmatchcase(i, p) for p in patterns)]
    tasks = [load_task(base / i, expected_id=i) for i in ids]
    if track:
        tasks = [t for t in tasks if t.spec.track == track]
    if not tasks:
        shown = ", ".join(f"'{p}'" for p in patterns)
        what = f"suite '{name}'" + (f", pattern {shown}" if patterns else "")
        what += f", track '{track}'" if track else ""
        raise ConfigError(f"no task matches {what} under {base}")
    return tasks
