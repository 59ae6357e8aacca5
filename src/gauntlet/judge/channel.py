"""The framed channel between the judge and its workers.

A frame is a JSON header plus raw tensor bytes. Nothing on this channel is ever unpickled: the
judge reads data from a process that ran untrusted code, so the format admits JSON values and
flat arrays of a known dtype, and a frame is refused past a size limit.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_LENGTH = struct.Struct("<Q")
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_FRAME_BYTES = 8 * 1024 * 1024 * 1024

#: dtype names a tensor on the channel may have.
DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)


class ChannelClosed(Exception):
    """The other end closed the channel (EOF)."""


class ChannelTimeout(Exception):
    """No complete frame arrived before the deadline."""


class ProtocolError(Exception):
    """A frame that breaks the format (too large, bad header, unknown dtype)."""


def encode_tensor(tensor: torch.Tensor) -> tuple[dict[str, Any], memoryview]:
    """Describe a tensor and return a view of its raw bytes (copied to the CPU, contiguous)."""
    import torch

    flat = tensor.detach().to("cpu").contiguous()
    dtype = str(flat.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise ProtocolError(f"dtype {dtype} cannot be sent")
    # A view of the tensor's own memory: frames of GPU-sized outputs are hundreds of MB, and
    # every copy on this path costs the judge seconds per trial.
    data = flat.reshape(-1).view(torch.uint8).numpy().data if flat.numel() else memoryview(b"")
    return {"dtype": dtype, "shape": list(flat.shape), "nbytes": len(data)}, data


def decode_tensor(meta: dict[str, Any], data: bytearray) -> torch.Tensor:
    """Rebuild a tensor from its description and bytes."""
    import torch

    dtype_name = meta.get("dtype")
    shape = meta.get("shape")
    if dtype_name not in DTYPES or not isinstance(shape, list):
        raise ProtocolError(f"bad tensor description {meta!r}")
    dtype = getattr(torch, dtype_name)
    count = 1
    for dim in shape:
        if not isinstance(dim, int) or dim < 0:
            raise ProtocolError(f"bad tensor shape {shape!r}")
        count *= dim
    itemsize = torch.empty((), dtype=dtype).element_size()
    if count * itemsize != len(data):
        raise ProtocolError(f"tensor of shape {shape} and {dtype_name} does not fit {len(data)} B")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(shape)


def write_frame(fd: int, header: dict[str, Any], tensors: list[torch.Tensor] | None = None) -> None:
    """Write one frame: the header (with tensor descriptions added) and the tensors' bytes."""
    blobs: list[memoryview] = []
    metas: list[dict[str, Any]] = []
    for tensor in tensors or []:
        meta, data = encode_tensor(tensor)
        metas.append(meta)
        blobs.append(data)
    head = json.dumps({**header, "tensors": metas}, allow_nan=True).encode()
    _write_all(fd, _LENGTH.pack(len(head)) + head)
    for blob in blobs:
        _write_all(fd, blob)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Reads frames from a file descriptor with deadlines."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def read(self, deadline: float | None) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """The next frame; raises ChannelTimeout past `deadline` (a time.monotonic value)."""
        (length,) = _LENGTH.unpack(self._read_exact(_LENGTH.size, deadline))
        if length > MAX_HEADER_BYTES:
            raise ProtocolError(f"frame header of {length} bytes is over the limit")
        try:
            header = json.loads(self._read_exact(length, deadline))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ProtocolError(f"frame header is not JSON: {err}") from err
        if not isinstance(header, dict) or not isinstance(header.get("tensors"), list):
            raise ProtocolError("frame header is not an object with 'tensors'")
        metas = header.pop("tensors")
        total = sum(int(m.get("nbytes", 0)) for m in metas if isinstance(m, dict))
        if total > MAX_FRAME_BYTES:
            raise ProtocolError(f"frame of {total} bytes is over the limit")
        tensors = []
        for meta in metas:
            if not isinstance(meta, dict) or not isinstance(meta.get("nbytes"), int):
                raise ProtocolError(f"bad tensor description {meta!r}")
            tensors.append(decode_tensor(meta, self._read_exact(meta["nbytes"], deadline)))
        return header, tensors

    def _read_exact(self, size: int, deadline: float | None) -> bytearray:
        # Read straight into one buffer that the tensor then wraps: no joins, no extra copies.
        buffer = bytearray(size)
        view = memoryview(buffer)
        filled = 0
        while filled < size:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                raise ChannelTimeout()
            count = os.readv(self.fd, [view[filled:]])
            if not count:
                raise ChannelClosed()
            filled += count
        return buffer


def widen_pipe(fd: int) -> None:
    """Make a pipe's buffer as large as the system allows, so big frames move in few calls."""
    try:
        limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, min(limit, 16 << 20))
    except (OSError, ValueError):
        pass  # not Linux, or the limit is lower for this user: the default size still works
