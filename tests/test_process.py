"""How `gauntlet.process` sets a child up before its command runs (`preexec.py`), with real
processes: dying with the thread that started it, resource limits, and nothing of the set-up
program's own left in the command's environment or signal dispositions; and how it stops a
child with what it started, and lets them run on (`Child.stopped`)."""

from __future__ import annotations

import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from gauntlet import preexec, process
from tests.support.processes import gone

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")

#: A starter that starts a child from a thread (as the judge and the runner do), prints its
#: pid, and waits to be killed.
_STARTER = """
import sys, threading
from gauntlet import process

def start():
    child = process.Child(["sleep", "600"], die_with_parent=True)
    print(child.pid, flush=True)
    child.wait()

threading.Thread(target=start).start()
"""


def test_a_child_dies_when_its_starter_is_killed() -> None:
    pids: list[str] = []
    got_pid = threading.Event()

    def line(text: str) -> None:
        pids.append(text)
        got_pid.set()

    src = str(Path(process.__file__).parents[1])
    starter = process.Child(
        [sys.executable, "-c", _STARTER], env={**os.environ, "PYTHONPATH": src}, on_stdout_line=line
    )
    try:
        assert got_pid.wait(30), starter.wait(0).stderr
        child = int(pids[0])
        assert psutil.Process(child).cmdline()[:1] == ["sleep"] or not gone(child, 0.5)
    finally:
        os.kill(starter.pid, signal.SIGKILL)  # not the group: the child must go on its own
        starter.wait()
    assert gone(child, 10), psutil.Process(child).cmdline()


def test_a_child_dies_when_the_thread_that_started_it_ends() -> None:
    started: list[process.Child] = []
    thread = threading.Thread(
        target=lambda: started.append(process.Child(["sleep", "600"], die_with_parent=True))
    )
    thread.start()
    thread.join()
    child = started[0]
    try:
        assert gone(child.pid, 10)
    finally:
        child.wait(0)


@pytest.mark.parametrize("starter", ["another process", "a thread that ended"])
def test_a_child_whose_starter_is_already_gone_exits_at_once(starter: str) -> None:
    # The race the check closes: the starter ended before the death signal was asked for. The
    # set-up program is started here, so its parent is this process.
    if starter == "another process":
        parent = f"{os.getppid()}:{os.getppid()}"
    else:
        ended = threading.Thread(target=lambda: None)
        ended.start()
        ended.join()
        parent = f"{os.getpid()}:{ended.native_id}"
    argv = [sys.executable, "-I", "-S", preexec.__file__, "--parent", parent, "--"]
    finished = process.run([*argv, "/bin/sleep", "sleep", "600"], timeout_s=30)
    assert finished.returncode == preexec.STARTER_GONE, finished


def test_starting_children_from_many_threads_at_once_never_hangs() -> None:
    # Threads that allocate, log and import while others fork: nothing runs in a child between
    # fork and exec that could wait on a lock one of them held at the fork.
    starts_per_thread, threads = 25, 8
    stop = threading.Event()
    failures: list[BaseException] = []

    def busy() -> None:
        while not stop.is_set():
            _ = [bytearray(4096) for _ in range(64)]

    def starter() -> None:
        try:
            for _ in range(starts_per_thread):
                finished = process.Child(["true"], die_with_parent=True).wait(timeout_s=20)
                assert finished.returncode == 0 and not finished.timed_out, finished
        except BaseException as err:  # noqa: BLE001 - reported by the test's thread
            failures.append(err)

    noise = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
    workers = [threading.Thread(target=starter, daemon=True) for _ in range(threads)]
    for thread in noise + workers:
        thread.start()
    deadline = time.monotonic() + 120
    for thread in workers:
        thread.join(max(deadline - time.monotonic(), 0))
    stop.set()
    assert not any(t.is_alive() for t in workers), "a start hung"
    assert not failures, failures[0]


def test_the_command_gets_the_environment_and_signals_as_given() -> None:
    # Python's start coerces a C locale (LC_CTYPE) and ignores SIGPIPE and SIGXFSZ: none of it
    # reaches the command.
    env = process.Child(["env"], env={"ONLY": "1"}, die_with_parent=True).wait(timeout_s=20)
    assert env.stdout == "ONLY=1\n"
    status = process.Child(["cat", "/proc/self/status"], die_with_parent=True).wait(timeout_s=20)
    ignored = int(
        next(x for x in status.stdout.splitlines() if x.startswith("SigIgn:")).split()[1], 16
    )
    assert not ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1))


def test_resource_limits_are_set_before_the_command_runs() -> None:
    limit = 1 << 30
    child = process.Child(
        ["sh", "-c", "ulimit -v; ulimit -H -v"], rlimits={resource.RLIMIT_AS: limit}
    )
    assert child.wait(timeout_s=20).stdout.split() == [str(limit >> 10)] * 2


def test_a_command_that_cannot_start_raises_as_without_set_up(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        process.Child(["no-such-command-anywhere"], die_with_parent=True)
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        process.Child([str(script)], die_with_parent=True)
    with pytest.raises(FileNotFoundError):
        process.Child(["./missing"], cwd=tmp_path, die_with_parent=True)


def test_a_stopped_child_and_its_descendants_run_again_after() -> None:
    # The grandchild leaves the child's process group (its own session): found as a descendant.
    script = (
        "import os, subprocess, sys, time\n"
        "grandchild = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "print(grandchild.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    lines: list[str] = []
    child = process.Child([sys.executable, "-c", script], on_stdout_line=lines.append)
    try:
        deadline = time.monotonic() + 30
        while not lines and time.monotonic() < deadline:
            time.sleep(0.01)
        both = [psutil.Process(child.pid), psutil.Process(int(lines[0]))]
        with child.stopped():
            assert [p.status() for p in both] == [psutil.STATUS_STOPPED] * 2
        assert all(p.status() != psutil.STATUS_STOPPED for p in both)
    finally:
        child.kill_tree()
        child.wait()
