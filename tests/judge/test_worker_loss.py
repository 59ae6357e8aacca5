"""A judge worker lost where only the judge's code ran: judged again once, never the submission's
fault; lost twice, the judge's error."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from gauntlet import process
from gauntlet.errors import WorkerLost
from gauntlet.judge import judge, python_backend, spares, workers
from gauntlet.judge.service import Judge
from tests.support.fixtures import SCALE_ADD


def _kill_on_start(monkeypatch: pytest.MonkeyPatch, role: str, times: int) -> list[int]:
    """SIGKILL the first `times` cold workers of `role` as soon as they start (real processes)."""
    killed: list[int] = []
    real = workers.python_worker

    def start(tmp: Path, device: str, *args: Any, **kwargs: Any) -> workers.WorkerHandle:
        handle = real(tmp, device, *args, **kwargs)
        if tmp.name == role and len(killed) < times:
            os.killpg(handle.child.pid, signal.SIGKILL)
            killed.append(handle.child.pid)
        return handle

    monkeypatch.setattr(workers, "python_worker", start)
    return killed


def test_a_candidate_worker_killed_before_the_submission_ran_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = SCALE_ADD()
    killed = _kill_on_start(monkeypatch, "candidate", times=1)
    verdict = judge(task, task.root / "expert", device="cpu", seed=8101)
    assert killed
    # Its loss is not the submission's crash: the expert passes on the second try.
    assert verdict.status == "pass", verdict.reason
    assert "candidate worker killed by SIGKILL" in verdict.environment["rejudged"]


def test_a_worker_lost_twice_is_the_judges_error(monkeypatch: pytest.MonkeyPatch) -> None:
    task = SCALE_ADD()
    _kill_on_start(monkeypatch, "reference", times=2)
    with pytest.raises(WorkerLost, match="reference worker killed by SIGKILL"):
        judge(task, task.root / "expert", device="cpu", seed=8103)


def _kill_as_the_reference_works(monkeypatch: pytest.MonkeyPatch, kill: Any) -> list[int]:
    """Call `kill(worker)` once, as the judge opens a reference worker's results to read.

    Returns the list that the pid `kill` returns goes into.
    """
    real = python_backend._Evaluation._open_feed
    killed: list[int] = []

    def kill_first(self: Any, worker: Any) -> None:
        if not killed:
            killed.append(kill(worker))
        return real(self, worker)

    monkeypatch.setattr(python_backend._Evaluation, "_open_feed", kill_first)
    return killed


def test_a_reference_worker_killed_mid_work_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    task = SCALE_ADD()

    def kill(worker: Any) -> int:
        os.killpg(worker.child.pid, signal.SIGKILL)
        return int(worker.child.pid)

    calls = _kill_as_the_reference_works(monkeypatch, kill)
    verdict = judge(task, task.root / "expert", device="cpu", seed=8104)
    assert calls
    assert verdict.status == "pass", verdict.reason
    assert "reference worker killed by SIGKILL" in verdict.environment["rejudged"]


def test_a_zygote_killed_mid_judgment_is_started_again_and_the_judgment_made_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The workers' zygote dies while the reference works: both workers die with it (SIGKILL),
    # which is a lost worker, and the judgment's second try forks from a new zygote.
    task = SCALE_ADD()

    def kill(worker: Any) -> int:
        zygote = workers.worker_zygote("cpu")
        assert zygote is not None
        os.kill(zygote.child.pid, signal.SIGKILL)
        zygote.child.wait(10)
        return zygote.child.pid

    killed = _kill_as_the_reference_works(monkeypatch, kill)
    verdict = judge(task, task.root / "expert", device="cpu", seed=8105)
    assert killed
    assert verdict.status == "pass", verdict.reason
    assert "killed by SIGKILL" in verdict.environment["rejudged"]
    again = workers.worker_zygote("cpu")
    assert again is not None and again.child.pid != killed[0]


def test_a_spare_that_died_as_it_was_taken_costs_no_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = SCALE_ADD()
    real = spares.SparePool.take
    killed: list[str] = []

    def take_and_kill(
        self: spares.SparePool, role: Any, *args: Any, **kwargs: Any
    ) -> spares.Spare | None:
        spare = real(self, role, *args, **kwargs)
        if spare is not None:
            # Between the pool's check that it lives and the judgment's request.
            os.killpg(spare.handle.child.pid, signal.SIGKILL)
            killed.append(role)
        return spare

    monkeypatch.setattr(spares.SparePool, "take", take_and_kill)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        verdict = warm.eval(task, task.root / "expert", seed=8105)
    assert "candidate" in killed
    assert verdict.status == "pass", verdict.reason
    assert "killed by SIGKILL" in verdict.environment["rejudged"]


# The static guards off, as in tests/exploits: the containment must hold on its own.
_ORCHESTRATOR = """
import logging, sys
from pathlib import Path
from gauntlet.judge import judge
from gauntlet.judge.python_backend import PythonBackend
from tests.support.fixtures import SCALE_ADD
PythonBackend.guard = lambda self, task, submission: None
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(message)s")
judge(SCALE_ADD(), Path(sys.argv[1]), device="cpu", seed=8106)
"""


def test_a_killed_judge_leaves_no_worker_behind(tmp_path: Path) -> None:
    """SIGKILL the judge's own process while a submission spins in a loop that never reads its
    pipes again: the loop and the judge's workers die with the judge."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "kernel.py").write_text(
        "import time\ndef scale_add(x, y, alpha):\n    while True:\n        time.sleep(0.1)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    running = threading.Event()

    def watch(line: str) -> None:
        # The candidate has started the config: the submission's loop is running.
        if "candidate worker: config_start" in line:
            running.set()

    orchestrator = process.Child(
        [sys.executable, "-c", _ORCHESTRATOR, str(submission)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": f"{repo / 'src'}:{repo}"},
        on_stdout_line=watch,
    )
    try:
        assert running.wait(120), orchestrator.wait(0).stdout[-2000:]
        time.sleep(1.0)
        tree = psutil.Process(orchestrator.pid).children(recursive=True)
        assert tree
    finally:
        os.kill(orchestrator.pid, signal.SIGKILL)
        orchestrator.wait()
    deadline = time.monotonic() + 20
    alive = tree
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]


