"""What a child sets up before it becomes its command, in a program of its own.

`process.Child` starts a child that must die with its parent, or that needs resource limits,
as `python -I -S .../gauntlet/preexec.py [--parent PID:TID] [--rlimit N=BYTES]... -- PATH
ARGV...`: this program sets the limits, asks the kernel for SIGKILL when the thread that
started it ends (`PR_SET_PDEATHSIG`, kept across `execve`), checks that this thread is still
alive, and `execve`s PATH with ARGV and its own environment. Doing it in Python between `fork`
and `exec` (`subprocess`'s `preexec_fn`) is unsafe in a process with threads (the judge, the
spare pool's filler and the runner all start children from threads): the child, a copy of a
process whose other threads may hold locks (the allocator's, the import lock, logging's), can
hang before it ever reaches `exec`. Here nothing runs between fork and exec but C.

The parent-death signal fires when the *thread* that forked the child ends, and a thread that
ended before the request was made sends nothing: so the thread is checked after the request
(`/proc/PID/task/TID`), and a child whose starter is gone exits at once (`STARTER_GONE`).

Standard library only, run as a script (`-I -S`: no site, no environment variable of Python's
changes it), so it starts in about 15 ms. What the interpreter's start changes and a command
would inherit is undone: the environment (the C locale coerced to `C.UTF-8`) is read back from
`/proc/self/environ` as the caller gave it, and SIGPIPE and SIGXFSZ, which Python ignores, are
reset to their defaults (as `subprocess` does with `restore_signals`).
"""

from __future__ import annotations

import _signal  # `signal` would import `enum` and more: 10 ms of the start
import os
import resource
import sys

#: Exit code when the thread that started the child was already gone.
STARTER_GONE = 125
#: Exit codes when the command cannot be executed, and when it is not found (as a shell's).
EXEC_FAILED = 126
NOT_FOUND = 127
_PR_SET_PDEATHSIG = 1


def _original_environment() -> dict[bytes, bytes]:
    """The environment this process was started with, before Python's start changed it."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return dict(os.environb)
    return dict(e.split(b"=", 1) for e in entries if b"=" in e)


def _die_with(parent: int, thread: int) -> None:
    """SIGKILL when thread `thread` of process `parent` ends; exit now if it already has."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0) != 0:
        error = os.strerror(ctypes.get_errno())
        sys.stderr.write(f"gauntlet.preexec: cannot set the parent-death signal: {error}\n")
        os._exit(EXEC_FAILED)
    if os.getppid() != parent or not os.path.exists(f"/proc/{parent}/task/{thread}"):
        os._exit(STARTER_GONE)


USAGE = "usage: preexec.py [--parent PID:TID] [--rlimit N=LIMIT]... -- PATH ARGV...\n"


def _parse(args: list[str]) -> tuple[tuple[int, int] | None, dict[int, int], list[str]]:
    """The starter (pid, thread id), the limits by `resource` number, and PATH ARGV...."""
    split = args.index("--")
    command, options = args[split + 1 :], args[:split]
    if len(command) < 2:
        raise ValueError("no command")
    parent: tuple[int, int] | None = None
    limits: dict[int, int] = {}
    for name, value in zip(options[::2], options[1::2], strict=True):
        if name == "--rlimit":
            number, limit = value.split("=")
            limits[int(number)] = int(limit)
        elif name == "--parent":
            pid, tid = value.split(":")
            parent = (int(pid), int(tid))
        else:
            raise ValueError(f"unknown option {name}")
    return parent, limits, command


def main(args: list[str]) -> None:
    """Set up, then become the command (never returns)."""
    try:
        parent, limits, command = _parse(args)
    except ValueError:
        sys.stderr.write(USAGE)
        os._exit(EXEC_FAILED)
    if parent is not None:
        _die_with(*parent)
    for number, limit in limits.items():
        try:
            resource.setrlimit(number, (limit, limit))
        except (ValueError, OSError) as err:
            sys.stderr.write(f"gauntlet.preexec: cannot set limit {number} to {limit}: {err}\n")
            os._exit(EXEC_FAILED)
    for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(signum, _signal.SIG_DFL)
    path, argv = command[0], command[1:]
    try:
        os.execve(path, argv, _original_environment())
    except OSError as err:
        sys.stderr.write(f"gauntlet.preexec: cannot execute '{path}': {err.strerror}\n")
        os._exit(NOT_FOUND if isinstance(err, FileNotFoundError) else EXEC_FAILED)


if __name__ == "__main__":
    main(sys.argv[1:])
