"""A reference worker kept across judgments: what it resets between them.

A `Judge` keeps one reference worker per device (`spares.SparePool`), so that CUDA is
initialised and PyTorch imported once, not in every judgment. That worker runs only trusted
task code (reference, input generator, baseline, `[check]`), never a submission, so it may
serve many judgments; but task code can change the process for whatever runs after it, and a
later judgment must find the process as a fresh worker would, or one task's code could change
another's verdict (a baseline's error, which bounds the candidate's, depends on TF32 and the
default dtype; a module that counts its calls gives other answers the second time).

`ProcessState` records, before the worker's first judgment, what task code can change and the
worker can put back, and `restore` puts it back after each judgment:

- the task's modules: the `_gauntlet_*` modules the worker loads the task's files as are
  loaded afresh for every request anyway; any other module loaded from the task's folder is
  dropped, so module-level state (a cache, a counter) starts again;
- PyTorch's process-wide settings (`_torch_settings`: TF32, reduced-precision reductions, the
  default dtype and device, deterministic algorithms, cuDNN's flags, grad mode, threads), the
  environment, `sys.path` and the warning filters;
- the random generators as a fresh worker has them: PyTorch's seeded 0 (CPU and GPU), Python's
  and NumPy's from the system's entropy;
- memory: the task's objects collected, TorchDynamo's compiled code dropped, the CUDA
  allocator's cached blocks returned to the device (`torch.cuda.empty_cache`), so the worker
  holds only its CUDA context between judgments. It reports what it still holds (`Idle`), and
  the judge lets go of one that keeps growing.

Not reset: state inside libraries the task imports (NumPy's, einops') beyond the above,
threads task code started, extension libraries it loaded (a process cannot unload them; they
are keyed by content, so a later task never gets another's), and files it wrote into the
worker's folder.
"""

from __future__ import annotations

import contextlib
import gc
import linecache
import os
import random
import resource
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gauntlet.judge import protocol

Setting = tuple[Callable[[], Any], Callable[[Any], None]]


def _attribute(owner: object, name: str) -> Setting:
    return (lambda: getattr(owner, name), lambda value: setattr(owner, name, value))


def _torch_settings() -> list[Setting]:
    """PyTorch's process-wide settings task code may change: (read, write) each, in order.

    The matmul precision comes before the TF32 flags it also sets, so that the flags are put
    back last, as they were read.
    """
    import torch

    backends = torch.backends

    def deterministic() -> tuple[bool, bool]:
        return (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        )

    def set_deterministic(value: tuple[bool, bool]) -> None:
        torch.use_deterministic_algorithms(value[0], warn_only=value[1])

    def set_default_device(device: torch.device) -> None:
        # None takes the default-device mode off again (the state of a fresh process).
        torch.set_default_device(None if device == torch.device("cpu") else device)

    return [
        (torch.get_default_dtype, torch.set_default_dtype),
        (torch.get_default_device, set_default_device),
        (torch.is_grad_enabled, torch._C._set_grad_enabled),
        (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        (torch.get_num_threads, torch.set_num_threads),
        (deterministic, set_deterministic),
        (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        _attribute(backends.cuda.matmul, "allow_tf32"),
        _attribute(backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"),
        _attribute(backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
        _attribute(backends.cudnn, "allow_tf32"),
        _attribute(backends.cudnn, "benchmark"),
        _attribute(backends.cudnn, "deterministic"),
        _attribute(backends.cudnn, "enabled"),
    ]


class ProcessState:
    """What task code may change for the whole process, as it was before the first judgment."""

    def __init__(self) -> None:
        self.environ = dict(os.environ)
        self.path = list(sys.path)
        self.modules = frozenset(sys.modules)
        self.warnings = list(warnings.filters)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.settings = [(read, write, read()) for read, write in _torch_settings()]

    def restore(self, task_root: Path) -> protocol.Idle:
        """Put the process back as it was after a judgment of the task in `task_root`."""
        import torch

        started = time.perf_counter()
        root = task_root.resolve()
        for name in [n for n in sys.modules if n not in self.modules]:
            if name.startswith("_gauntlet_") or _loaded_from(sys.modules[name], root):
                del sys.modules[name]
        linecache.clearcache()
        if "torch._dynamo" in sys.modules:
            torch._dynamo.reset()
        os.environ.clear()
        os.environ.update(self.environ)
        sys.path[:] = self.path
        warnings.filters[:] = self.warnings  # type: ignore[index]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for read, write, value in self.settings:
                if read() != value:
                    write(value)
        gc.collect()
        torch.manual_seed(0)  # as `worker._import_trusted` left it
        random.seed()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        device_bytes = 0
        if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            torch.cuda.synchronize()
            torch.cuda.set_stream(torch.cuda.default_stream())
            torch.cuda.empty_cache()
            device_bytes = int(torch.cuda.memory_reserved())
        return protocol.Idle(
            event="idle",
            host_bytes=_resident_bytes(),
            device_bytes=device_bytes,
            reset_s=time.perf_counter() - started,
        )


def _loaded_from(module: object, root: Path) -> bool:
    """Whether a module was loaded from a file under `root`."""
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and Path(file).resolve().is_relative_to(root)


def _resident_bytes() -> int:
    """This process's resident memory (`/proc/self/statm`)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def memory_limited(limit_bytes: int, mapped_bytes: int) -> Iterator[None]:
    """The task's memory limit for one judgment, on top of what is mapped already (0: none).

    Soft limits only (the worker runs trusted code), so they can be lifted again for the next
    judgment, whose task has its own limit.
    """
    if not limit_bytes:
        yield
        return
    kinds = (resource.RLIMIT_AS, resource.RLIMIT_FSIZE)
    saved = {kind: resource.getrlimit(kind) for kind in kinds}
    limit = limit_bytes + mapped_bytes
    for kind, (_, hard) in saved.items():
        soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(kind, (soft, hard))
    try:
        yield
    finally:
        for kind, limits in saved.items():
            resource.setrlimit(kind, limits)
