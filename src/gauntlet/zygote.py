"""A Python that has imported a worker's libraries once and forks `python -m` commands from it.

A judge worker imports PyTorch, Triton and TorchDynamo before it reads its request: about 5 s
of CPU, paid by every fresh process. A zygote pays it once per judge process (and device
kind); each worker is then a `fork` of it, ready in milliseconds, and still a process of its
own per candidate, never a reused one.

`python -m gauntlet.zygote CONTROL_FD [MODULE:FUNCTION [ARG...]]` imports MODULE, calls
FUNCTION(*ARGS) (the preload), says `ready` on CONTROL_FD (a `SOCK_SEQPACKET` socket) and then
serves `Spawn` requests, one message each with the child's descriptors attached:

1. It forks. The child (the *launcher*) asks for SIGKILL when the zygote dies, makes a session
   of its own, puts the descriptors it was given at the numbers the caller chose (stdin,
   stdout, stderr and the passed ones, as `exec` would keep them) and closes every other one
   (the zygote's control socket and other children's status pipes among them), and sets its
   resource limits.
2. Unconfined, the launcher becomes the command. Confined, it runs `confine.launch`: the same
   namespaces, root and PID 1 as the `confine` launcher, with PID 2 dropping every capability
   by hand (`confine.drop_capabilities`: no `execve` drops them here) before it becomes the
   command.
3. Becoming the command: the environment replaced by the request's (and what the interpreter
   derived from the old one at import reset: `tempfile`'s folder), `sys.path[0]` the working
   folder as `-m` makes it, Python's own signal dispositions, then `runpy.run_module(MODULE,
   run_name="__main__")`; its exit code (or a traceback and 1) ends the process through the
   exit handlers, as the interpreter's end would.

The zygote answers each spawn with the launcher's pid. When a launcher ends, the zygote kills
what is left in its process group (as `process.Child.wait` does after a child ends), reaps it
and writes its wait status to the status pipe that came with the request, then closes it: the
caller's `Forked` reads it there. The zygote runs only trusted code (the preload) and exits when
its control socket closes, its owner's process ended included; its children die with it.

Only the judge's own workers come from it (`judge/workers.py`): a preload must not start
threads that hold state a fork would cut (it checks that it has one thread) nor initialise
CUDA (it checks that it has not).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import importlib
import itertools
import os
import resource
import runpy
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from pydantic import BaseModel, ConfigDict

from gauntlet import confine, process

#: Bytes of the largest control message (a request: environment, confinement, arguments).
MESSAGE_BYTES = 1 << 20
#: Descriptors one request may carry: stdin, stdout, stderr, the status pipe, passed ones.
MAX_FDS = 16
#: Exit code of a launcher that could not set itself up (as the `confine` launcher's).
SETUP_FAILED = confine.SETUP_FAILED
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_libc = ctypes.CDLL(None, use_errno=True)


class Spawn(BaseModel):
    """A request: run `python -m module *args` as a fork of the zygote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    module: str
    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    targets: tuple[int, ...]
    """The number in the child of each attached descriptor after the first, in order. The first
    is the status pipe, which the zygote keeps and the child never sees."""
    rlimits: dict[int, int] = {}
    confinement: str | None = None
    """`confine.Confinement.to_json()`, or None to run unconfined."""


