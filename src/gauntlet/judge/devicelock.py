"""One judgment at a time per GPU, across threads and processes.

Two timings on one GPU at once disturb each other, so every evaluation on a timed GPU holds an
exclusive lock on that device for its duration. The lock is an `flock` on a file under the cache
folder: it covers the runner's threads, `gauntlet-ws` processes of agents and separate runs, and
the kernel releases it when a holder dies.
"""

from __future__ import annotations

import fcntl
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gauntlet import settings

logger = logging.getLogger(__name__)


@contextmanager
def exclusive(device: str) -> Iterator[float]:
    """Hold the device's lock; yields the seconds spent waiting for it."""
    folder = settings.CACHE_DIR / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{device.replace(':', '_')}.lock"
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
