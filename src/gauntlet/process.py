"""The one place Kernel Gauntlet starts processes.

Every child runs in its own process group (session), so a timeout kills it together with
anything it started. Output is captured to files and cut at a byte limit with a marker, so a
child that prints without end costs disk and memory only up to that limit. Extra file
descriptors (the judge's result pipe) are passed explicitly and inherited by nothing else.
A child's stdout can also be streamed line by line to a callback (an agent's stream-json), and
`kill_tree` reaches descendants that left the group (`setpgid`) but not the session.

No Python runs in a child between `fork` and `exec` (no `preexec_fn`: unsafe in a process with
threads, which may hold locks the child's copy then waits on forever). What a child must set
up before its command runs (dying with its parent, resource limits) is done by a small program
of its own that then becomes the command (`preexec.py`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from gauntlet.confine import Confinement
    from gauntlet.zygote import Zygote

logger = logging.getLogger(__name__)

#: Default cap on captured stdout and stderr, each.
OUTPUT_LIMIT_BYTES = 64 * 1024
TRUNCATION_MARKER = "\n[... output cut at {limit} bytes ...]\n"
#: Seconds `wait` gives the stdout reader thread to drain after the child ended.
READER_JOIN_S = 5.0

#: The program that sets a child up and becomes its command (`Child`'s `die_with_parent`,
#: `rlimits`).
_PREEXEC = str(Path(__file__).resolve().with_name("preexec.py"))

#: Children started and not yet reaped, for `stopping` (a run stopped with Ctrl-C).
_live: set[Child] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


class Stopping(OSError):
    """A child was to start while this process stops its children (`stopping`)."""


@contextmanager
def stopping() -> Iterator[None]:
    """Kill every child started here and start no new one until the block ends.

    Children run in sessions of their own, so a terminal's Ctrl-C reaches none of them: a run
    that stops kills them here, each with all it started, and the threads that were waiting
    on them find them gone and start nothing more (`Child` raises `Stopping`, an `OSError`,
    which every caller already treats as a process that could not start).
    """
    _stopping.set()
    try:
        with _live_lock:
            children = list(_live)
        for child in children:
            child.kill_tree()
        yield
    finally:
        _stopping.clear()


def is_stopping() -> bool:
    """Whether this process is stopping its children (a child that died now was killed)."""
    return _stopping.is_set()


@dataclass(frozen=True)
class Finished:
    """How a child process ended."""

    returncode: int
    """Exit code; negative for a signal (as `subprocess` reports it)."""
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float

    @property
    def signal_name(self) -> str | None:
        """The name of the signal that ended the process, if one did."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def read_capped(handle: IO[bytes], limit: int) -> str:
    """Read a captured output file, keeping at most `limit` bytes plus a marker."""
    handle.seek(0)
    data = handle.read(limit + 1)
    text = data[:limit].decode("utf-8", errors="replace")
    return text + TRUNCATION_MARKER.format(limit=limit) if len(data) > limit else text


def _executable(name: str, env: Mapping[str, str] | None, cwd: Path | None) -> str:
    """The file `subprocess` would execute for `name`, found as it would be.

    Raises the `OSError` that starting it would (a command not found is `FileNotFoundError`),
    so a child started through `preexec.py` fails to start as any other.
    """
    if os.sep in name:
        path = os.path.join(cwd if cwd is not None else os.getcwd(), name)
    else:
        found = shutil.which(name, path=os.pathsep.join(os.get_exec_path(env)))
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
        path = os.path.join(cwd if cwd is not None else os.getcwd(), found)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
    return path


def _set_up_then(
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: Path | None,
    *,
    die_with_parent: bool,
    rlimits: Mapping[int, int],
) -> list[str]:
    """`argv` run by `preexec.py`, which dies with this thread and sets `rlimits` first."""
    options: list[str] = []
    if die_with_parent:
        options += ["--parent", f"{os.getpid()}:{threading.get_native_id()}"]
    for number, limit in rlimits.items():
        options += ["--rlimit", f"{int(number)}={int(limit)}"]
    path = _executable(argv[0], env, cwd)
    return [sys.executable, "-I", "-S", _PREEXEC, *options, "--", path, *argv]