def test_a_worker_not_ready_in_time_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    task = SCALE_ADD()
    real_start = python_backend._Worker.start
    real_wait = python_backend._Worker.await_ready
    stopped: list[int] = []
    # A cold worker, never a spare that an open service of an earlier test has ready.
    monkeypatch.setattr(spares, "active", lambda: None)

    def start_starved(cls: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        worker = real_start(request, *args, **kwargs)
        if request.role == "candidate" and not stopped:
            # A start that never ends (a worker starved of CPU, or stuck in its imports):
            # stopped as it starts, long before its imports could be done (stopped only at
            # `await_ready`, a worker imported while the judge waited for the reference's was
            # ready already, and then judged stopped: a `timeout`, seen under make test).
            hold.enter_context(worker.child.stopped())
            stopped.append(worker.child.pid)
        return worker

    def wait_briefly(self: Any, deadline: float, role: str) -> None:
        if stopped and self.child.pid == stopped[0]:
            deadline = time.monotonic() + 0.5
        real_wait(self, deadline, role)

    monkeypatch.setattr(python_backend._Worker, "start", classmethod(start_starved))
    monkeypatch.setattr(python_backend._Worker, "await_ready", wait_briefly)
    with contextlib.ExitStack() as hold:
        verdict = judge(task, task.root / "expert", device="cpu", seed=8105)
    assert stopped
    # Only the judge's code had run in it: judged again, never a verdict against the expert.
    assert verdict.status == "pass", verdict.reason
    assert "not ready" in verdict.environment["rejudged"]


def test_a_hung_worker_says_where_it_hung(tmp_path: Path) -> None:
    handle = workers.python_worker(tmp_path, "cpu", None)
    try:
        # The worker's main thread registers its stack dump, then starts the thread that works.
        deadline = time.monotonic() + 60
        while len(os.listdir(f"/proc/{handle.child.pid}/task")) < 2:
            assert time.monotonic() < deadline, "the worker never started its working thread"
            time.sleep(0.01)
        handle.dump_stacks()
        finished = handle.finish()
    finally:
        handle.close()
    assert "Thread 0x" in finished.stderr
    assert 'File "' in finished.stderr
