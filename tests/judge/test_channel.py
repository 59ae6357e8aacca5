from __future__ import annotations

import os
import time

import pytest
import torch

from gauntlet.judge.channel import (
    ChannelClosed,
    ChannelTimeout,
    FrameReader,
    ProtocolError,
    write_frame,
)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]
)
def test_tensors_round_trip_bitwise(dtype: torch.dtype) -> None:
    read_fd, write_fd = os.pipe()
    tensor = (torch.randn(3, 5) * 10).to(dtype)
    empty = torch.empty(0, 4, dtype=dtype)
    write_frame(write_fd, {"event": "x", "value": [1, 2.5, None]}, [tensor, empty])
    header, tensors = FrameReader(read_fd).read(time.monotonic() + 5)
    assert header == {"event": "x", "value": [1, 2.5, None]}
    assert tensors[0].dtype == dtype and torch.equal(tensors[0], tensor)
    assert tensors[1].shape == (0, 4)
    os.close(read_fd)
    os.close(write_fd)


def test_timeout_and_close() -> None:
    read_fd, write_fd = os.pipe()
    reader = FrameReader(read_fd)
    with pytest.raises(ChannelTimeout):
        reader.read(time.monotonic() + 0.05)
    os.close(write_fd)
    with pytest.raises(ChannelClosed):
        reader.read(time.monotonic() + 1)
    os.close(read_fd)


def test_lies_about_sizes_are_protocol_errors() -> None:
    read_fd, write_fd = os.pipe()
    header = b'{"tensors": [{"dtype": "float32", "shape": [4], "nbytes": 8}]}'
    os.write(write_fd, len(header).to_bytes(8, "little") + header + b"\0" * 8)
    with pytest.raises(ProtocolError, match="does not fit"):
        FrameReader(read_fd).read(time.monotonic() + 1)
    os.close(read_fd)
    os.close(write_fd)
