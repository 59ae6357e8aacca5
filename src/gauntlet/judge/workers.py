"""One way to start and talk to the judge's worker processes: `WorkerHandle`.

Every worker process of the judge starts here: the reference and candidate workers
(`worker.py`), the CUDA build process (`cuda_build.py`) and the pooled simulator workers
(`asm_backend.py`, which hold NumPy arrays on the channel rather than tensors).
Each is `python -m <module> COMMAND_FD RESULT_FD` in a session of its own (`process.Child`:
output capped, the whole group killed at the end), with a scrubbed environment (`worker_env`),
an optional address-space limit and, for a process that runs untrusted code, inside `confine`
(`confinement`: a read-only view of what it needs, a private writable folder, its own PID
namespace, no network). Commands go down a pipe; results come back on a Unix socket (sealed
memory files for large frames). Frames are JSON headers plus raw tensor bytes (`channel.py`),
never pickle; what each role sends is a typed model (`protocol.py`, `cuda_build._Report`).
The simulator workers run trusted code only, so they are not confined.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import resource
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gauntlet import confine, devices, process, settings
from gauntlet.judge.channel import FrameReader, write_frame
from gauntlet.zygote import Zygote, ZygoteError

logger = logging.getLogger(__name__)


def shared_triton_cache() -> Path:
    """The Triton cache that trusted workers write and candidates only read."""
    return Path(os.environ.get("TRITON_CACHE_DIR") or settings.CACHE_DIR / "triton")


def shared_caches() -> list[Path]:
    """The build caches a GPU candidate reads: prebuilt CUDA units and trusted Triton kernels.

    Created here if missing: a confinement binds only folders that exist when the worker
    starts, so a spare started before a machine's first build would never see the units that
    build writes (its import of them failed as the submission's crash).
    """
    caches = [settings.CACHE_DIR / "cuda", shared_triton_cache()]
    for cache in caches:
        cache.mkdir(parents=True, exist_ok=True)
    return caches


def private_triton_cache(home: Path) -> Path:
    """A candidate worker's own Triton cache, in its writable folder `home`."""
    return home / "triton-cache"


def worker_env(tmp: Path, device: str = "cpu", *, private_cache: bool = False) -> dict[str, str]:
    """The scrubbed environment of a worker: a short allowlist, private HOME and TMPDIR.

    A worker for `cuda:N` sees only GPU N (as its device 0). `private_cache` (a candidate's):
    Triton writes to the worker's own folder and reads the trusted shared cache first
    (`triton_cache.py`: a shared cache it could write would let it plant compiled kernels that a
    later judgment, of the baseline too, would load).
    """
    env = {k: os.environ[k] for k in settings.WORKER_ENV_KEEP if k in os.environ}
    if device.startswith(("cuda:", "rocm:")):
        index = devices.index_of(device)
        visible = env.get("CUDA_VISIBLE_DEVICES")
        env["CUDA_VISIBLE_DEVICES"] = visible.split(",")[index] if visible else str(index)
    env.update(
        HOME=str(tmp),
        TMPDIR=str(tmp),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
    )
    # Triton's compiled kernels are keyed by a hash of their source and options, so sharing
    # the cache between candidates on a GPU makes warm builds without letting one submission
    # reach another's kernels. The interpreter (CPU) compiles nothing.
    if device == "cpu":
        env["TRITON_CACHE_DIR"] = str(private_triton_cache(tmp))
    elif private_cache:
        env["TRITON_CACHE_DIR"] = str(private_triton_cache(tmp))
        env["TRITON_CACHE_MANAGER"] = "gauntlet.judge.triton_cache:TrustedFirstCache"
        env[settings.TRITON_TRUSTED_CACHE_ENV] = str(shared_triton_cache())
    else:
        env["TRITON_CACHE_DIR"] = str(shared_triton_cache())
    return env


def import_paths(hidden: Path | None = None) -> list[Path]:
    """Folders on this interpreter's import path that a confined worker may see (read-only).

    A folder that holds `hidden` (a repository root put on PYTHONPATH holds the task suite,
    with its experts and hidden configs) is left out, as are the system folders that
    `confine` shows anyway.
    """
    secret = hidden.resolve() if hidden is not None else None
    system = [Path(d) for d in confine.SYSTEM_DIRS]
    found: list[Path] = []
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        shown = path.is_dir() and (secret is None or not secret.is_relative_to(path))
        if shown and path not in found and not any(path.is_relative_to(d) for d in system):
            found.append(path)
    return found


#: What a confined worker's `/tmp`, `/dev/shm` and System V shared memory may each hold: memory
#: that no address-space limit counts (`confine.Confinement.shared_memory_bytes`). The worker's
#: TMPDIR is its own folder, so this is room for what writes to `/tmp` or `/dev/shm` by name.
SHARED_MEMORY_BYTES = 256 << 20
#: Seconds a hung worker is given to write its threads' stacks before it is killed.
STACKS_WAIT_S = 1.0


def confinement(
    readonly: Sequence[Path],
    writable: Sequence[Path],
    *,
    hidden: Path | None = None,
    gpu: bool = False,
) -> confine.Confinement | None:
    """How a worker that runs untrusted code is confined, or None where this machine cannot.

    It sees the interpreter, the package and the import path read-only (never a folder holding
    `hidden`), `readonly` and `writable` as given, the GPU's device nodes and `/sys` when
    `gpu`, and no network; its shared memory is bounded (`SHARED_MEMORY_BYTES`).
    """
    if confine.available() is not None:
        return None
    shown = [*confine.python_paths(), *import_paths(hidden), *readonly]
    return confine.Confinement(
        readonly=tuple(dict.fromkeys(shown)),
        writable=tuple(writable),
        devices=confine.NVIDIA_DEVICES if gpu else (),
        sysfs=gpu,
        shared_memory_bytes=SHARED_MEMORY_BYTES,
    )


class WorkerHandle:
    """A started worker process, its command pipe and its result channel."""

    def __init__(
        self,
        module: str,
        *,
        env: dict[str, str],
        cwd: Path,
        memory_limit_bytes: int = 0,
        confined: confine.Confinement | None = None,
        args: Sequence[str] = (),
        die_with_parent: bool = False,
        zygote: Zygote | None = None,
    ) -> None:
        """Start `python -m module COMMAND_FD RESULT_FD [ARGS...]`.

        `die_with_parent`: killed when the thread that starts it ends (`process.Child`), for a
        worker of one judgment, which that thread finishes; never for a pooled worker that
        other threads go on using. `zygote`: forked from it instead (`gauntlet.zygote`), which
        has imported what the module needs; it dies with the zygote, which dies with us.

        Raises:
            OSError: The process could not be started.
        """
        request_r, request_w = os.pipe()
        # A socket, so that large frames can pass sealed memory files (channel.py).
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        result_r, result_w = ours.detach(), theirs.detach()
        argv = [sys.executable, "-m", module, str(request_r), str(result_w), *args]
        try:
            self.child = process.Child(
                argv,
                env=env,
                cwd=cwd,
                pass_fds=(request_r, result_w),
                die_with_parent=die_with_parent,
                rlimits={resource.RLIMIT_AS: memory_limit_bytes} if memory_limit_bytes else None,
                zygote=zygote,
                confinement=confined,
            )
        except OSError:
            for fd in (request_w, result_r):
                os.close(fd)
            raise
        finally:
            os.close(request_r)
            os.close(result_w)
        self.confined = confined is not None
        self.home = cwd
        """The worker's own folder (its HOME and TMPDIR)."""
        self.command_fd = request_w
        self.result_fd = result_r
        self.reader = FrameReader(result_r)
        self._finished: process.Finished | None = None

    def send(self, message: BaseModel | dict[str, Any]) -> None:
        """A frame on the command pipe; a worker that already closed it is not an error here."""
        header = message.model_dump() if isinstance(message, BaseModel) else message
        try:
            write_frame(self.command_fd, header)
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("a worker closed its command pipe before reading")

    def read(self, deadline: float | None) -> tuple[dict[str, Any], list[Any]]:
        """The next frame on the result channel: its header and its tensors or arrays."""
        return self.reader.read(deadline)

    def dump_stacks(self, wait_s: float = STACKS_WAIT_S) -> None:
        """Ask a hung worker to write every thread's Python stack to its stderr, then wait.

        A Python worker registers `faulthandler` for SIGUSR1 before it runs anything else
        (`worker.main`; the confinement's launcher passes the signal on), so the error of a
        worker killed for a timeout says where it hung, not only that it did.
        """
        if self._finished is not None or self.child.poll() is not None:
            return
        try:
            os.kill(self.child.pid, signal.SIGUSR1)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(wait_s)

    def finish(self, grace_s: float = 0.0) -> process.Finished:
        """Reap the worker, killing its whole group (and namespace) after `grace_s` seconds."""
        if self._finished is None:
            self._finished = self.child.wait(timeout_s=grace_s)
        return self._finished

    def close(self) -> None:
        """Reap the worker and close both ends of the channel."""
        self.finish()
        self.reader.close()
        for fd in (self.result_fd, self.command_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def python_worker(
    tmp: Path,
    device: str,
    confined: confine.Confinement | None,
    *,
    ahead: bool = False,
    spare: bool = False,
) -> WorkerHandle:
    """Start a judge worker (`gauntlet.judge.worker`) for `device`, waiting for its request.

    It imports PyTorch and Triton first, and sets its memory limit from the request. `spare`
    (started before its judgment): it imports at the lowest priority and is back at its own
    once its request comes (`priority.py`). `ahead` (a candidate spare, or a cold candidate whose
    judgment runs no reference worker): it also pays for its watch's first entry before it
    reports ready (`worker._import_trusted`). It dies with the thread
    that starts it (a judgment's, or the spare pool's filler, which outlives its spares): a
    killed orchestrator takes its workers with it, and through the confinement's init whatever
    a submission started, even a submission busy in a loop that never reads its pipes again.

    Raises:
        OSError: The process could not be started.
    """
    kind = device.split(":")[0]
    start = functools.partial(
        WorkerHandle,
        "gauntlet.judge.worker",
        env=worker_env(tmp, device, private_cache=confined is not None),
        cwd=tmp,
        confined=confined,
        args=(kind, *(["idle"] if spare else []), *(["ahead"] if ahead else [])),
        die_with_parent=True,
    )
    zygote = worker_zygote(kind) if _zygote_wanted() else None
    if zygote is None:
        return start()
    try:
        return start(zygote=zygote)
    except ZygoteError:
        if zygote.alive():
            raise
        # It died since it was looked up (a run's Ctrl-C, the OOM killer): once more, anew.
        return start(zygote=worker_zygote(kind))


def _zygote_wanted() -> bool:
    return settings.ZYGOTE and sys.platform == "linux"


def warm_zygote(device: str) -> None:
    """Start this process's zygote for `device`'s kind in the background, unless it runs.

    A judgment asks for it as its build starts: a CUDA build (seconds to a minute) then hides
    the zygote's imports (7.2 s on a fresh H200 host), which a cold judgment waited for after
    the build.
    """
    kind = device.split(":")[0]
    running = _zygotes.get(_zygote_key(kind))
    if not _zygote_wanted() or (running is not None and running.alive()):
        return
    threading.Thread(
        target=worker_zygote, args=(kind,), name="gauntlet-zygote-start", daemon=True
    ).start()


_zygotes: dict[tuple[str, ...], Zygote] = {}
#: Variables a worker's own environment sets, or that nothing reads at import: a zygote
#: started under other values of these serves as well (tests change PATH and HOME).
_PER_WORKER = frozenset({"HOME", "TMPDIR", "TRITON_CACHE_DIR", "CUDA_VISIBLE_DEVICES", "PATH"})
_zygotes_lock = threading.Lock()
#: Keys of zygotes that could not start: not tried again by this process.
_zygotes_failed: set[tuple[str, ...]] = set()


def _zygote_key(kind: str) -> tuple[str, ...]:
    """What a zygote for `kind` is kept under: the kind and the environment its imports read."""
    kept = [k for k in settings.WORKER_ENV_KEEP if k in os.environ and k not in _PER_WORKER]
    return (kind, *(f"{k}={os.environ[k]}" for k in kept))


def worker_zygote(kind: str) -> Zygote | None:
    """This process's zygote of judge workers for devices of `kind` (`cpu`, `cuda`, `rocm`).

    Started at first use, and again if it died (a run's Ctrl-C kills it with every child) or
    the environment a worker keeps has changed since; it ends with this process. Its preload is
    `worker.preload`: what every worker imports before its request, and TorchDynamo. None where
    it could not start (logged once, with why): each worker then starts as a program of its
    own, which imports for itself, and says for itself what fails in its imports.
    """
    key = _zygote_key(kind)
    with _zygotes_lock:
        found = _zygotes.get(key)
        if found is not None and found.alive():
            return found
        if key in _zygotes_failed:
            return None
        home = Path(tempfile.mkdtemp(prefix=f"gauntlet-zygote-{kind}-"))
        preload = ("gauntlet.judge.worker:preload", kind)
        try:
            started = Zygote(preload, worker_env(home, kind), home, ZYGOTE_START_S)
        except ZygoteError as err:
            _zygotes_failed.add(key)
            logger.warning("judge workers start without a zygote: %s", err)
            return None
        _zygotes[key] = started
        if found is not None:
            ended = found.close()
            logger.warning(
                "the judge workers' zygote for %s ended (exit %s), another started: %s",
                kind,
                ended.returncode,
                ended.stderr[-2000:].strip() or "it wrote nothing",
            )
        return started


#: Seconds a workers' zygote may take to import (a cold disk cache, a busy host).
ZYGOTE_START_S = 300.0


@atexit.register
def _close_zygotes() -> None:
    with _zygotes_lock:
        for started in _zygotes.values():
            started.close()
        _zygotes.clear()
