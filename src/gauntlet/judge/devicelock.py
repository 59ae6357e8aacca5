"""One judgment at a time per GPU, across threads and processes.

Two timings on one GPU at once disturb each other, so every evaluation on a timed GPU holds an
exclusive lock on that device for its duration. The lock is an `flock` on a file in one folder
for the whole machine (`settings.LOCK_DIR`, not the cache folder, which each run or user may set
apart): it covers the runner's threads, the feedback tools' judgments, separate runs and users,
and the kernel releases it when a holder dies. The lock names the physical GPU: `cuda:0` of a
process that sees only GPU 3 (`CUDA_VISIBLE_DEVICES=3`, as Ray gives a GPU task) takes GPU 3's
lock, the one a process seeing every GPU takes for `cuda:3`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gauntlet import settings

logger = logging.getLogger(__name__)


def physical(device: str) -> str:
    """The device as the whole host numbers it, through this process's `CUDA_VISIBLE_DEVICES`.

    `cuda:0` with `CUDA_VISIBLE_DEVICES=3,1` is `cuda:3`; an entry that is a UUID stays one.
    """
    kind, _, index = device.partition(":")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if kind not in ("cuda", "rocm") or not visible or not index.isdigit():
        return device
    entries = [entry.strip() for entry in visible.split(",")]
    return f"{kind}:{entries[int(index)]}" if int(index) < len(entries) else device


@contextmanager
def exclusive(device: str) -> Iterator[float]:
    """Hold the device's lock; yields the seconds spent waiting for it."""
    path = _lock_file(physical(device))
    started = time.monotonic()
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        waited = time.monotonic() - started
        if waited > 1.0:
            logger.info("waited %.1f s for %s", waited, device)
        try:
            yield waited
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _lock_file(device: str) -> Path:
    """The device's lock file, created open to every user of the machine (like /tmp)."""
    folder = settings.LOCK_DIR
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):
            folder.chmod(0o1777)
    path = folder / f"{device.replace(':', '_')}.lock"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
        try:
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, 0o666)
        finally:
            os.close(fd)
    return path
