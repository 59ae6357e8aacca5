from __future__ import annotations

import fcntl
import gc
import json
import os
import socket
import sys
import time

import pytest
import torch

from gauntlet import process
from gauntlet.judge import channel
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


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "int32", "bool"])
def test_numpy_arrays_round_trip_as_arrays(dtype: str) -> None:
    # The simulator's arrays (bfloat16 from ml_dtypes) travel with no PyTorch on either side.
    import ml_dtypes
    import numpy as np

    kind = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    array = (np.random.default_rng(0).standard_normal((4, 3)) * 10).astype(kind)
    read_fd, write_fd = os.pipe()
    write_frame(write_fd, {"job": 1}, [array, np.empty((0,), dtype=kind), array[:, ::2]])
    header, arrays = FrameReader(read_fd).read(time.monotonic() + 5)
    assert header == {"job": 1}
    assert all(isinstance(a, np.ndarray) for a in arrays)
    assert arrays[0].dtype == array.dtype and arrays[0].tobytes() == array.tobytes()
    assert arrays[1].shape == (0,)
    assert arrays[2].tobytes() == np.ascontiguousarray(array[:, ::2]).tobytes()
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


def _socket_pair() -> tuple[int, int]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return ours.detach(), theirs.detach()


def test_large_frames_on_a_socket_travel_in_a_sealed_memory_file() -> None:
    read_fd, write_fd = _socket_pair()
    big = torch.randn(1 << 19, dtype=torch.float64)  # 4 MiB: over SHARED_MIN_BYTES
    small = torch.arange(7, dtype=torch.int32)
    reader = FrameReader(read_fd)
    write_frame(write_fd, {"event": "big"}, [big, small])
    write_frame(write_fd, {"event": "small"}, [small])
    header, tensors = reader.read(time.monotonic() + 5)
    assert header == {"event": "big"}
    assert torch.equal(tensors[0], big) and torch.equal(tensors[1], small)
    tensors[0].zero_()  # a private mapping: the judge may write to what it received
    header, tensors = reader.read(time.monotonic() + 5)
    assert header == {"event": "small"} and torch.equal(tensors[0], small)
    assert reader.passed == []
    reader.close()
    os.close(read_fd)
    os.close(write_fd)


def _send_shared(write_fd: int, memory: int, nbytes: int) -> None:
    meta = {"dtype": "uint8", "shape": [nbytes], "nbytes": nbytes}
    head = json.dumps({"tensors": [meta], "shared": True}).encode()
    with socket.socket(fileno=os.dup(write_fd)) as sock:
        socket.send_fds(sock, [len(head).to_bytes(8, "little") + head], [memory])


@pytest.mark.parametrize(
    ("seals", "match"),
    [
        (0, "not sealed"),
        (fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL, "not sealed"),
        (channel.REQUIRED_SEALS, None),
    ],
)
def test_memory_files_that_could_still_change_are_refused(seals: int, match: str | None) -> None:
    read_fd, write_fd = _socket_pair()
    memory = os.memfd_create("frame", os.MFD_ALLOW_SEALING)
    os.write(memory, b"\1" * 4096)
    if seals:
        fcntl.fcntl(memory, fcntl.F_ADD_SEALS, seals)
    _send_shared(write_fd, memory, 4096)
    reader = FrameReader(read_fd)
    if match is None:
        _, tensors = reader.read(time.monotonic() + 5)
        assert int(tensors[0].sum()) == 4096
    else:
        with pytest.raises(ProtocolError, match=match):
            reader.read(time.monotonic() + 5)
    reader.close()
    for fd in (memory, read_fd, write_fd):
        os.close(fd)


def test_shared_frames_without_a_memory_file_are_refused() -> None:
    read_fd, write_fd = _socket_pair()
    pipe_r, pipe_w = os.pipe()
    _send_shared(write_fd, pipe_r, 16)
    head = b'{"tensors": [{"dtype": "uint8", "shape": [16], "nbytes": 16}], "shared": true}'
    os.write(write_fd, len(head).to_bytes(8, "little") + head)
    reader = FrameReader(read_fd)
    with pytest.raises(ProtocolError, match="not a memory file"):
        reader.read(time.monotonic() + 5)
    with pytest.raises(ProtocolError, match="without its memory file"):
        reader.read(time.monotonic() + 5)
    reader.close()
    for fd in (pipe_r, pipe_w, read_fd, write_fd):
        os.close(fd)


def test_a_memory_file_of_another_size_is_refused() -> None:
    read_fd, write_fd = _socket_pair()
    memory = os.memfd_create("frame", os.MFD_ALLOW_SEALING)
    os.write(memory, b"\0" * 100)
    fcntl.fcntl(memory, fcntl.F_ADD_SEALS, channel.REQUIRED_SEALS)
    _send_shared(write_fd, memory, 4096)
    reader = FrameReader(read_fd)
    with pytest.raises(ProtocolError, match="holds 100 B, not 4096"):
        reader.read(time.monotonic() + 5)
    reader.close()
    for fd in (memory, read_fd, write_fd):
        os.close(fd)


