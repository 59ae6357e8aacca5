"""Spares import at the lowest priority and are judged at their own (real processes, /proc)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from gauntlet.judge import priority, python_backend, spares
from gauntlet.judge.service import Judge
from tests.support.fixtures import SCALE_ADD


def _worker_process(pid: int) -> int:
    """The worker's own process under a started handle (a confined one runs a few levels down)."""
    deadline = time.monotonic() + 30
    while True:
        # (Its command line shows once the start-up steps before it have exec'd into it.)
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        found = [p.pid for p in tree if p.cmdline()[1:3] == ["-m", "gauntlet.judge.worker"]]
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


def test_a_spare_waits_lowered_and_is_judged_at_its_own_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = SCALE_ADD()
    judged: dict[str, tuple[list[tuple[int, int]], int | None]] = {}
    real = python_backend._Worker.await_ready

    def ready(self: Any, deadline: float, role: str) -> None:
        real(self, deadline, role)
        pid = _worker_process(self.child.pid)
        judged[role] = (_threads(pid), priority.autogroup_nice(Path(f"/proc/{pid}/autogroup")))

    monkeypatch.setattr(python_backend._Worker, "await_ready", ready)
    own_nice = os.getpriority(os.PRIO_PROCESS, 0)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        pool = warm._pool
        waiting = {s.role: _worker_process(s.handle.child.pid) for s in pool._spares}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
            priority.autogroup_nice(Path(f"/proc/{pid}/autogroup")) == 0 for pid in waiting.values()
        ):
            time.sleep(0.05)
        lowered = {
            role: (_threads(pid), priority.autogroup_nice(Path(f"/proc/{pid}/autogroup")))
            for role, pid in waiting.items()
        }
        verdict = warm.eval(task, task.root / "expert", seed=7201)
    assert verdict.status == "pass", verdict.reason
    for role in ("reference", "candidate"):
        threads, autogroup = lowered[role]
        if autogroup is not None:
            assert autogroup == priority.SPARE_AUTOGROUP_NICE, role
        if role == "reference" and os.geteuid() == 0:
            # Unconfined as root, it may leave SCHED_IDLE, so its working thread took it.
            assert any(policy == os.SCHED_IDLE for policy, _ in threads)
        threads, autogroup = judged[role]
        assert all(policy == os.SCHED_OTHER for policy, _ in threads), (role, threads)
        assert all(nice == own_nice for _, nice in threads), (role, threads, own_nice)
        assert autogroup in (None, 0), role
    assert isinstance(pool, spares.SparePool)


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
