"""The judge's side of the timed calls (`gauntlet/judge/timekeeper.py`), against a real process.

The caller (`tests/support/timed_caller.py`) reports its calls with the worker's own code
(`worker._report_call`) over the workers' real channel; only the GPU is missing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from gauntlet.judge import protocol, sampling, timekeeper, workers

ROOT = Path(__file__).resolve().parents[2]


def _caller(home: Path, *args: str) -> workers.WorkerHandle:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")]),
        "OMP_NUM_THREADS": "1",
    }
    return workers.WorkerHandle("tests.support.timed_caller", env=env, cwd=home, args=args)


def _reader(
    handle: workers.WorkerHandle,
) -> Callable[[bool], tuple[protocol.Event, list[Any]]]:
    def read(sampled: bool) -> tuple[protocol.Event, list[Any]]:
        header, tensors = handle.read(time.monotonic() + 60)
        return protocol.parse_event(header), tensors

    return read


def _started(handle: workers.WorkerHandle, config: str) -> None:
    event, _ = _reader(handle)(False)
    assert isinstance(event, protocol.TimingStart) and event.config == config


def test_the_judge_answers_every_call_and_receives_only_its_secret_samples(
    tmp_path: Path,
) -> None:
    handle = _caller(tmp_path, "C1", "12", "--elements", "1000")
    try:
        _started(handle, "C1")
        followed = timekeeper.follow(
            "C1", _reader(handle), handle.send, dict.fromkeys([3, 7, 10]), max_pairs=2000
        )
        finished = handle.finish(grace_s=30)
    finally:
        handle.close()
    assert finished.returncode == 0, finished.stderr
    assert followed.timed.config == "C1" and followed.calls == 24
    # Each sampled output is its own call's, whole (element i of pair p is 1000 p + i).
    assert sorted(followed.sampled) == [3, 7, 10]
    for pair, outputs in followed.sampled.items():
        assert len(outputs) == 1 and followed.shapes[pair] == [(1000,)]
        assert torch.equal(outputs[0], torch.arange(1000, dtype=torch.float64) + 1000 * pair)
    # The caller sent outputs only where the judge asked, after its report.
    said = json.loads(finished.stdout.splitlines()[-1])
    assert said["sampled"] == [3, 7, 10]
    # Small frames go inline; the steps reach the timing's phases (`pairs.sample.*`).
    assert sorted(said["sent"]) == ["inline", "stage"]
    assert "pairs.sample.inline" in followed.timed.summary.phases
    # Every call but the first is bracketed by the judge's clock.
    assert sorted(followed.walls["candidate"]) == list(range(12))
    assert sorted(followed.walls["baseline"]) == list(range(1, 12))
    assert all(w > 0 for role in followed.walls.values() for w in role.values())
    assert 0 < followed.judge_s and 0 < followed.samples_s


@pytest.mark.parametrize(
    ("file_bytes", "path"),
    [("0", "file"), (str(1 << 20), "parts"), ("1000", "inline")],
    ids=["in-a-memory-file", "past-the-file-size-limit", "no-file-of-a-page"],
)
def test_a_large_sampled_output_is_timed_by_the_path_it_took(
    tmp_path: Path, file_bytes: str, path: str
) -> None:
    # 2 MiB: a memory file, or several where the caller may not make a file that large (a
    # candidate's per-file share of its memory cap), or inline on the socket where it may make
    # none of a page.
    elements = str(1 << 19)
    handle = _caller(tmp_path, "C1", "5", "--elements", elements, "--file-bytes", file_bytes)
    try:
        _started(handle, "C1")
        followed = timekeeper.follow("C1", _reader(handle), handle.send, {3: None}, max_pairs=2000)
        finished = handle.finish(grace_s=30)
    finally:
        handle.close()
    assert finished.returncode == 0, finished.stderr
    assert followed.sampled[3][0][0] == 3 << 19
    # A memory file's or the parts' seconds are split into making the files and passing them.
    split = [f"{path}.make", f"{path}.send"] if path != "inline" else []
    sent = json.loads(finished.stdout.splitlines()[-1])["sent"]
    assert sorted(sent) == sorted([path, "stage", *split])


def test_a_call_reported_out_of_order_is_a_breach(tmp_path: Path) -> None:
    handle = _caller(tmp_path, "C1", "4", "--wrong-role-at", "2")
    try:
        _started(handle, "C1")
        with pytest.raises(timekeeper.Breach, match="expected the baseline call of pair 2"):
            timekeeper.follow("C1", _reader(handle), handle.send, {}, max_pairs=2000)
    finally:
        handle.close()


def test_calls_past_the_plans_pairs_are_a_breach(tmp_path: Path) -> None:
    handle = _caller(tmp_path, "C1", "4")
    try:
        _started(handle, "C1")
        with pytest.raises(timekeeper.Breach, match="pair 3"):
            timekeeper.follow("C1", _reader(handle), handle.send, {}, max_pairs=3)
    finally:
        handle.close()


def test_the_answers_are_the_protocols_next_commands() -> None:
    go_on = protocol.parse_command(timekeeper.GO_ON)
    assert go_on.command == "next" and not go_on.keep and go_on.elements is None
    for elements in (None, 12345):
        command = protocol.parse_command(timekeeper.keep(elements))
        assert command.command == "next" and command.keep and command.elements == elements


def test_a_sampled_call_told_a_seed_sends_the_elements_it_chooses_and_its_shape(
    tmp_path: Path,
) -> None:
    # Past `sampling.ELEMENTS`, the caller gathers the chosen elements where they lie and sends
    # those alone, with the shape the call returned; a call told no seed sends its whole output.
    elements = sampling.ELEMENTS * 3 + 7
    handle = _caller(tmp_path, "C1", "6", "--elements", str(elements))
    try:
        _started(handle, "C1")
        followed = timekeeper.follow(
            "C1", _reader(handle), handle.send, {2: 99, 4: None}, max_pairs=2000
        )
        finished = handle.finish(grace_s=30)
    finally:
        handle.close()
    assert finished.returncode == 0, finished.stderr
    chosen = sampling.positions(99, 0, elements)
    assert chosen is not None
    assert torch.equal(followed.sampled[2][0], (chosen + 2 * elements).to(torch.float64))
    assert followed.shapes[2] == [(elements,)] and followed.shapes[4] == [(elements,)]
    assert followed.sampled[4][0].shape == (elements,)
    sent = json.loads(finished.stdout.splitlines()[-1])["sent"]
    assert "gather" in sent and "pairs.sample.gather" in followed.timed.summary.phases
