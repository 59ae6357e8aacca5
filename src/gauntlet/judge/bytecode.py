"""The judge's own bytecode, checked against its source before a judgment starts workers.

Python runs a module's cached `__pycache__/*.pyc` whenever its header names the source's size
and modification time, which anyone who can write the folder can copy: a poisoned `worker.pyc`
with the right header made a zeros kernel pass, in every later judgment, with `git status`
clean. Sandboxed agents and confined candidates see the package read-only; an agent run with
sandbox `none` does not. So before each judgment `check_package` compares every cached bytecode
file of the package that an import would use with its source compiled afresh, and removes any
that differs (the workers then compile that module from source: they write no bytecode). A
file already found good is not compiled again while its inode, size, change time and
modification time stay the same: a process can forge a file's modification time but not its
change time.
"""

from __future__ import annotations

import importlib.util
import logging
import marshal
import sys
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

#: Bytes of a .pyc header (magic, flags, and either mtime and size or a source hash).
HEADER_BYTES = 16

_checked: dict[Path, tuple[int, int, int, int]] = {}
_lock = threading.Lock()


def package_root() -> Path:
    """The folder of the `gauntlet` package."""
    import gauntlet

    return Path(gauntlet.__file__).resolve().parent


def check_package(root: Path | None = None) -> list[Path]:
    """Remove the cached bytecode files under `root` that are not their source compiled.

    Returns the files removed (each is logged as a warning). `root` defaults to the package.
    """
    root = package_root() if root is None else root
    removed: list[Path] = []
    with _lock:
        for cached in sorted(root.rglob(f"__pycache__/*.{sys.implementation.cache_tag}*.pyc")):
            try:
                stat = cached.stat()
            except OSError:
                continue  # removed meanwhile
            key = (stat.st_ino, stat.st_size, stat.st_ctime_ns, stat.st_mtime_ns)
            if _checked.get(cached) == key:
                continue
            if not _would_be_used(cached) or _matches_source(cached):
                _checked[cached] = key
                continue
            cached.unlink(missing_ok=True)
            _checked.pop(cached, None)
            removed.append(cached)
            logger.warning("removed '%s': it is not its source compiled (tampered with)", cached)
    return removed


def _would_be_used(cached: Path) -> bool:
    """Whether an import would run `cached`.

    A hash-based file, or one whose header names its source's modification time and size (a
    stale one is compiled afresh by the import).
    """
    try:
        header = cached.read_bytes()[:HEADER_BYTES]
        source = Path(importlib.util.source_from_cache(str(cached))).stat()
    except (OSError, ValueError):
        return False
    if len(header) < HEADER_BYTES:
        return False
    if int.from_bytes(header[4:8], "little") != 0:
        return True  # hash-based: an unchecked one is used whatever the source says
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime == int(source.st_mtime) & 0xFFFFFFFF and size == source.st_size & 0xFFFFFFFF


def _matches_source(cached: Path) -> bool:
    """Whether `cached` holds exactly what its source compiles to."""
    try:
        source = Path(importlib.util.source_from_cache(str(cached)))
        data = cached.read_bytes()
        text = source.read_bytes()
    except (OSError, ValueError):
        return False  # no source beside it: nothing a judgment should import
    optimize = 0
    for level in (1, 2):
        if f".opt-{level}." in cached.name:
            optimize = level
    try:
        code = marshal.loads(data[HEADER_BYTES:])
        expected = compile(text, str(source), "exec", dont_inherit=True, optimize=optimize)
    except (EOFError, ValueError, TypeError, SyntaxError):
        return False
    return bool(code == expected)
