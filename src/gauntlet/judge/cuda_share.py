"""GPU memory passed between the judge's trusted processes as a file descriptor.

A streamed config's float64 references (12.9 GB a trial for KernelBench's softmax at 4096 x
393216) went from the reference worker's GPU to its host through pinned memory, into memory
files, and back onto the same GPU in the judge: 17.6 of the 18.4 s the judge waited for them in
a 47 s warm judgment on an H200 (2026-11-28), the worker's computing 0.8 s. Here the worker
copies a reference into memory made with CUDA's virtual memory management and exportable as a
POSIX file descriptor (`cuMemCreate`, `cuMemExportToShareableHandle`); the descriptor travels on
the worker's channel like a memory file, and the judge maps the same memory into its own address
space (`cuMemImportFromShareableHandle`, `cuMemMap`) and compares in place.

A descriptor, not a CUDA IPC handle (`cudaIpcGetMemHandle`, what `torch.multiprocessing`
passes): a descriptor is held only by the processes it is passed to, while an IPC handle is
bytes that any process on the GPU that learns them may open. Only the judge's reader of the
trusted reference worker accepts one (`channel.FrameReader.device`); a candidate never gets or
sends one. The exporter keeps nothing: once its descriptor is passed, the memory lives as long
as the judge's mapping, and goes back to the GPU when the tensor over it is freed.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_POSIX_FILE_DESCRIPTOR = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED: device memory, never migrated
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_MINIMUM = 0  # CU_MEM_ALLOC_GRANULARITY_MINIMUM


class Unavailable(Exception):
    """No shareable GPU memory here: no driver, no support, or none of the device's left."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _Properties(ctypes.Structure):
    """`CUmemAllocationProp`."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _Access(ctypes.Structure):
    """`CUmemAccessDesc`."""

    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


@functools.cache
def _driver() -> ctypes.CDLL:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        raise Unavailable(f"no CUDA driver library: {err}") from err
    _check(driver, driver.cuInit(0), "cuInit")
    return driver


def _check(driver: ctypes.CDLL, result: int, call: str) -> None:
    if result == 0:
        return
    text = ctypes.c_char_p()
    driver.cuGetErrorString(result, ctypes.byref(text))
    said = text.value.decode(errors="replace") if text.value else "unknown error"
    raise Unavailable(f"{call} failed: {said} (CUresult {result})")


_CONTEXTS: dict[int, ctypes.c_void_p] = {}
_CONTEXTS_LOCK = threading.Lock()


@contextmanager
def _current(ordinal: int) -> Iterator[ctypes.CDLL]:
    """The device's primary context (PyTorch's) current on this thread for the calls."""
    driver = _driver()
    with _CONTEXTS_LOCK:
        context = _CONTEXTS.get(ordinal)
        if context is None:
            device = ctypes.c_int()
            _check(driver, driver.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
            context = ctypes.c_void_p()
            retained = driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
            _check(driver, retained, "cuDevicePrimaryCtxRetain")
            _CONTEXTS[ordinal] = context
    _check(driver, driver.cuCtxPushCurrent_v2(context), "cuCtxPushCurrent")
    try:
        yield driver
    finally:
        driver.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def _properties(ordinal: int) -> _Properties:
    return _Properties(
        type=_PINNED,
        requestedHandleTypes=_POSIX_FILE_DESCRIPTOR,
        location=_Location(type=_ON_DEVICE, id=ordinal),
    )


def _rounded(driver: ctypes.CDLL, ordinal: int, nbytes: int) -> int:
    """`nbytes` rounded up to the device's granularity (2 MiB on an H100)."""
    grain = ctypes.c_size_t()
    found = driver.cuMemGetAllocationGranularity(
        ctypes.byref(grain), ctypes.byref(_properties(ordinal)), _MINIMUM
    )
    _check(driver, found, "cuMemGetAllocationGranularity")
    step = max(grain.value, 1)
    return max(step, -(-nbytes // step) * step)


class _Mapping:
    """Shared memory mapped into this process, readable and writable from `ordinal`."""

    def __init__(self, driver: ctypes.CDLL, handle: int, size: int, ordinal: int) -> None:
        self.size, self.ordinal = size, ordinal
        address = ctypes.c_uint64()
        reserved = driver.cuMemAddressReserve(
            ctypes.byref(address),
            ctypes.c_size_t(size),
            ctypes.c_size_t(0),
            ctypes.c_uint64(0),
            ctypes.c_uint64(0),
        )
        _check(driver, reserved, "cuMemAddressReserve")
        self.address = address.value
        try:
            mapped = driver.cuMemMap(
                ctypes.c_uint64(self.address),
                ctypes.c_size_t(size),
                ctypes.c_size_t(0),
                ctypes.c_uint64(handle),
                ctypes.c_uint64(0),
            )
            _check(driver, mapped, "cuMemMap")
            access = _Access(location=_Location(type=_ON_DEVICE, id=ordinal), flags=_READ_WRITE)
            allowed = driver.cuMemSetAccess(
                ctypes.c_uint64(self.address),
                ctypes.c_size_t(size),
                ctypes.byref(access),
                ctypes.c_size_t(1),
            )
            if allowed:
                driver.cuMemUnmap(ctypes.c_uint64(self.address), ctypes.c_size_t(size))
            _check(driver, allowed, "cuMemSetAccess")
        except BaseException:
            driver.cuMemAddressFree(ctypes.c_uint64(self.address), ctypes.c_size_t(size))
            raise

    def close(self) -> None:
        with _current(self.ordinal) as driver:
            # Nothing of this process's may still be reading it (a kernel queued on a stream).
            _check(driver, driver.cuCtxSynchronize(), "cuCtxSynchronize")
            driver.cuMemUnmap(ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
            driver.cuMemAddressFree(ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))


def export(tensor: torch.Tensor) -> int:
    """A descriptor of new GPU memory holding a copy of `tensor`'s bytes (C order).

    The caller passes it on and closes it; the memory is freed once every process that holds
    it (the descriptor, an import's mapping) let go.

    Raises:
        Unavailable: The driver cannot make or export such memory (or none is left): the
            caller sends the tensor through the host instead.
    """
    import torch

    source = tensor.detach().contiguous()
    nbytes = source.numel() * source.element_size()
    ordinal = source.device.index if source.device.index is not None else 0
    # The copy below is the driver's, on no stream of PyTorch's: its work comes first.
    torch.cuda.synchronize(source.device)
    with _current(ordinal) as driver:
        size = _rounded(driver, ordinal, nbytes)
        handle = ctypes.c_uint64()
        made = driver.cuMemCreate(
            ctypes.byref(handle),
            ctypes.c_size_t(size),
            ctypes.byref(_properties(ordinal)),
            ctypes.c_uint64(0),
        )
        _check(driver, made, "cuMemCreate")
        try:
            mapping = _Mapping(driver, handle.value, size, ordinal)
            try:
                copied = driver.cuMemcpyDtoD_v2(
                    ctypes.c_uint64(mapping.address),
                    ctypes.c_uint64(source.data_ptr()),
                    ctypes.c_size_t(nbytes),
                )
                _check(driver, copied, "cuMemcpyDtoD")
                _check(driver, driver.cuCtxSynchronize(), "cuCtxSynchronize")
            finally:
                driver.cuMemUnmap(ctypes.c_uint64(mapping.address), ctypes.c_size_t(size))
                driver.cuMemAddressFree(ctypes.c_uint64(mapping.address), ctypes.c_size_t(size))
            fd = ctypes.c_int(-1)
            exported = driver.cuMemExportToShareableHandle(
                ctypes.byref(fd),
                ctypes.c_uint64(handle.value),
                _POSIX_FILE_DESCRIPTOR,
                ctypes.c_uint64(0),
            )
            _check(driver, exported, "cuMemExportToShareableHandle")
        finally:
            driver.cuMemRelease(ctypes.c_uint64(handle.value))
    return fd.value


class _Shared:
    """A shared GPU memory's mapping, seen as bytes (`__cuda_array_interface__`).

    PyTorch holds this object for as long as a tensor made from it lives, and lets go of it
    when the tensor is freed: the mapping is undone then, and the memory goes back to the GPU
    (the exporter kept nothing of it).
    """

    def __init__(self, mapping: _Mapping, nbytes: int) -> None:
        self.mapping = mapping
        self.__cuda_array_interface__: dict[str, Any] = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (mapping.address, False),
            "version": 3,
            "strides": None,
            # Written and synchronized by the exporter before its descriptor was passed.
            "stream": None,
        }

    def __del__(self) -> None:
        try:
            self.mapping.close()
        except Unavailable:
            pass  # the driver is gone at the process's exit, and the mapping with it


def open_tensor(fd: int, dtype: torch.dtype, shape: list[int], ordinal: int) -> torch.Tensor:
    """The tensor in shared GPU memory `fd` (from `export`), on this process's `cuda:ordinal`.

    `fd` stays the caller's to close. Raises Unavailable where the memory cannot be mapped
    (not such a descriptor, smaller than the shape says).
    """
    import torch

    count = 1
    for dim in shape:
        count *= dim
    nbytes = count * dtype.itemsize
    if nbytes == 0:
        raise Unavailable("an empty tensor is never shared")
    with _current(ordinal) as driver:
        size = _rounded(driver, ordinal, nbytes)
        handle = ctypes.c_uint64()
        imported = driver.cuMemImportFromShareableHandle(
            ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FILE_DESCRIPTOR
        )
        _check(driver, imported, "cuMemImportFromShareableHandle")
        try:
            mapping = _Mapping(driver, handle.value, size, ordinal)
        finally:
            # The mapping holds the memory from here.
            driver.cuMemRelease(ctypes.c_uint64(handle.value))
    raw = torch.as_tensor(_Shared(mapping, nbytes), device=f"cuda:{ordinal}")
    if raw.data_ptr() != mapping.address:
        raise Unavailable("PyTorch copied a shared tensor instead of viewing it")
    return raw.view(dtype).reshape(shape)
