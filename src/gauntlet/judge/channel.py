"""The framed channel between the judge and its workers.

A frame is a JSON header plus raw tensor bytes. Nothing on this channel is ever unpickled: the
judge reads data from a process that ran untrusted code, so the format admits JSON values and
flat arrays of a known dtype, and a frame is refused past a size limit.

On a Unix socket (the workers' result channel), the tensor bytes of a large frame do not go
through the socket: the writer puts them in a memory file (`memfd`), seals it against any
further change and passes its descriptor along with the header; the reader maps it and the
tensors are views of that mapping. GPU tensors are copied to the host through pinned memory.
Measured on an H100 host: a pipe moved 0.75 GB/s and a pageable device-to-host copy 1.4 GB/s,
so GPU-sized judgments spent most of their time moving outputs and references.

A frame larger than the writer may make a file (`RLIMIT_FSIZE`: a candidate's is a share of its
memory cap, `worker._bound_memory_files`) goes as several memory files, its parts: each of
`part_bytes` (a multiple of the page size; the last one holds the rest), the first passed with
the header and each later one with an 8-byte message of its size. The writer makes, seals,
sends and closes one part before it makes the next, so it holds one part at a time beyond
those in flight (which the kernel bounds by the sender's descriptor limit, ETOOMANYREFS, and
which the writer then waits out), and no file is ever past its file-size limit: what a
candidate's frames hold outside its memory cap stays within the file-size limit times its
descriptors and its descriptors in flight, the bound `_bound_memory_files` sets. The reader
maps each part as it comes into one reserved range, so the frame's bytes are one view, as
from one file, and it holds one part's descriptor at a time. A frame of `PARALLEL_FILL_BYTES`
or more goes in one part a thread (at most `FILL_THREADS`, within the file-size limit), up to
`FILL_THREADS` of them made at once (`_Parts`): a file's writes take its lock in turn, one
thread fills about 2 GB/s, and separate files fill side by side (1 GiB in 0.27-0.47 s against
0.55-1.17 s in one file; under a 32 MiB file-size limit 0.35-0.39 s against 0.51-0.80 s made
one at a time; this project's 2-core machine, 2026-11-28, `scripts/bench_channel.py`). Each
part made holds a descriptor until it is sent, so the bound stands. On
a pipe, for small frames, or where the writer can make no memory file (none of a page, one
past `MAX_PARTS` parts, no descriptor left), the bytes follow the header inline.

On this project's 2-core machine (loaded, 2026-11-27, `scripts/bench_channel.py`, five runs), a
512 MiB frame under a 32 MiB file-size limit was read in 0.32-0.48 s in 16 parts (0.25-0.44 s
in one file) against 0.52-0.99 s inline, for 0.003 CPU s of the reader's against 0.35-0.51
(the writer's: 0.19-0.35 against 0.07-0.09); its bytes read once more after that (a mapped
frame's pages faulted in, as a comparison does), 0.57-0.72 s against 0.67-1.40 s. Copying the
parts into one buffer instead of mapping them would add a pass over the bytes in the judge.
"""

from __future__ import annotations

import array
import ctypes
import errno
import fcntl
import functools
import json
import math
import mmap
import os
import resource
import select
import socket
import stat
import struct
import sys
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import torch

_LENGTH = struct.Struct("<Q")
MAX_HEADER_BYTES = 16 * 1024 * 1024
#: The largest frame a reader takes unless it is given its own limit: what a process that ran
#: untrusted code (a candidate) can make the judge map. A trusted writer's reader may be given
#: a limit of its own (`FrameReader.limit_bytes`): the reference worker's frames are the float64
#: references of GPU-sized configs (12.9 GB a trial for KernelBench's softmax at 4096 x 393216).
MAX_FRAME_BYTES = 8 * 1024 * 1024 * 1024
#: Frames whose tensors hold at least this many bytes travel in a sealed memory file.
SHARED_MIN_BYTES = 1 << 20
#: Frames of at least this many bytes go in several memory files filled side by side: one
#: thread fills a file at about 2 GB/s (an H200 host's reference worker wrote 32 GB of float64
#: references in 19 s for KernelBench's softmax, a candidate's 6.4 GB outputs took seconds).
PARALLEL_FILL_BYTES = 64 << 20
#: Memory files filled at once at most, one thread each.
FILL_THREADS = 8
#: GPU tensors of at least this many bytes in a frame that goes in memory files are copied into
#: them a chunk of this size at a time (`_GpuBytes`), not staged whole first.
STAGED_CHUNK_BYTES = 32 << 20
#: GPU tensors of at least this many bytes go as shared GPU memory (`cuda_share`) where the
#: writer may share it: below, a host copy costs less than the driver's calls.
DEVICE_SHARE_MIN_BYTES = 64 << 20
#: Seals a shared frame must carry: no writes, no shrinking (a mapping of a file that shrinks
#: faults when read), no growing, and no removing the seals.
REQUIRED_SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
#: Memory files a frame may come in at most: each part is one mapping of the reader's (a
#: process may hold 65530 by default, `vm.max_map_count`), and a largest frame
#: (`MAX_FRAME_BYTES`) fits in parts of 2 MiB.
MAX_PARTS = 4096

