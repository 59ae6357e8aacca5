"""GPU memory passed from the trusted reference worker to the judge (`cuda_share`), on a GPU."""

from __future__ import annotations

import dataclasses
import gc
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from gauntlet import settings
from gauntlet.judge import cuda_share
from gauntlet.judge.channel import FrameReader, ProtocolError
from gauntlet.judge.python_backend import _Evaluation
from gauntlet.task import Config
from tests.support.fixtures import SCALE_ADD, eval_request, with_spec

pytestmark = pytest.mark.gpu

#: A writer process: a float64 tensor of `n` elements made on the GPU, and a small one, sent
#: as the reference worker sends a streamed result; then it exits.
WRITER = """
import sys, torch
from gauntlet.judge.channel import write_frame
fd, n = int(sys.argv[1]), int(sys.argv[2])
big = torch.arange(n, dtype=torch.float64, device="cuda")
write_frame(fd, {"event": "x"}, [big, torch.ones(3, device="cuda")], share_device=True)
"""

ELEMENTS = 16 << 20  # 128 MiB in float64: past DEVICE_SHARE_MIN_BYTES


def _written_and_gone(n: int) -> int:
    """Our end of a socket on which a writer process sent its frame, then exited."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    src = str(Path(__file__).parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run(
        [sys.executable, "-c", WRITER, str(theirs.fileno()), str(n)],
        pass_fds=[theirs.fileno()],
        env=env,
        check=True,
        timeout=180,
    )
    theirs.close()
    return ours.detach()


def _mapped() -> int:
    """Shared GPU memory this process maps now (`cuda_share._Shared` objects alive)."""
    gc.collect()
    return sum(isinstance(o, cuda_share._Shared) for o in gc.get_objects())


def test_a_gpu_tensor_reaches_the_judge_in_place_and_outlives_its_writer() -> None:
    fd = _written_and_gone(ELEMENTS)
    reader = FrameReader(fd)
    reader.device = 0
    header, (big, small) = reader.read(time.monotonic() + 30)
    assert header == {"event": "x"}
    # The large one stays on the GPU, mapped in this process (no copy was taken of it); the
    # small one came through the host as before.
    assert big.device == torch.device("cuda", 0) and big.dtype == torch.float64
    assert torch.equal(big, torch.arange(ELEMENTS, dtype=torch.float64, device="cuda"))
    assert small.device.type == "cpu" and torch.equal(small, torch.ones(3))
    assert reader.passed == [] and _mapped() == 1
    # Once the tensor is let go, so is the mapping (and with it the memory: nobody else holds
    # it, its writer gone).
    del big
    assert _mapped() == 0
    reader.close()
    os.close(fd)


def test_a_reader_that_may_not_map_gpu_memory_refuses_it_and_holds_none() -> None:
    fd = _written_and_gone(ELEMENTS)
    reader = FrameReader(fd)  # a candidate's reader: no `device`
    with pytest.raises(ProtocolError, match="may not share it"):
        reader.read(time.monotonic() + 30)
    reader.close()
    assert reader.passed == [] and _mapped() == 0
    os.close(fd)


def test_streamed_references_are_compared_where_they_were_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Trials of 128 MiB of float64 references under a budget of 200 MiB: one fits, the
    # config's do not, so each is computed when its candidate output is compared, and comes
    # in GPU memory, never through the host.
    monkeypatch.setattr(settings, "REFERENCE_BYTES", 200 << 20)
    task = with_spec(SCALE_ADD(), baseline=None)
    big = Config(name="big", params={"n": ELEMENTS, "dtype": "float32"})
    request = eval_request(task, task.root / "expert", tmp_path, device="cuda:0", seed=46)
    request = dataclasses.replace(request, configs=[big], timed=False)
    result = _Evaluation(request).run()
    assert [c.correct for c in result.results] == [True], result.reason or result.results
    assert result.environment["references_streamed"] == "big"
    trials = result.results[0].trials
    assert result.environment["references_streamed_on_gpu"] == f"{trials} of {trials}"
    # Each trial after the first was ordered as the one before came in (the GPU has room).
    assert result.environment["references_ordered_ahead"] == str(trials - 1)

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    text = (task.root / "expert" / "kernel.py").read_text()
    (wrong / "kernel.py").write_text(text.replace("alpha * x + y", "alpha * x - y"))
    build = dataclasses.replace(request.build, artifact=wrong)
    request = dataclasses.replace(request, build=build, workdir=tmp_path / "w2")
    result = _Evaluation(request).run()
    assert [c.correct for c in result.results] == [False]
    assert "trial 0" in result.results[0].reason