class Spawned(BaseModel):
    """The answer: the launcher's pid, or why nothing started."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int = 0
    error: str = ""


# ---- the zygote's side ----


def _send(sock: socket.socket, message: BaseModel) -> None:
    sock.send(message.model_dump_json().encode())


def _arrange(fds: Sequence[int], targets: Sequence[int]) -> None:
    """Descriptor `fds[i]` at number `targets[i]`, every other descriptor closed.

    Inheritable, as `exec` keeps passed descriptors.
    """
    # Out of the way first, above every number involved, so that no dup2 overwrites a source.
    floor = max([*fds, *targets, 2]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor) for fd in fds]
    for fd, target in zip(moved, targets, strict=True):
        os.dup2(fd, target)
    edges = [-1, *sorted(set(targets)), os.sysconf("SC_OPEN_MAX")]
    for low, high in itertools.pairwise(edges):
        if low + 1 < high:  # closerange(n, n) closes every descriptor from n on (CPython 3.11)
            os.closerange(low + 1, high)


def _close_on_exec() -> None:
    """Close what `execve` would: every descriptor marked close-on-exec.

    Confined, PID 2 is a fork of init, which holds the pipe that reports the command's status
    to the launcher: a command that could write there would choose the exit code the caller
    sees.
    """
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            if fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC:
                os.close(fd)


def _become(spawn: Spawn) -> NoReturn:
    """Run `python -m spawn.module *spawn.args` in this (forked) interpreter, then exit."""
    code = 1
    try:
        _close_on_exec()
        # Its command line is the zygote's: its name (`ps -o comm`, psutil's `name()`) says
        # what it runs instead, the module's last part.
        name = spawn.module.rsplit(".", 1)[-1][:15].encode()
        _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
        os.environ.clear()
        os.environ.update(spawn.env)
        tempfile.tempdir = None
        sys.path[0] = os.getcwd()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_IGN)
        sys.argv = [spawn.module, *spawn.args]
        try:
            runpy.run_module(spawn.module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                sys.stderr.write(f"{stop.code}\n")
        except BaseException:  # noqa: BLE001 - as the interpreter would end on it
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _confined_command(spawn: Spawn) -> NoReturn:
    """PID 2 of a confined launch: no capabilities left, then the command."""
    try:
        confine.enter_command()
        confine.drop_capabilities()
    except (confine.SetupError, OSError) as err:
        print(f"confine: {err}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    _become(spawn)


def _launcher(spawn: Spawn, fds: Sequence[int], zygote: int, started: int) -> NoReturn:
    """The forked child: set up as `exec` would have found it, then confined or the command.

    It writes to `started` once it leads its own session, which the zygote waits for before it
    answers: the caller may signal the group at once.
    """
    try:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != zygote:  # it died before the request: nothing would kill us
            os._exit(SETUP_FAILED)
        os.setsid()
        os.write(started, b"s")
        _arrange(fds, spawn.targets)
        for number, limit in spawn.rlimits.items():
            resource.setrlimit(number, (limit, limit))
        os.chdir(spawn.cwd)
    except BaseException as err:  # noqa: BLE001 - a forked child never returns into the zygote
        with contextlib.suppress(Exception):
            os.write(2, f"zygote: cannot set up '{spawn.module}': {err}\n".encode())
        os._exit(SETUP_FAILED)
    if spawn.confinement is None:
        _become(spawn)
    try:
        confinement = confine.Confinement.from_json(spawn.confinement)
    except ValueError as err:
        os.write(2, f"zygote: bad confinement: {err}\n".encode())
        os._exit(SETUP_FAILED)
    confine.launch(confinement, lambda: _confined_command(spawn))


def _spawn(sock: socket.socket, message: bytes, fds: list[int]) -> tuple[int, int] | None:
    """Fork the child a request asks for; its pid and status pipe, or None (answered why)."""
    try:
        spawn = Spawn.model_validate_json(message)
        if len(fds) != len(spawn.targets) + 1:
            raise ValueError(f"{len(fds)} descriptors for {len(spawn.targets)} targets")
    except ValueError as err:
        for fd in fds:
            os.close(fd)
        _send(sock, Spawned(error=f"bad spawn request: {err}"))
        return None
    status, given = fds[0], fds[1:]
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    started_r, started_w = os.pipe()
    zygote = os.getpid()
    try:
        pid = os.fork()
    except OSError as err:
        for fd in (*fds, started_r, started_w):
            os.close(fd)
        _send(sock, Spawned(error=f"fork failed: {err}"))
        return None
    if pid == 0:
        _launcher(spawn, given, zygote, started_w)
    for fd in (*given, started_w):
        os.close(fd)
    os.read(started_r, 1)  # nothing: it died before, and is reaped and reported as any end
    os.close(started_r)
    _send(sock, Spawned(pid=pid))
    return pid, status


def _reap(pid: int, status_fd: int) -> None:
    """A launcher ended: its group killed, it reaped, its wait status written and closed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        os.write(status_fd, str(status).encode())
    os.close(status_fd)


def _preload(spec: Sequence[str]) -> None:
    """Import MODULE and call FUNCTION(*ARGS); a fork must find one thread and no CUDA."""
    if not spec:
        return
    module, _, function = spec[0].partition(":")
    loaded = importlib.import_module(module)
    if function:
        getattr(loaded, function)(*spec[1:])
    if threading.active_count() != 1:
        raise RuntimeError(f"the preload left {threading.active_count()} Python threads running")
    torch = sys.modules.get("torch")
    if torch is not None and (torch.cuda.is_initialized() or _forks_into_bad_cuda(torch)):
        raise RuntimeError("the preload initialised CUDA, which a forked child cannot use")


def _forks_into_bad_cuda(torch: ModuleType) -> bool:
    """Whether a child forked now would find CUDA unusable, as PyTorch tells it.

    `torch.cuda.is_initialized()` says no after a mere `torch.cuda.is_available()`, which
    initialises the CUDA driver all the same: every worker forked after one failed with
    "Cannot re-initialize CUDA in forked subprocess" (an H200, 2026-11-28). A probe child asks.
    """
    pid = os.fork()
    if pid == 0:
        os._exit(1 if torch.cuda._is_in_bad_fork() else 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) != 0