#: How a frame's tensor bytes went: after the header on the channel itself, in one memory
#: file, or in several (`part_bytes`).
FramePath = Literal["inline", "file", "parts"]

#: Why a writer may be unable to make even one memory file: none of a page is allowed
#: (`RLIMIT_FSIZE`), its descriptors are all open, or the host's memory is short.
_NO_FILE = frozenset({errno.EFBIG, errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC})

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


class UnmappedGpuMemory(ProtocolError):
    """Shared GPU memory, well described, that this process cannot map (`cuda_share`)."""


def encode_tensor(tensor: torch.Tensor | np.ndarray) -> tuple[dict[str, Any], memoryview]:
    """Describe a tensor and return a view of its raw bytes (copied to the CPU, contiguous).

    A NumPy array (the simulator's, bfloat16 from ml_dtypes included) travels as one and is read
    back as one (`array` in its description), with no PyTorch on either side.
    """
    import numpy as np

    if isinstance(tensor, np.ndarray):
        flat_array = np.ascontiguousarray(tensor)
        name = str(flat_array.dtype)
        if name not in DTYPES:
            raise ProtocolError(f"dtype {name} cannot be sent")
        raw = flat_array.reshape(-1).view(np.uint8).data if flat_array.size else memoryview(b"")
        meta = {"dtype": name, "shape": list(flat_array.shape), "nbytes": len(raw), "array": True}
        return meta, raw
    import torch

    meta = _torch_meta(tensor)
    flat = to_host(tensor).contiguous()
    # A view of the tensor's own memory: frames of GPU-sized outputs are hundreds of MB, and
    # every copy on this path costs the judge seconds per trial.
    data = flat.reshape(-1).view(torch.uint8).numpy().data if flat.numel() else memoryview(b"")
    return meta, data


def _torch_meta(tensor: torch.Tensor) -> dict[str, Any]:
    """A PyTorch tensor's description on the channel; ProtocolError for a dtype it cannot carry."""
    dtype = str(tensor.dtype).removeprefix("torch.")
    if dtype not in DTYPES:
        raise ProtocolError(f"dtype {dtype} cannot be sent")
    nbytes = tensor.numel() * tensor.element_size()
    return {"dtype": dtype, "shape": list(tensor.shape), "nbytes": nbytes}


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's data on the host, detached; from a GPU through pinned memory.

    Pinned: about 30 times as fast as a pageable copy.
    """
    import torch

    tensor = tensor.detach()
    if tensor.device.type == "cpu":
        return tensor
    staged = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    staged.copy_(tensor)
    return staged


def decode_tensor(meta: dict[str, Any], data: bytearray | memoryview) -> Any:
    """Rebuild a tensor (or a NumPy array, for an `array` description) from its bytes."""
    dtype_name, shape, count = _described(meta)
    if meta.get("array") is True:
        return _decode_array(dtype_name, shape, count, data)
    import torch

    dtype = getattr(torch, dtype_name)
    itemsize = torch.empty((), dtype=dtype).element_size()
    if count * itemsize != len(data):
        raise ProtocolError(f"tensor of shape {shape} and {dtype_name} does not fit {len(data)} B")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(shape)


def _described(meta: dict[str, Any]) -> tuple[str, list[int], int]:
    """A tensor description's dtype, shape and element count, checked."""
    dtype_name = meta.get("dtype")
    shape = meta.get("shape")
    if not isinstance(dtype_name, str) or dtype_name not in DTYPES or not isinstance(shape, list):
        raise ProtocolError(f"bad tensor description {meta!r}")
    count = 1
    for dim in shape:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
            raise ProtocolError(f"bad tensor shape {shape!r}")
        count *= dim
    return dtype_name, shape, count


