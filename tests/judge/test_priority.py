"""Spares import at the lowest priority and wait and are judged at their own (real processes)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from gauntlet.judge import priority, protocol, python_backend, spares
from gauntlet.judge.service import Judge
from tests.support.fixtures import SCALE_ADD


def _is_worker(proc: psutil.Process) -> bool:
    return proc.name() == "worker" or proc.cmdline()[1:3] == ["-m", "gauntlet.judge.worker"]


def _worker_process(pid: int) -> int:
    """The worker's own process under a started handle (a confined one runs a few levels down)."""
    deadline = time.monotonic() + 30
    while True:
        # (Its command line shows once the start-up steps before it have exec'd into it; one
        # forked by the zygote has the zygote's command line and the name `worker`.)
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        found = [p.pid for p in tree if _is_worker(p)]
        if found or time.monotonic() > deadline:
            return found[-1]
        time.sleep(0.05)


def _threads(pid: int) -> list[tuple[int, int]]:
    """(scheduling policy, nice) of each thread of a process, from /proc."""
    seen = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        # After the command's name: field 19 is nice, field 41 the policy (proc(5)).
        seen.append((int(fields[38]), int(fields[16])))
    return seen


def _priority(pid: int) -> tuple[list[tuple[int, int]], int | None]:
    """(policy, nice) of each thread of a worker process, and its autogroup's nice."""
    return _threads(pid), priority.autogroup_nice(Path(f"/proc/{pid}/autogroup"))


def _imported(spare: spares.Spare) -> protocol.Imported:
    """A spare's first frame: its report that its imports are done and its priority is back."""
    header, _ = spare.handle.read(time.monotonic() + 120)
    event = protocol.parse_event(header)
    assert isinstance(event, protocol.Imported), event
    return event


def test_a_spare_imports_lowered_and_waits_and_is_judged_at_its_own_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = SCALE_ADD()
    judged: dict[str, tuple[list[tuple[int, int]], int | None]] = {}
    real = python_backend._Worker.await_ready

    def ready(self: Any, deadline: float, role: str) -> None:
        real(self, deadline, role)
        judged[role] = _priority(_worker_process(self.child.pid))

    monkeypatch.setattr(python_backend._Worker, "await_ready", ready)
    own_nice = os.getpriority(os.PRIO_PROCESS, 0)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        pool = warm._pool
        # Read here, so the judgment below finds each spare past its report (it reads past it
        # too, where it is still there).
        reports = {s.role: _imported(s) for s in pool._spares}
        waiting = {s.role: _priority(_worker_process(s.handle.child.pid)) for s in pool._spares}
        verdict = warm.eval(task, task.root / "expert", seed=7201)
    assert verdict.status == "pass", verdict.reason
    for role in ("reference", "candidate"):
        # Lowered while it imported, where its session has an autogroup of its own: the worker's,
        # not this process's (one in the default autogroup, as under CI's init, reads none).
        lowerable = waiting[role][1] is not None
        assert reports[role].lowered_autogroup == lowerable, role
        if role == "reference" and os.geteuid() == 0:
            # Unconfined as root, it may leave SCHED_IDLE, so its working thread took it.
            assert reports[role].lowered_idle, role
        # Back at its own priority once imported, before any request came, and when judged.
        for threads, autogroup in (waiting[role], judged[role]):
            assert all(policy == os.SCHED_OTHER for policy, _ in threads), (role, threads)
            assert all(nice == own_nice for _, nice in threads), (role, threads, own_nice)
            assert autogroup in (None, 0), role
    assert isinstance(pool, spares.SparePool)


def test_a_spare_whose_request_came_while_it_imported_is_lifted_for_it() -> None:
    # The request is in the pipe before the imports are done, and the working thread reads it
    # only once lifted: the main thread, watching the pipe, cannot miss it (it did when the
    # working thread read the request first: both waited for the other until the judge gave up).
    lowering = priority.SpareLowering()
    request_r, request_w = os.pipe()
    read: list[bytes] = []

    def work() -> None:
        lowering.lower()
        assert lowering.imported() == ""
        read.append(os.read(request_r, 7))

    try:
        os.write(request_w, b"request")
        working = threading.Thread(target=work)
        working.start()
        lowering.lift_when_due(request_r, working)
        working.join(timeout=30)
        assert read == [b"request"]
        assert not working.is_alive()
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        for fd in (request_r, request_w):
            os.close(fd)
    assert priority.idle_threads() == []


def test_a_process_that_cannot_leave_idle_is_not_made_idle() -> None:
    # This test's own process: lowering and lifting it must leave it as it was.
    before = (priority.autogroup_nice(), os.sched_getscheduler(0))
    state = priority.lower()
    try:
        assert priority.lift(state) == ""
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    assert (priority.autogroup_nice(), os.sched_getscheduler(0)) == before
    assert priority.idle_threads() == []