class Forked:
    """A child a zygote forked (`gauntlet.zygote`), driven by `Child` as it drives a `Popen`.

    The zygote is its parent: it reaps the child, after killing what was left in the child's
    group, and writes its wait status to the status pipe read here. A pipe that ends without
    one means the zygote died, and the child with it (SIGKILL).
    """

    def __init__(self, pid: int, status_fd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._status_fd = status_fd
        self._lock = threading.Lock()

    def _read(self, timeout_s: float | None) -> int | None:
        if self.returncode is None:
            waiting = select.poll()
            waiting.register(self._status_fd, select.POLLIN)
            # Another thread may read and close the pipe meanwhile: then it set the code.
            ready = waiting.poll(None if timeout_s is None else int(timeout_s * 1000))
            if ready:
                with self._lock:
                    if self.returncode is None:
                        data = os.read(self._status_fd, 64)
                        os.close(self._status_fd)
                        killed = -int(signal.SIGKILL)
                        self.returncode = os.waitstatus_to_exitcode(int(data)) if data else killed
        return self.returncode

    def poll(self) -> int | None:
        """The exit code once the child has ended (negative for a signal), else None."""
        return self._read(0)

    def wait(self, timeout: float | None = None) -> int:
        """The exit code; raises `subprocess.TimeoutExpired` past `timeout` seconds."""
        code = self._read(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"zygote child {self.pid}", timeout or 0.0)
        return code

    def send_signal(self, signum: int) -> None:
        """Signal the child, unless it has ended (its pid may be another process's by now)."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def signal_group(self, signum: int) -> None:
        """Signal the child's group while it lives; once it has ended, the zygote killed it."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signum)


class Child:
    """A running child process in its own session, with captured, capped output."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        pass_fds: Sequence[int] = (),
        stdin_data: bytes | None = None,
        output_limit: int = OUTPUT_LIMIT_BYTES,
        on_stdout_line: Callable[[str], None] | None = None,
        die_with_parent: bool = False,
        rlimits: Mapping[int, int] | None = None,
        zygote: Zygote | None = None,
        confinement: Confinement | None = None,
    ) -> None:
        """Start `argv` in its own session.

        Args:
            argv: The command.
            env: Its whole environment (None: inherit ours).
            cwd: Its working directory.
            pass_fds: File descriptors it inherits.
            stdin_data: Bytes written to its stdin (None: stdin is /dev/null).
            output_limit: Bytes of stdout and stderr kept, each.
            on_stdout_line: Called from a reader thread with each line of stdout (without the
                newline) as it comes; the captured stdout is still kept up to `output_limit`.
            die_with_parent: The kernel kills the child (SIGKILL) when the thread that started
                it ends, this process killed included, so nothing it runs outlives us (Linux;
                a no-op elsewhere). Only for children whose starting thread outlives them.
                Set up by `preexec.py` (about 15 ms more at the start), so is `rlimits`.
            rlimits: Resource limits set before the command runs, soft and hard, by number
                (`resource.RLIMIT_AS`: bytes).
            zygote: Fork the command from this zygote instead of executing it: `argv` must be
                `[sys.executable, "-m", MODULE, ARGS...]`, its stdin is /dev/null and its
                stdout is only captured. It dies with the zygote, which dies with this
                process (whatever `die_with_parent` says: not with a thread).
            confinement: With `zygote`, run it confined (`confine.launch`); without, wrap
                `argv` with `confine.confined_argv` instead.

        Raises:
            OSError: The command could not be started (not found, not executable, the zygote
                gone or refusing: `zygote.ZygoteError`).
        """
        if _stopping.is_set():
            raise Stopping(f"not starting '{argv[0]}': the run is stopping")
        self.argv = tuple(argv)
        """The command as started (/proc shows it only once the exec has finished)."""
        if zygote is not None and (stdin_data is not None or on_stdout_line is not None):
            raise ValueError("a child forked by a zygote takes no stdin data nor stdout lines")
        die_with_parent = die_with_parent and sys.platform == "linux" and zygote is None
        command = list(argv)
        if confinement is not None and zygote is None:
            from gauntlet.confine import confined_argv

            command = confined_argv(command, confinement)
        if die_with_parent or (rlimits and zygote is None):
            command = _set_up_then(
                command, env, cwd, die_with_parent=die_with_parent, rlimits=rlimits or {}
            )
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        self._limit = output_limit
        self._started = time.monotonic()
        self._proc: subprocess.Popen[bytes] | Forked  # noqa: TID251 - the one place
        try:
            if zygote is not None:
                self._proc = self._fork(zygote, argv, env, cwd, pass_fds, rlimits, confinement)
            else:
                self._proc = subprocess.Popen(  # noqa: TID251 - this module is the one place
                    command,
                    env=dict(env) if env is not None else None,
                    cwd=str(cwd) if cwd is not None else None,
                    stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE if on_stdout_line is not None else self._out,
                    stderr=self._err,
                    pass_fds=tuple(pass_fds),
                    start_new_session=True,
                )
        except (OSError, ValueError):
            self._out.close()
            self._err.close()
            raise
        with _live_lock:
            _live.add(self)
        # The reader starts first: a child that writes before it reads its stdin never blocks.
        self._reader: threading.Thread | None = None
        self._finished: Finished | None = None
        if on_stdout_line is not None:
            self._reader = threading.Thread(
                target=self._stream_stdout, args=(on_stdout_line,), daemon=True
            )
            self._reader.start()
        stdin = None if isinstance(self._proc, Forked) else self._proc.stdin
        if stdin_data is not None and stdin is not None:
            try:
                stdin.write(stdin_data)
                stdin.close()
            except BrokenPipeError:
                logger.debug("child %s closed its stdin early", argv[0])

    def _fork(
        self,
        zygote: Zygote,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: Path | None,
        pass_fds: Sequence[int],
        rlimits: Mapping[int, int] | None,
        confinement: Confinement | None,
    ) -> Forked:
        """The command forked by `zygote`, with our output files and `pass_fds` in place."""
        if len(argv) < 3 or argv[0] != sys.executable or argv[1] != "-m":
            raise ValueError(f"a zygote runs `{sys.executable} -m MODULE ...`, not {argv[:3]}")
        fds = {1: self._out.fileno(), 2: self._err.fileno(), **{fd: fd for fd in pass_fds}}
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            return zygote.spawn(
                argv[2],
                argv[3:],
                env=dict(os.environ if env is None else env),
                cwd=Path.cwd() if cwd is None else cwd,
                fds={0: null, **fds},
                rlimits=rlimits,
                confinement=confinement,
            )
        finally:
            os.close(null)

    def _stream_stdout(self, on_line: Callable[[str], None]) -> None:
        stream = None if isinstance(self._proc, Forked) else self._proc.stdout
        assert stream is not None
        kept = 0
        for raw in iter(stream.readline, b""):
            if kept <= self._limit:
                self._out.write(raw[: self._limit + 1 - kept])
                kept += len(raw)
            on_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        stream.close()

    @property
    def pid(self) -> int:
        """The child's pid (also its process group id)."""
        return self._proc.pid

    def poll(self) -> int | None:
        """The exit code if the child has ended."""
        return self._proc.poll()

    def kill_group(self) -> None:
        """Kill the child and everything in its process group."""
        self._signal_group(signal.SIGKILL)

    def kill_tree(self) -> None:
        """Kill the group, every descendant still attached, and whatever stayed in the session.

        A descendant that moved to a process group of its own is still found while its parent
        lives (as a descendant) or after (by its session id). Only `setsid` escapes both; run
        the child under a PID-namespace sandbox (bwrap) to contain that too.
        """
        victims = self.tree()
        self.kill_group()
        for pid in victims - {os.getpid()}:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """The child and what it started stopped (SIGSTOP) for the block, continued after.

        Found as `kill_tree` finds them: the group, every descendant (under a PID namespace,
        everything in it) and whatever is in the child's session. Stopped top-down until no
        new process turns up (a stopped process forks no more), so none started meanwhile runs
        on, and the block starts once they have all stopped, not only been signalled
        (`_await_stopped`). A process that left by `setsid` outside a PID namespace is not found.
        """
        stopped: set[int] = set()
        try:
            self._signal_group(signal.SIGSTOP)
            while True:
                found = self.tree() - stopped - {os.getpid()}
                if not found:
                    break
                for pid in found:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGSTOP)
                stopped |= found
            _await_stopped({self._proc.pid, *stopped})
            yield
        finally:
            self._signal_group(signal.SIGCONT)
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGCONT)

    def _signal_group(self, signum: int) -> None:
        if isinstance(self._proc, Forked):
            self._proc.signal_group(signum)
            return
        try:
            os.killpg(self._proc.pid, signum)
        except ProcessLookupError:
            pass
        except PermissionError:
            self._proc.send_signal(signum)

    def tree(self) -> set[int]:
        """The child's descendants and the members of its session (not the child itself)."""
        import psutil

        found: set[int] = set()
        try:
            found.update(p.pid for p in psutil.Process(self._proc.pid).children(recursive=True))
        except psutil.Error:
            pass
        for proc in psutil.process_iter():
            try:
                if os.getsid(proc.pid) == self._proc.pid:
                    found.add(proc.pid)
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        found.discard(self._proc.pid)
        return found

    def wait(self, timeout_s: float | None = None, *, kill_tree: bool = False) -> Finished:
        """Wait for the end; past `timeout_s` kill the whole group. Always reaps the group.

        Args:
            timeout_s: Seconds to wait (None: no limit).
            kill_tree: Kill with `kill_tree` instead of `kill_group` (descendants that left the
                group go too).

        A second call returns what the first did.
        """
        if self._finished is not None:
            return self._finished
        kill = self.kill_tree if kill_tree else self.kill_group
        timed_out = False
        try:
            returncode = self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill()
            returncode = self._proc.wait()
        # Orphans the child left behind in its group (e.g. a spawned helper) go too.
        kill()
        with _live_lock:
            _live.discard(self)
        if self._reader is not None:
            # A descendant that escaped every kill may hold the pipe open; do not wait on it.
            self._reader.join(timeout=READER_JOIN_S)
        finished = Finished(
            returncode=returncode,
            stdout=read_capped(self._out, self._limit),
            stderr=read_capped(self._err, self._limit),
            timed_out=timed_out,
            duration_s=time.monotonic() - self._started,
        )
        self._out.close()
        self._err.close()
        self._finished = finished
        return finished


#: Seconds `Child.stopped` waits for its processes to be stopped, not only signalled.
STOP_WAIT_S = 1.0


def _await_stopped(pids: set[int], timeout_s: float = STOP_WAIT_S) -> None:
    """Wait until every process in `pids` has stopped (or ended), for `timeout_s` at most.

    SIGSTOP takes effect when the kernel next schedules the process, not when it is sent: a
    process still running on another CPU (or in a system call it cannot leave, such as a GPU
    driver's) runs on meanwhile. Past the timeout the caller goes on; a process in a call it
    cannot leave launches nothing new until it returns, and then it stops.
    """
    import psutil

    done = (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP, psutil.STATUS_ZOMBIE)
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if psutil.Process(pid).status() in done:
                    break
            except psutil.Error:
                break  # ended
            time.sleep(0.001)


def run(
    argv: Sequence[str],
    *,
    timeout_s: float | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin_data: bytes | None = None,
    output_limit: int = OUTPUT_LIMIT_BYTES,
) -> Finished:
    """Run a command to its end (or its timeout) and return how it finished."""
    child = Child(argv, env=env, cwd=cwd, stdin_data=stdin_data, output_limit=output_limit)
    return child.wait(timeout_s)
