"""The Python backend's worker handshake: workers import first and work only once started."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gauntlet.judge.python_backend import _Evaluation, _Worker
from tests.support.fixtures import SCALE_ADD, cpu_request


def _reference_worker(tmp_path: Path) -> _Worker:
    task = SCALE_ADD()
    evaluation = _Evaluation(cpu_request(task, task.root / "expert", tmp_path))
    return _Worker(evaluation._request("reference", evaluation.states), tmp_path / "w", "cpu")


def test_a_worker_waits_for_start_and_does_nothing_without_it(tmp_path: Path) -> None:
    worker = _reference_worker(tmp_path)
    worker.await_ready(time.monotonic() + 120)
    # Ready, and nothing more: the reference worker has not drawn a single trial.
    os.close(worker.command_fd)
    worker.command_fd = os.open(os.devnull, os.O_WRONLY)
    header, tensors = worker.read(time.monotonic() + 60)
    assert header["event"] == "worker_error" and not tensors
    assert worker.finish(grace_s=30).returncode != 0
    worker.close()


def test_a_started_worker_does_its_role(tmp_path: Path) -> None:
    worker = _reference_worker(tmp_path)
    worker.await_ready(time.monotonic() + 120)
    worker.send({"command": "start"})
    header, _ = worker.read(time.monotonic() + 60)
    assert header["event"] == "trial"
    worker.close()