def test_a_channel_on_a_descriptor_past_1024_is_read() -> None:
    # A judge running many judgments in threads of one process reached descriptors numbered
    # past 1024, where `select` fails (FD_SETSIZE) and every later judgment failed with it.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1100:
        pytest.skip(f"descriptors are limited to {hard} here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    ours, theirs = socket.socketpair()
    high = os.dup2(ours.fileno(), 1090)
    try:
        reader = FrameReader(high)
        with pytest.raises(ChannelTimeout):
            reader.read(time.monotonic() + 0.05)
        write_frame(theirs.fileno(), {"event": "ready"}, [torch.arange(4)])
        header, tensors = reader.read(time.monotonic() + 5)
        assert header["event"] == "ready" and torch.equal(tensors[0], torch.arange(4))
        theirs.close()
        with pytest.raises(ChannelClosed):
            reader.read(time.monotonic() + 5)
        reader.close()
    finally:
        os.close(high)
        ours.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


_WRITER = """
import sys
import numpy as np
from gauntlet.judge.channel import write_frame
for i in range(3):
    write_frame(int(sys.argv[1]), {"frame": i}, [np.full(1 << 18, float(i))])  # 2 MiB each
"""


def _frame_files() -> tuple[set[str], int]:
    """This process's descriptors of frame memory files, and its mappings of them."""
    links = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        if "gauntlet-frame" in link:
            links.add(f"{name} {link}")
    with open("/proc/self/maps") as maps:
        return links, sum("gauntlet-frame" in line for line in maps)


def test_frames_kept_from_another_process_hold_no_descriptor() -> None:
    # The judge keeps reference frames across judgments (`_REFERENCES`). Mapped with Python's
    # mmap, each kept one held a descriptor of its memory file: 80 after four judgments of
    # KernelBench level 1 tasks, past any soft limit of 1024 in a run of a whole level.
    read_fd, write_fd = _socket_pair()
    before, _ = _frame_files()
    writer = process.Child([sys.executable, "-c", _WRITER, str(write_fd)], pass_fds=(write_fd,))
    os.close(write_fd)
    reader = FrameReader(read_fd)
    kept = [reader.read(time.monotonic() + 60) for _ in range(3)]
    finished = writer.wait(timeout_s=60)
    assert finished.returncode == 0, finished.stderr
    reader.close()
    os.close(read_fd)
    assert [header["frame"] for header, _ in kept] == [0, 1, 2]
    assert [float(arrays[0].sum()) for _, arrays in kept] == [0.0, 1 << 18, 2 << 18]
    held, mapped = _frame_files()
    assert held - before == set()
    assert mapped >= 3  # shared, not copied
    del kept
    gc.collect()
    assert _frame_files()[1] == mapped - 3  # unmapped once nothing refers to them


def test_memory_files_arrive_close_on_exec() -> None:
    # A worker that another thread starts meanwhile must not inherit a frame not yet read.
    read_fd, write_fd = _socket_pair()
    memory = os.memfd_create("frame", os.MFD_ALLOW_SEALING)
    os.set_inheritable(memory, True)
    head = b'{"tensors": []}'
    with socket.socket(fileno=os.dup(write_fd)) as sock:
        # Comes with a frame of its own, so it waits in the reader for the next frame.
        socket.send_fds(sock, [len(head).to_bytes(8, "little") + head], [memory])
    reader = FrameReader(read_fd)
    assert reader.read(time.monotonic() + 5) == ({}, [])
    assert len(reader.passed) == 1
    assert fcntl.fcntl(reader.passed[0], fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    reader.close()
    for fd in (memory, read_fd, write_fd):
        os.close(fd)


_SIZED_WRITER = """
import sys
import numpy as np
from gauntlet.judge.channel import write_frame
for i, elements in enumerate((3 << 16, 1 << 19)):  # 1.5 MiB and 4 MiB of float64
    write_frame(int(sys.argv[1]), {"frame": i}, [np.full(elements, float(i))])
"""


def test_a_frame_past_the_writers_file_size_limit_follows_inline() -> None:
    # A candidate may make files of a share of its memory cap only (`worker._bound_memory_files`);
    # a larger frame of its comes through the socket itself.
    import resource

    read_fd, write_fd = _socket_pair()
    writer = process.Child(
        [sys.executable, "-c", _SIZED_WRITER, str(write_fd)],
        pass_fds=(write_fd,),
        rlimits={resource.RLIMIT_FSIZE: 2 << 20},
    )
    os.close(write_fd)
    reader = FrameReader(read_fd)
    mapped = _frame_files()[1]
    _, small = reader.read(time.monotonic() + 60)
    assert _frame_files()[1] == mapped + 1  # in a memory file
    _, large = reader.read(time.monotonic() + 60)
    assert _frame_files()[1] == mapped + 1  # inline
    finished = writer.wait(timeout_s=60)
    assert finished.returncode == 0, finished.stderr
    assert float(small[0].sum()) == 0.0 and small[0].size == 3 << 16
    assert float(large[0].sum()) == 1 << 19
    reader.close()
    os.close(read_fd)
