"""One judgment at a time per GPU, across threads and processes.

Two timings on one GPU at once disturb each other, so every evaluation on a timed GPU holds an
exclusive lock on that device for its duration. The lock is an `flock` on a file under the cache
folder: it covers the runner's threads, `gauntlet-ws` processes of agents and separate runs, and
the kernel releases it when a holder dies. The lock names the physical GPU: `cuda:0` of a
process that sees only GPU 3 (`CUDA_VISIBLE_DEVICES=3`, as Ray gives a GPU task) takes GPU 3's
lock, the one a process seeing every GPU takes for `cuda:3`.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

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
    folder = settings.CACHE_DIR / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{physical(device).replace(':', '_')}.lock"
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
