"""A submission's compiled Triton kernels, kept for its next judgment on a GPU.

A confined candidate compiles its Triton kernels into a private cache (`triton_cache.py`): a
cache it shared with other judgments would let it plant kernels under another submission's
keys, or the baseline's. Compiling is most of a repeated judgment of the same files (3-6 s of
an attention kernel's 6-19 s on an H200), which search loops and agents' feedback tools
do all the time. So after a judgment the judge keeps what the candidate compiled, under a key
of the task and the submission's exact files, and copies it into the private cache of the next
candidate judged with the same files, before that one starts.

Why this is safe: only a judgment of the same task and byte-identical submission ever reads
what a judgment of it wrote, so a submission can reach no one's kernels but its own, and
loading kernels it planted for itself gives it nothing that running code it wrote does not
(every judgment checks whatever runs). Trusted processes never read these folders. What is
copied out of the candidate's folder is only regular files two levels deep (Triton's layout:
`<kernel hash>/<file>`), opened without following links, within a size and count bound.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from gauntlet import settings

logger = logging.getLogger(__name__)

#: What one submission's kept kernels may hold (an attention kernel's variants are ~2 MB).
MAX_BYTES = 256 << 20
MAX_FILES = 4096
#: All submissions' kept kernels together; the least recently judged go first past it.
MAX_TOTAL_BYTES = 4 << 30


def root() -> Path:
    """Where the kept kernels lie, a folder per task and submission."""
    return settings.CACHE_DIR / "submission-kernels"


def key(task_id: str, submission_digest: str) -> str:
    """The key of a task and a submission's exact files (`pipeline.digest` of them)."""
    return hashlib.sha256(f"{task_id}\0{submission_digest}".encode()).hexdigest()


def seed(entry: str, target: Path) -> int:
    """Copy the kept kernels of `entry` into a candidate's private cache `target`; files copied.

    Called before the candidate is told to start (it compiles nothing before).
    """
    kept = root() / entry
    if not kept.is_dir():
        return 0
    copied = 0
    for folder in kept.iterdir():
        if not folder.is_dir() or folder.is_symlink():
            continue
        shutil.copytree(folder, target / folder.name, dirs_exist_ok=True)
        copied += sum(1 for _ in folder.iterdir())
    os.utime(kept)  # recently used: kept longest when the total is pruned
    return copied


def harvest(entry: str, source: Path) -> int:
    """Keep what a finished candidate compiled into `source`, for its files' next judgment.

    Returns the files kept.
    The candidate's process must have ended (nothing writes the folder any more).

    Raises:
        OSError: A file changed into something else while it was copied.
    """
    if not source.is_dir() or source.is_symlink():
        return 0
    found = _regular_files(source)
    if not found:
        return 0
    base = root()
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=base))
    try:
        for relative in found:
            _copy_no_follow(source / relative, staging / relative)
        kept = base / entry
        kept.mkdir(exist_ok=True)
        for folder in staging.iterdir():
            # Judgments of the same files may finish together: the first kept stays (both
            # came from the same submission, so neither is anyone else's).
            if (kept / folder.name).exists():
                continue
            os.replace(folder, kept / folder.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _prune(base)
    return len(found)


def _regular_files(source: Path) -> list[Path]:
    """`<folder>/<file>` regular files under `source`, within the bounds; else nothing."""
    found: list[Path] = []
    total = 0
    for folder in sorted(source.iterdir()):
        if not stat.S_ISDIR(folder.lstat().st_mode):
            continue
        for item in sorted(folder.iterdir()):
            info = item.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            total += info.st_size
            found.append(item.relative_to(source))
            if total > MAX_BYTES or len(found) > MAX_FILES:
                logger.warning(
                    "not keeping the compiled kernels in %s: more than %d files or %d MB",
                    source,
                    MAX_FILES,
                    MAX_BYTES >> 20,
                )
                return []
    return found


def _copy_no_follow(source: Path, target: Path) -> None:
    """Copy a regular file, refusing a link put in its place since it was listed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as reader, open(target, "xb") as writer:
        if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
            raise OSError(f"{source} is not a regular file")
        shutil.copyfileobj(reader, writer, length=1 << 20)


def _prune(base: Path) -> None:
    """Remove the least recently used submissions' kernels past `MAX_TOTAL_BYTES`."""
    entries = [p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")]
    sizes = {p: sum(f.stat().st_size for f in p.glob("*/*") if f.is_file()) for p in entries}
    total = sum(sizes.values())
    for entry in sorted(entries, key=lambda p: p.stat().st_mtime):
        if total <= MAX_TOTAL_BYTES:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total -= sizes[entry]