def _decode_array(
    dtype_name: str, shape: list[int], count: int, data: bytearray | memoryview
) -> np.ndarray:
    import ml_dtypes
    import numpy as np

    dtype = np.dtype(ml_dtypes.bfloat16) if dtype_name == "bfloat16" else np.dtype(dtype_name)
    if count * dtype.itemsize != len(data):
        raise ProtocolError(f"array of shape {shape} and {dtype_name} does not fit {len(data)} B")
    return np.frombuffer(data, dtype=dtype, count=count).reshape(shape)


def write_frame(
    fd: int,
    header: dict[str, Any],
    tensors: Sequence[torch.Tensor | np.ndarray] | None = None,
    spent: dict[str, float] | None = None,
    *,
    share_device: bool = False,
) -> FramePath:
    """Write one frame: the header (with tensor descriptions added) and the tensors' bytes.

    Returns the way the bytes went. On a socket, a frame of `SHARED_MIN_BYTES` or more goes in
    memory files: one, or parts within this process's file-size limit (the module's
    docstring); inline where not even the first part can be made. `spent`, where given, gets
    the seconds of a shared frame's steps added: `make` (the memory files made, filled and
    sealed) and `send` (their descriptors passed, waits for the reader included); and, for
    any frame with a GPU tensor, `stage` (the tensors copied to the host, or to shared GPU
    memory). `share_device` (a trusted writer's, whose reader maps GPU memory,
    `FrameReader.device`): on a socket, GPU tensors of `DEVICE_SHARE_MIN_BYTES` or more stay
    on the GPU, each in shared memory whose descriptor follows the frame's bytes with an
    8-byte message of its size; where the driver cannot share, through the host as any other.
    """
    laps = spent if spent is not None else {}
    blobs: list[memoryview | _GpuBytes] = []
    metas: list[dict[str, Any]] = []
    on_device: list[tuple[int, int]] = []
    """Shared GPU memory's descriptors, and their tensors' bytes, in the frame's order."""
    socket_fd: bool | None = None
    """Whether `fd` is a socket: asked only where it matters (not of the timed calls' reports)."""
    try:
        for tensor in tensors or []:
            data: memoryview | _GpuBytes
            if not _is_gpu(tensor):
                meta, data = encode_tensor(tensor)
            else:
                staging = time.perf_counter()
                if socket_fd is None:
                    socket_fd = _is_socket(fd)
                gpu = cast("torch.Tensor", tensor)
                shared_gpu = _shared_gpu(gpu) if share_device and socket_fd else None
                if shared_gpu is not None:
                    meta, memory = shared_gpu
                    on_device.append((memory, meta["nbytes"]))
                    meta.update(nbytes=0, device=True)  # none of its bytes cross the host
                    data = memoryview(b"")
                elif socket_fd and gpu.nbytes >= STAGED_CHUNK_BYTES:
                    chunked = _GpuBytes(gpu)
                    meta, data = chunked.meta, chunked
                else:
                    meta, data = encode_tensor(gpu)
                _add(laps, "stage", staging)
            metas.append(meta)
            blobs.append(data)
        path = _write_host_bytes(fd, header, metas, blobs, laps, socket_fd)
        if on_device:
            with socket.socket(fileno=os.dup(fd)) as sock:
                started = time.perf_counter()
                while on_device:
                    memory, size = on_device.pop(0)
                    _send_part(sock, fd, _LENGTH.pack(size), memory)
                _add(laps, "send", started)
        return path
    finally:
        for memory, _ in on_device:
            os.close(memory)


def _is_gpu(tensor: object) -> bool:
    return getattr(getattr(tensor, "device", None), "type", "cpu") != "cpu"


