"""The frame channel with GPU tensors on a real GPU: large ones copied a chunk at a time."""

from __future__ import annotations

import os
import socket
import time

import pytest
import torch

from gauntlet.judge import channel
from gauntlet.judge.channel import FrameReader, write_frame

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("threads", [1, channel.FILL_THREADS])
def test_large_gpu_tensors_reach_the_reader_through_chunks_never_staged_whole(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threads == 1:  # one memory file, filled by the writer's own thread
        monkeypatch.setattr(channel, "PARALLEL_FILL_BYTES", 1 << 40)
    staged: list[int] = []
    to_host = channel.to_host

    def counted(tensor: torch.Tensor) -> torch.Tensor:
        staged.append(tensor.nbytes)
        return to_host(tensor)

    monkeypatch.setattr(channel, "to_host", counted)
    generator = torch.Generator(device="cuda").manual_seed(5)
    wide = torch.randn(3000, 4099, dtype=torch.float64, device="cuda", generator=generator)
    outputs = [wide.t(), torch.arange(5, device="cuda"), torch.cat([wide, wide]).bfloat16()]
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader = FrameReader(ours.fileno())
    spent: dict[str, float] = {}
    path = write_frame(theirs.fileno(), {"event": "x"}, outputs, spent)
    assert path == ("file" if threads == 1 else "parts")
    _, tensors = reader.read(time.monotonic() + 60)
    for got, sent in zip(tensors, outputs, strict=True):
        assert got.device.type == "cpu" and torch.equal(got, sent.cpu())
    assert staged == [40], "only the small tensor was staged whole"
    assert spent["make"] > 0.0
    reader.close()
    for end in (ours, theirs):
        end.close()
    assert not [fd for fd in os.listdir("/proc/self/fd") if "gauntlet-frame" in _link(fd)]


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""
