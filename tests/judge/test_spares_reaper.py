"""Pool folders left by killed pools are removed by the next pool, a live pool's never (real
processes: a pool killed with SIGKILL, another still running)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from gauntlet import process
from gauntlet.judge import spares

#: A process that opens a pool under ROOT, prints its folder and waits to be killed.
_POOL = """
import sys, time
from pathlib import Path
from gauntlet.judge.spares import SparePool
pool = SparePool(Path(sys.argv[1]))
print(pool.root, flush=True)
time.sleep(600)
"""


def _start_pool(root: Path) -> tuple[process.Child, Path]:
    """A pool opened in a process of its own, and its folder."""
    lines: list[str] = []
    opened = threading.Event()

    def line(text: str) -> None:
        lines.append(text)
        opened.set()

    src = str(Path(spares.__file__).parents[2])
    child = process.Child(
        [sys.executable, "-c", _POOL, str(root)],
        env={**os.environ, "PYTHONPATH": src},
        on_stdout_line=line,
    )
    assert opened.wait(60), child.wait(0).stderr
    return child, Path(lines[0])


def test_a_killed_pools_folder_is_reaped_and_a_live_pools_is_kept(tmp_path: Path) -> None:
    killed, killed_folder = _start_pool(tmp_path)
    alive, alive_folder = _start_pool(tmp_path)
    try:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert killed_folder.is_dir()
        pool = spares.SparePool(tmp_path)
        try:
            assert not killed_folder.exists()
            assert alive_folder.is_dir() and pool.root.is_dir()
        finally:
            pool.close()
        assert alive_folder.is_dir() and not pool.root.exists()
    finally:
        alive.kill_group()
        alive.wait()


def test_a_folder_without_a_lock_is_reaped_only_once_it_is_old(tmp_path: Path) -> None:
    # Folders of pools from before the lock, or killed between making the folder and locking it.
    old, young = tmp_path / "spares-old", tmp_path / "spares-young"
    old.mkdir()
    young.mkdir()
    stale = time.time() - spares.UNLOCKED_GRACE_S - 1
    os.utime(old, (stale, stale))
    other = tmp_path / "not-a-pool"
    other.mkdir()
    assert spares.reap_abandoned(tmp_path) == [old]
    assert young.is_dir() and other.is_dir()