class _GpuBytes:
    """A GPU tensor's bytes, copied to the host a chunk at a time as its memory files are filled.

    Staged whole first (`to_host`), a 12.9 GB float64 reference waited for a pinned buffer of
    its size (7 s of the 12 s a warm KernelBench softmax judgment's reference worker spent
    sending 32 GB on an H200, 2026-11-28), which PyTorch's host allocator then kept (16 GB
    held by a reference worker after one judgment). Here each thread that fills a memory file
    (`_Parts`) copies its range through a pinned chunk of its own on a stream of its own, so
    the copies from the GPU and the writes into the files overlap, and the host holds a chunk
    a thread.
    """

    def __init__(self, tensor: torch.Tensor) -> None:
        import torch

        self.meta = _torch_meta(tensor)
        flat = tensor.detach().contiguous().reshape(-1)
        self.tensor = tensor
        self.bytes = flat.view(torch.uint8)
        # The copies run on other streams: whatever made the tensor, on any stream, comes first.
        torch.cuda.synchronize(flat.device)

    def __len__(self) -> int:
        return int(self.bytes.numel())

    def host(self) -> memoryview:
        """All of the bytes on the host (a frame that goes inline after all)."""
        return encode_tensor(self.tensor)[1]

    def write(self, memory: int, position: int, low: int, high: int) -> None:
        """Bytes `low` to `high` into the file `memory` from `position`."""
        import torch

        size = min(STAGED_CHUNK_BYTES, high - low)
        try:
            chunk = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        except RuntimeError:
            chunk = torch.empty(size, dtype=torch.uint8)  # no pinned memory left: slower
        stream = torch.cuda.Stream(self.bytes.device)  # type: ignore[no-untyped-call]
        with torch.cuda.stream(stream):
            for start in range(low, high, STAGED_CHUNK_BYTES):
                end = min(high, start + STAGED_CHUNK_BYTES)
                piece = chunk[: end - start]
                piece.copy_(self.bytes[start:end])  # waits for the copy: the chunk is reused
                view = piece.numpy().data
                at = position + start - low
                while view:
                    written = os.pwrite(memory, view, at)
                    view = view[written:]
                    at += written


def _shared_gpu(tensor: torch.Tensor) -> tuple[dict[str, Any], int] | None:
    """A GPU tensor's description and shared memory's descriptor (`cuda_share.export`).

    None where it goes through the host instead: small, not CUDA, or the driver cannot share.
    """
    from gauntlet.judge import cuda_share

    meta = _torch_meta(tensor)
    if tensor.device.type != "cuda" or meta["nbytes"] < DEVICE_SHARE_MIN_BYTES:
        return None
    try:
        memory = cuda_share.export(tensor)
    except cuda_share.Unavailable as err:
        _warn_unshared(str(err))
        return None
    return meta, memory


@functools.cache
def _warn_unshared(reason: str) -> None:
    """Say once per reason why GPU tensors go through the host (on the writer's stderr)."""
    print(
        f"gauntlet: GPU memory cannot be shared here, so it goes through the host: {reason}",
        file=sys.stderr,
    )


def _write_host_bytes(
    fd: int,
    header: dict[str, Any],
    metas: list[dict[str, Any]],
    blobs: list[memoryview | _GpuBytes],
    laps: dict[str, float],
    socket_fd: bool | None,
) -> FramePath:
    """The frame's header and host bytes: inline, in a memory file, or in parts.

    A GPU tensor's bytes (`_GpuBytes`) are copied as its memory files are filled, the `make`
    step; inline, staged whole first (`stage`).
    """
    total = sum(len(b) for b in blobs)
    big = total >= SHARED_MIN_BYTES
    part_bytes = _part_bytes(total) if big and (socket_fd or _is_socket(fd)) else None
    parts = _Parts(blobs, total, part_bytes) if part_bytes is not None else None
    first = -1
    if parts is not None:
        started = time.perf_counter()
        try:
            first = parts.next()
            _add(laps, "make", started)
        except OSError as err:
            if err.errno not in _NO_FILE:
                raise
            # A file-size limit narrower than it says, descriptors all in use: the bytes
            # follow the header instead. Past the first part, the header is gone and a
            # failure is the writer's.
    shared = first >= 0
    fields: dict[str, Any] = {"tensors": metas, "shared": shared}
    if shared and part_bytes is not None and part_bytes < total:
        fields["part_bytes"] = part_bytes
    head = json.dumps({**header, **fields}, allow_nan=True).encode()
    message = _LENGTH.pack(len(head)) + head
    if not shared:
        if parts is not None:
            parts.close()
        staging = time.perf_counter()
        inline = [b.host() if isinstance(b, _GpuBytes) else b for b in blobs]
        if any(isinstance(b, _GpuBytes) for b in blobs):
            _add(laps, "stage", staging)
        _write_all(fd, message)
        for blob in inline:
            _write_all(fd, blob)
        return "inline"
    assert parts is not None and part_bytes is not None
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            started = time.perf_counter()
            _send_part(sock, fd, message, first)
            _add(laps, "send", started)
            for offset in range(part_bytes, total, part_bytes):
                size = min(part_bytes, total - offset)
                started = time.perf_counter()
                memory = parts.next()
                made = _add(laps, "make", started)
                _send_part(sock, fd, _LENGTH.pack(size), memory)
                _add(laps, "send", made)
    finally:
        parts.close()
    return "file" if part_bytes >= total else "parts"


