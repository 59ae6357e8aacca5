"""The one place Kernel Gauntlet starts processes.

Every child runs in its own process group (session), so a timeout kills it together with
anything it started. Output is captured to files and cut at a byte limit with a marker, so a
child that prints without end costs disk and memory only up to that limit. Extra file
descriptors (the judge's result pipe) are passed explicitly and inherited by nothing else.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)

#: Default cap on captured stdout and stderr, each.
OUTPUT_LIMIT_BYTES = 64 * 1024
TRUNCATION_MARKER = "\n[... output cut at {limit} bytes ...]\n"


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
        preexec: Callable[[], None] | None = None,
    ) -> None:
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        self._limit = output_limit
        self._started = time.monotonic()
        try:
            self._proc = subprocess.Popen(  # noqa: TID251 - this module is the one place
                list(argv),
                env=dict(env) if env is not None else None,
                cwd=str(cwd) if cwd is not None else None,
                stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError:
            self._out.close()
            self._err.close()
            raise
        if stdin_data is not None and self._proc.stdin is not None:
            try:
                self._proc.stdin.write(stdin_data)
                self._proc.stdin.close()
            except BrokenPipeError:
                logger.debug("child %s closed its stdin early", argv[0])

    @property
    def pid(self) -> int:
        """The child's pid (also its process group id)."""
        return self._proc.pid

    def poll(self) -> int | None:
        """The exit code if the child has ended."""
        return self._proc.poll()

    def kill_group(self) -> None:
        """Kill the child and everything in its process group."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:
            self._proc.kill()

    def wait(self, timeout_s: float | None = None) -> Finished:
        """Wait for the end; past `timeout_s` kill the whole group. Always reaps the group."""
        timed_out = False
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill_group()
            self._proc.wait()
        # Orphans the child left behind in its group (e.g. a spawned helper) go too.
        self.kill_group()
        finished = Finished(
            returncode=self._proc.returncode,
            stdout=read_capped(self._out, self._limit),
            stderr=read_capped(self._err, self._limit),
            timed_out=timed_out,
            duration_s=time.monotonic() - self._started,
        )
        self._out.close()
        self._err.close()
        return finished


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
