"""The Python backend's worker handshake: workers import first and work only once started."""

from __future__ import annotations

import os
import time
from pathlib import Path

from gauntlet.judge.backend import EvalRequest
from gauntlet.judge.pipeline import read_submission
from gauntlet.judge.python_backend import PythonBackend, _Evaluation, _Worker
from tests.support.fixtures import SCALE_ADD


def _evaluation(tmp_path: Path) -> _Evaluation:
    task = SCALE_ADD()
    submission, status, problem = read_submission(task, task.root / "expert")
    assert submission is not None, (status, problem)
    build = PythonBackend().build(task, submission, tmp_path, "cpu")
    request = EvalRequest(
        task=task,
        build=build,
        configs=task.visible_configs,
        device="cpu",
        seed=3,
        mode="final",
        timed=False,
        workdir=tmp_path,
    )
    return _Evaluation(request)


def test_a_worker_waits_for_start_and_does_nothing_without_it(tmp_path: Path) -> None:
    evaluation = _evaluation(tmp_path)
    worker = _Worker(evaluation._request("reference", evaluation.states), tmp_path / "w", "cpu")
    worker.await_ready(time.monotonic() + 120)
    # Ready, and nothing more: the reference worker has not drawn a single trial.
    os.close(worker.command_fd)
    worker.command_fd = os.open(os.devnull, os.O_WRONLY)
    header, tensors = worker.read(time.monotonic() + 60)
    assert header["event"] == "worker_error" and not tensors
    assert worker.finish(grace_s=30).returncode != 0
    worker.close()


def test_a_started_worker_does_its_role(tmp_path: Path) -> None:
    evaluation = _evaluation(tmp_path)
    worker = _Worker(evaluation._request("reference", evaluation.states), tmp_path / "w", "cpu")
    worker.await_ready(time.monotonic() + 120)
    worker.send({"command": "start"})
    header, _ = worker.read(time.monotonic() + 60)
    assert header["event"] == "trial"
    worker.close()