def _add(laps: dict[str, float], step: str, since: float) -> float:
    """Add the seconds since `since` to `laps[step]`; return now."""
    now = time.perf_counter()
    laps[step] = laps.get(step, 0.0) + now - since
    return now


def _part_bytes(total: int) -> int | None:
    """The bytes of each memory file a frame of `total` bytes goes in; None: it goes inline.

    Whole pages, within this process's file-size limit; a frame of `PARALLEL_FILL_BYTES` or
    more in one part a filling thread (`_Parts`).
    """
    largest = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    unlimited = largest == resource.RLIM_INFINITY
    if total >= PARALLEL_FILL_BYTES:
        threads = min(FILL_THREADS, len(os.sched_getaffinity(0)))
        part = -(-total // max(threads, 1))
        part += -part % mmap.PAGESIZE
        if not unlimited:
            part = min(part, largest - largest % mmap.PAGESIZE)
    elif unlimited or total <= largest:
        return total
    else:
        part = largest - largest % mmap.PAGESIZE
    if part == 0 or -(-total // part) > MAX_PARTS:
        return None
    return total if part >= total else part


def _send_part(sock: socket.socket, fd: int, message: bytes, memory: int) -> None:
    """Send `message` with the descriptor of `memory`, then close it."""
    try:
        pause_s = 0.0005
        while True:
            try:
                sent = socket.send_fds(sock, [message], [memory])
                break
            except OSError as err:
                if err.errno != errno.ETOOMANYREFS:
                    raise
            # More descriptors in flight than this process may hold (counted for its user):
            # the reader maps and closes each part as it comes, so they drain once it reads.
            time.sleep(pause_s)
            pause_s = min(2 * pause_s, 0.01)
        _write_all(fd, memoryview(message)[sent:])
    finally:
        os.close(memory)


class _Parts:
    """A frame's memory files, made in order as the writer asks for each.

    A frame of `PARALLEL_FILL_BYTES` or more has up to `FILL_THREADS` of its parts made side
    by side, each filled by its own thread: one file's writes take its lock in turn (two
    threads filling one file took as long as one), while separate files fill at once. Every
    part made holds a descriptor until it is sent, so what a candidate holds this way stays
    within the bound `worker._bound_memory_files` sets (its file-size limit times its
    descriptors). Where not all of them can exist at once (a `_NO_FILE` error), those made
    before the first that failed are kept and the rest are made one at a time.
    """

    def __init__(self, blobs: list[memoryview | _GpuBytes], total: int, part_bytes: int) -> None:
        self.blobs = blobs
        self.total = total
        self.part_bytes = part_bytes
        self.offsets = list(range(0, total, part_bytes))
        self.given = 0
        """Parts handed to the writer so far."""
        self.ahead: list[int] = []
        """Parts made and not yet handed out, in order from `given`."""
        self.side_by_side = total >= PARALLEL_FILL_BYTES and len(self.offsets) > 1

    def next(self) -> int:
        """The next part's memory file (the caller closes it)."""
        if not self.ahead:
            self.ahead = self._made_side_by_side() if self.side_by_side else []
            if not self.ahead:
                self.side_by_side = False
                self.ahead = [self._make(self.given)]
        self.given += 1
        return self.ahead.pop(0)

    def close(self) -> None:
        """Close the parts made and never handed out."""
        for memory in self.ahead:
            os.close(memory)
        self.ahead = []

    def _make(self, index: int) -> int:
        offset = self.offsets[index]
        return _sealed_file(self.blobs, offset, min(self.part_bytes, self.total - offset))

    def _made_side_by_side(self) -> list[int]:
        indices = range(self.given, min(self.given + FILL_THREADS, len(self.offsets)))
        making: list[Future[int]] = []
        try:
            with ThreadPoolExecutor(len(indices), thread_name_prefix="gauntlet-fill") as pool:
                making.extend(pool.submit(self._make, index) for index in indices)
        except RuntimeError:
            # No thread to spare (a limit on the process's tasks): one part at a time instead.
            for future in making:
                if future.exception() is None:
                    os.close(future.result())
            return []
        made: list[int] = []
        failed: BaseException | None = None
        for future in making:
            error = future.exception()
            if error is None and failed is None:
                made.append(future.result())
            elif error is None:
                os.close(future.result())
            elif failed is None:
                failed = error
        if failed is not None and not (isinstance(failed, OSError) and failed.errno in _NO_FILE):
            for memory in made:
                os.close(memory)
            raise failed
        return made


def _sealed_file(blobs: list[memoryview | _GpuBytes], start: int, size: int) -> int:
    """A memory file of the blobs' bytes `start` to `start + size` (back to back), sealed."""
    memory = os.memfd_create("gauntlet-frame", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        # Sized first: past this process's file-size limit that fails (EFBIG) before any copy.
        os.ftruncate(memory, size)
        # Written, not mapped and copied: the kernel then fills each page once, where a mapping
        # is zeroed page by page before the copy (512 MiB: 0.5-0.7 s written, 1.0-1.2 s mapped
        # with MAP_POPULATE, on this project's 2-core machine under load), and it takes no
        # address space (a candidate's is capped).
        offset = 0  # where the blob starts in the blobs' bytes
        for blob in blobs:
            low, high = max(start, offset), min(start + size, offset + len(blob))
            position = low - start
            if isinstance(blob, _GpuBytes):
                if high > low:
                    blob.write(memory, position, low - offset, high - offset)
            else:
                view = blob[low - offset : max(low, high) - offset]
                while view:
                    written = os.pwrite(memory, view, position)
                    view = view[written:]
                    position += written
            offset += len(blob)
        fcntl.fcntl(memory, fcntl.F_ADD_SEALS, REQUIRED_SEALS)
    except BaseException:
        os.close(memory)
        raise
    return memory


def _is_socket(fd: int) -> bool:
    return stat.S_ISSOCK(os.fstat(fd).st_mode)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Reads frames from a file descriptor (a pipe, or a socket that may pass memory files)."""

    def __init__(self, fd: int, limit_bytes: int = MAX_FRAME_BYTES) -> None:
        self.fd = fd
        self.limit_bytes = limit_bytes
        """The largest frame's tensor bytes this reader takes: `MAX_FRAME_BYTES` wherever the
        writer may have run untrusted code; the judge sizes a trusted reference worker's from
        the host (`footprint.reference_budget_bytes`)."""
        self.device: int | None = None
        """The GPU (`cuda:device`) on which this reader maps shared GPU memory
        (`write_frame`'s `share_device`); None: a frame with any is refused. Only the judge's
        reader of its trusted reference worker has one: a descriptor of GPU memory from a
        process that ran untrusted code could name memory it should never see."""
        self.sock = socket.socket(fileno=os.dup(fd)) if _is_socket(fd) else None
        self.passed: list[int] = []
        """Descriptors received with the bytes read so far, oldest first."""
        # poll, not select: select fails on a descriptor numbered 1024 or more (FD_SETSIZE),
        # which a judge that runs many judgments in threads of one process reaches.
        self._waiting = select.poll()
        self._waiting.register(fd, select.POLLIN)

    def ready(self) -> bool:
        """Whether a frame has begun to arrive (its first bytes can be read without waiting)."""
        return bool(self._waiting.poll(0))

    def close(self) -> None:
        """Close the descriptors received and not used, and the reader's socket."""
        for fd in self.passed:
            os.close(fd)
        self.passed.clear()
        if self.sock is not None:
            self.sock.close()

    def read(self, deadline: float | None) -> tuple[dict[str, Any], list[Any]]:
        """The next frame; raises ChannelTimeout past `deadline` (a time.monotonic value).

        Its tensors come back as PyTorch tensors, or NumPy arrays where they were sent as such.
        """
        (length,) = _LENGTH.unpack(self._read_exact(_LENGTH.size, deadline))
        if length > MAX_HEADER_BYTES:
            raise ProtocolError(f"frame header of {length} bytes is over the limit")
        try:
            header = json.loads(self._read_exact(length, deadline))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ProtocolError(f"frame header is not JSON: {err}") from err
        except (RecursionError, ValueError) as err:
            # Nesting past the parser's depth, an integer past Python's digit limit.
            raise ProtocolError(f"frame header cannot be read: {str(err)[:200]}") from None
        if not isinstance(header, dict) or not isinstance(header.get("tensors"), list):
            raise ProtocolError("frame header is not an object with 'tensors'")
        metas = header.pop("tensors")
        shared = header.pop("shared", False) is True
        part_bytes = header.pop("part_bytes", None)
        sizes = []
        on_device = 0
        for meta in metas:
            if not isinstance(meta, dict) or not isinstance(meta.get("nbytes"), int):
                raise ProtocolError(f"bad tensor description {meta!r}")
            if meta["nbytes"] < 0:
                raise ProtocolError(f"bad tensor size {meta['nbytes']!r}")
            if meta.get("device") is True:
                if self.device is None or meta["nbytes"]:
                    raise ProtocolError(
                        "a tensor in GPU memory from a writer that may not share it"
                    )
                on_device += _device_bytes(meta)
            sizes.append(meta["nbytes"])
        total = sum(sizes)
        if total + on_device > self.limit_bytes:
            raise ProtocolError(
                f"frame of {total + on_device} bytes is over this reader's limit of "
                f"{self.limit_bytes}"
            )
        buffers: list[bytearray | memoryview]
        if shared:
            view = self._parts(total, part_bytes, deadline)
            offsets = [0]
            for size in sizes:
                offsets.append(offsets[-1] + size)
            buffers = [view[offsets[i] : offsets[i + 1]] for i in range(len(sizes))]
        else:
            buffers = [self._read_exact(size, deadline) for size in sizes]
        return header, [
            self._on_device(m, deadline) if m.get("device") is True else decode_tensor(m, b)
            for m, b in zip(metas, buffers, strict=True)
        ]

    def _on_device(self, meta: dict[str, Any], deadline: float | None) -> torch.Tensor:
        """A tensor in shared GPU memory, mapped on this reader's GPU (`cuda_share`).

        Its descriptor comes after the frame's host bytes, with an 8-byte message of its size.
        """
        from gauntlet.judge import cuda_share

        assert self.device is not None, "checked with the header"
        nbytes = _device_bytes(meta)
        (said,) = _LENGTH.unpack(self._read_exact(_LENGTH.size, deadline))
        if said != nbytes:
            raise ProtocolError(f"a tensor in GPU memory says {said} B, not {nbytes}")
        if not self.passed:
            raise ProtocolError("a tensor in GPU memory came without its descriptor")
        memory = self.passed.pop(0)
        try:
            import torch

            dtype = getattr(torch, meta["dtype"])
            return cuda_share.open_tensor(memory, dtype, meta["shape"], self.device)
        except cuda_share.Unavailable as err:
            raise UnmappedGpuMemory(f"a tensor in GPU memory cannot be mapped: {err}") from err
        finally:
            os.close(memory)

    def _parts(self, total: int, part_bytes: object, deadline: float | None) -> memoryview:
        """The frame's bytes from its memory files, read as they come, mapped back to back.

        Each part must be the size the header implies and sealed against any change; its
        descriptor is closed once mapped. Anything else is a ProtocolError, and what was
        mapped of the frame so far is unmapped.
        """
        if part_bytes is None:
            part_bytes = max(total, 1)
        if (
            not isinstance(part_bytes, int)
            or isinstance(part_bytes, bool)
            or part_bytes <= 0
            or (part_bytes < total and part_bytes % mmap.PAGESIZE)
        ):
            raise ProtocolError(f"a shared frame's parts of {part_bytes!r} B are not whole pages")
        count = max(1, -(-total // part_bytes))
        if count > MAX_PARTS:
            raise ProtocolError(f"a shared frame of {count} parts is over the limit")
        # One range for the whole frame, each part mapped over its place in it: the tensors,
        # which may span parts, are views of it as of one file, with no copy.
        address = _map(None, total, _NO_ACCESS, _MAP_RESERVE, -1) if total else 0
        try:
            for index in range(count):
                offset = index * part_bytes
                size = min(part_bytes, total - offset)
                if index:
                    (said,) = _LENGTH.unpack(self._read_exact(_LENGTH.size, deadline))
                    if said != size:
                        raise ProtocolError(
                            f"part {index} of a shared frame says {said} B, not {size}"
                        )
                memory = self._part_file(index, size)
                try:
                    if size:
                        _map(address + offset, size, _READ_WRITE, _MAP_PART, memory)
                finally:
                    os.close(memory)
        except BaseException:
            if total:
                _libc().munmap(address, total)
            raise
        if not total:
            return memoryview(bytearray(0))
        return _view(address, total)

    def _part_file(self, index: int, size: int) -> int:
        """The descriptor of a shared frame's part `index`, checked: sealed, of `size` B."""
        if not self.passed:
            raise ProtocolError(f"part {index} of a shared frame came without its memory file")
        memory = self.passed.pop(0)
        try:
            try:
                seals = fcntl.fcntl(memory, fcntl.F_GET_SEALS)
            except OSError as err:
                raise ProtocolError(
                    f"a shared frame's descriptor is not a memory file: {err}"
                ) from err
            if seals & REQUIRED_SEALS != REQUIRED_SEALS:
                raise ProtocolError("a shared frame's memory file is not sealed against changes")
            held = os.fstat(memory).st_size
            if held != size:
                raise ProtocolError(
                    f"a shared frame's memory file {index} holds {held} B, not {size}"
                )
        except BaseException:
            os.close(memory)
            raise
        return memory

    def _read_exact(self, size: int, deadline: float | None) -> bytearray:
        # Read straight into one buffer that the tensor then wraps: no joins, no extra copies.
        buffer = bytearray(size)
        view = memoryview(buffer)
        filled = 0
        while filled < size:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._waiting.poll(None if timeout is None else math.ceil(timeout * 1000)):
                raise ChannelTimeout("no whole frame came before the deadline")
            count = self._receive(view[filled:])
            if not count:
                raise ChannelClosed()
            filled += count
        return buffer

    def _receive(self, into: memoryview) -> int:
        """Read what is there into `into`; keep the descriptors that came with it."""
        if self.sock is None:
            return os.readv(self.fd, [into])
        # Close-on-exec from their arrival: a worker another thread starts meanwhile must never
        # inherit a frame (a reference's, in a candidate's process).
        count, ancillary, _, _ = self.sock.recvmsg_into(
            [into], socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC
        )
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
                self.passed.extend(fds)
        if len(self.passed) > _MAX_FDS:
            raise ProtocolError("too many descriptors passed on the channel")
        return count


#: Memory files a reader holds at most before their frames are read (one per frame).
_MAX_FDS = 16


def _device_bytes(meta: dict[str, Any]) -> int:
    """The bytes of a tensor in shared GPU memory, from its checked dtype and shape."""
    import torch

    dtype, _, count = _described(meta)
    if count == 0:
        raise ProtocolError("an empty tensor in GPU memory")
    return int(count * getattr(torch, dtype).itemsize)


def _map(address: int | None, size: int, protection: int, flags: int, fd: int) -> int:
    """Map `size` bytes of `fd` from its start (or anonymous memory, fd -1) with libc's `mmap`.

    Mapped with libc's, not Python's: `mmap.mmap` keeps a duplicate of the file's descriptor
    for as long as the mapping lives (before Python 3.13's `trackfd`), and the judge keeps
    reference frames across judgments (`_REFERENCES`), so it held one descriptor per frame
    kept: 80 after four judgments of KernelBench level 1 tasks, past 1024 in a run of levels
    1-2 (a soft descriptor limit of 1024 is common).
    """
    mapped = _libc().mmap(address, size, protection, flags, fd, 0)
    if mapped is None or mapped == _MAP_FAILED:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot map {size} B of a shared frame: {os.strerror(code)}")
    return int(mapped)


def _view(address: int, size: int) -> memoryview:
    """A view of the `size` mapped bytes at `address`, which unmaps them when it goes.

    The parts are mapped private (copy-on-write): the tensors over them may be written like
    any other, and nothing can change the files under them (sealed).
    """

    # A class of its own, not `c_char * size`: ctypes keeps every array type made that way,
    # and a long run sees as many frame sizes as it has configs.
    class _Mapping(ctypes.Array[ctypes.c_char]):
        _type_ = ctypes.c_char
        _length_ = size

    mapping = _Mapping.from_address(address)
    # Runs once nothing refers to the mapping: every view and tensor over it holds it. Not at
    # exit, where a daemon thread could still read a tensor over it.
    weakref.finalize(mapping, _libc().munmap, address, size).atexit = False
    return memoryview(mapping).cast("B")


_MAP_FAILED = ctypes.c_void_p(-1).value
_READ_WRITE = mmap.PROT_READ | mmap.PROT_WRITE
#: Linux's PROT_NONE, MAP_FIXED and MAP_NORESERVE (x86-64 and arm64), which Python's mmap
#: module lacks.
_NO_ACCESS = 0
_MAP_FIXED = 0x10
_MAP_NORESERVE = 0x4000
#: A frame's range: no access until its parts are mapped over it, no memory reserved.
_MAP_RESERVE = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
#: A part, over its place in the frame's range.
_MAP_PART = mmap.MAP_PRIVATE | _MAP_FIXED


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    )
    libc.munmap.restype = ctypes.c_int
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    return libc
