"""Memory cgroups of candidate workers (`gauntlet.memcg`), with real processes.

Skipped where this machine lets no memory cgroup be made (an unprivileged user, CI), except
the fallback, which is checked everywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gauntlet import memcg, process

needs_cgroup = pytest.mark.skipif(
    memcg.available() is not None, reason=f"no memory cgroup here: {memcg.available()}"
)

#: Waits until this process is in the cgroup named by argv[1] (the test moves it in).
MOVED_IN = """
import sys, time
while sys.argv[1] not in open("/proc/self/cgroup").read():
    time.sleep(0.01)
"""
#: Maps shared anonymous memory (counted by no data-segment limit) and touches every page.
SHARED_HOARD = (
    MOVED_IN
    + """
import mmap
size = int(sys.argv[2])
held = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
for offset in range(0, size, mmap.PAGESIZE):
    held[offset] = 1
print("held", flush=True)
"""
)

#: Starts a child in a session of its own (as a submission's daemon would), then waits.
TREE = (
    MOVED_IN
    + """
import subprocess
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
print("started", flush=True)
time.sleep(600)
"""
)


def _parent() -> Path:
    parent = memcg._find_parent()
    assert not isinstance(parent, str), parent
    return parent.path


@needs_cgroup
def test_a_process_past_the_limit_in_shared_memory_is_killed_and_counted() -> None:
    cgroup = memcg.MemoryCgroup.create(64 << 20)
    try:
        hoard = process.Child([sys.executable, "-c", SHARED_HOARD, cgroup.path.name, "256000000"])
        cgroup.admit_tree(hoard)
        assert hoard.pid in cgroup.pids()
        finished = hoard.wait(timeout_s=60)
        assert finished.signal_name == "SIGKILL" and "held" not in finished.stdout
        assert cgroup.oom_kills() == 1
        assert str(cgroup) == f"cgroup v{cgroup.version} 64 MiB"
    finally:
        cgroup.remove()
    assert not cgroup.path.exists()


@needs_cgroup
def test_removing_it_kills_what_is_left_in_it_new_sessions_included() -> None:
    cgroup = memcg.MemoryCgroup.create(1 << 30)
    try:
        started: list[str] = []
        tree = process.Child(
            [sys.executable, "-c", TREE, cgroup.path.name], on_stdout_line=started.append
        )
        cgroup.admit([tree.pid])
        deadline = time.monotonic() + 30
        while not started and time.monotonic() < deadline:
            time.sleep(0.01)
        members = cgroup.pids()
        assert len(members) == 2  # the child inherited the cgroup, in a session of its own
    finally:
        cgroup.remove()
    assert not cgroup.path.exists()
    assert tree.wait(timeout_s=10).signal_name == "SIGKILL"
    for pid in members:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


@needs_cgroup
def test_a_cgroup_left_by_a_judge_that_died_is_removed_by_the_next() -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    left = _parent() / f"{memcg.PREFIX}{int(dead.stdout)}-0"
    left.mkdir()
    cgroup = memcg.MemoryCgroup.create(1 << 30)
    try:
        assert not left.exists()
        assert cgroup.path.name.startswith(f"{memcg.PREFIX}{os.getpid()}-")
    finally:
        cgroup.remove()


def test_where_none_can_be_made_creating_one_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memcg, "available", lambda: "no hierarchy for this test")
    with pytest.raises(memcg.CgroupUnavailable, match="no hierarchy for this test"):
        memcg.MemoryCgroup.create(1 << 30)


def test_the_judges_own_cgroup_is_found_under_the_mount_that_shows_it() -> None:
    mount = Path("/sys/fs/cgroup/memory")
    assert memcg._shown_at(mount, "/", "/a/b") == mount / "a/b"
    # A container's mount shows its own cgroup as the root.
    assert memcg._shown_at(mount, "/docker/x", "/docker/x/y") == mount / "y"
    assert memcg._shown_at(mount, "/docker/x", "/docker/x") == mount
    assert memcg._shown_at(mount, "/docker/x", "/other") is None