def serve(control: int, preload: Sequence[str]) -> NoReturn:
    """The zygote: preload, say ready, then fork what is asked until the control socket ends."""
    sock = socket.socket(fileno=control)
    try:
        os.close(os.pidfd_open(os.getpid()))  # Linux 5.3 or later: how children are watched
        _preload(preload)
    except BaseException as err:  # noqa: BLE001 - reported to the owner, then the end
        traceback.print_exc()
        _send(sock, Spawned(error=f"the preload failed: {type(err).__name__}: {err}"))
        os._exit(1)
    _send(sock, Spawned(pid=os.getpid()))
    children: dict[int, tuple[int, int]] = {}
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is sock:
                    message, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, MAX_FDS)
                    if not message:
                        os._exit(0)  # the owner is gone: the children die with us
                    started = _spawn(sock, message, fds)
                    if started is not None:
                        pidfd = os.pidfd_open(started[0])
                        children[pidfd] = started
                        selector.register(pidfd, selectors.EVENT_READ)
                else:
                    pidfd = int(key.fd)
                    selector.unregister(pidfd)
                    pid, status_fd = children.pop(pidfd)
                    os.close(pidfd)
                    _reap(pid, status_fd)


# ---- the owner's side ----


class ZygoteError(OSError):
    """The zygote could not start, or could not start a child."""


class Zygote:
    """A started zygote (`serve`), and the one place to ask it for children."""

    def __init__(
        self, preload: Sequence[str], env: Mapping[str, str], home: Path, timeout_s: float
    ) -> None:
        """Start it in `home` (its own folder, removed with it) and wait for its preload.

        Raises:
            ZygoteError: It could not start or its preload failed (with its output).
        """
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.home = home
        """Its working folder, HOME and TMPDIR, removed with it."""
        self._sock = ours
        self._lock = threading.Lock()
        argv = [sys.executable, "-m", "gauntlet.zygote", str(theirs.fileno()), *preload]
        try:
            self.child = process.Child(argv, env=env, cwd=home, pass_fds=(theirs.fileno(),))
        except OSError as err:
            ours.close()
            raise ZygoteError(f"the zygote could not start: {err}") from err
        finally:
            theirs.close()
        started = time.monotonic()
        ours.settimeout(timeout_s)
        try:
            ready = Spawned.model_validate_json(ours.recv(MESSAGE_BYTES) or b"{}")
        except (OSError, ValueError) as err:
            ready = Spawned(error=f"no answer in {timeout_s:.0f} s ({err})")
        finally:
            ours.settimeout(None)
        if ready.error or not ready.pid:
            finished = self.child.wait(0)
            self._sock.close()
            shutil.rmtree(home, ignore_errors=True)
            raise ZygoteError(
                f"the zygote ({' '.join(preload)}) did not start: "
                f"{ready.error or 'it ended'}\n{finished.stderr[-2000:]}"
            )
        self.start_s = time.monotonic() - started
        """Seconds its preload took."""

    def alive(self) -> bool:
        """Whether it still serves."""
        return self.child.poll() is None

    def spawn(
        self,
        module: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        fds: Mapping[int, int],
        rlimits: Mapping[int, int] | None = None,
        confinement: confine.Confinement | None = None,
    ) -> process.Forked:
        """Fork `python -m module *args` with `fds` (number in the child: ours) in place.

        Raises:
            ZygoteError: The zygote is gone or refused (the child never started).
        """
        status_r, status_w = os.pipe()
        spawn = Spawn(
            module=module,
            args=tuple(args),
            env=dict(env),
            cwd=str(cwd),
            targets=tuple(fds),
            rlimits=dict(rlimits or {}),
            confinement=None if confinement is None else confinement.to_json(),
        )
        try:
            with self._lock:
                socket.send_fds(
                    self._sock, [spawn.model_dump_json().encode()], [status_w, *fds.values()]
                )
                answer = self._sock.recv(MESSAGE_BYTES)
        except OSError as err:
            os.close(status_r)
            raise ZygoteError(f"the zygote is gone: {err}") from err
        finally:
            os.close(status_w)
        if not answer:
            os.close(status_r)
            raise ZygoteError("the zygote is gone: its socket closed")
        spawned = Spawned.model_validate_json(answer)
        if spawned.error:
            os.close(status_r)
            raise ZygoteError(f"the zygote could not start '{module}': {spawned.error}")
        return process.Forked(spawned.pid, status_r)

    def close(self) -> process.Finished:
        """End it (its children die with it), reap it, and say how it ended."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        finished = self.child.wait(timeout_s=5.0)
        shutil.rmtree(self.home, ignore_errors=True)
        return finished


def _main(argv: Sequence[str]) -> NoReturn:
    if not argv:
        sys.stderr.write("usage: python -m gauntlet.zygote CONTROL_FD [MODULE:FUNCTION [ARG...]]\n")
        os._exit(2)
    serve(int(argv[0]), argv[1:])


if __name__ == "__main__":
    _main(sys.argv[1:])
