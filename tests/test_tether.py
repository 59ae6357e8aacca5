"""The tether: a container's first process, which ends when its owner's socket closes.

Outside a container, with real processes: the tether exits as soon as the owner closes its
listening socket or is killed, runs nothing when the owner is already gone, and otherwise
passes on its command's stdin and exit status. (That its exit ends the container, and a
stopped or killed run's containers with it, is tested in tests/test_sandbox.py where a Docker
daemon answers.)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gauntlet import process, sandbox, tether


@pytest.fixture
def owner() -> Iterator[sandbox.Tether]:
    made = sandbox.Tether()
    yield made
    made.close()


def tethered(socket_path: Path, *command: str) -> list[str]:
    return sandbox.tether_argv(socket_path, command)


def start_sleeper(socket_path: Path, started: Path) -> process.Child:
    """A tethered command that marks that it runs (the tether connects before it starts it)."""
    child = process.Child(tethered(socket_path, "sh", "-c", f"touch {started}; sleep 600"))
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        assert child.poll() is None, child.wait().stderr
        time.sleep(0.05)
    assert started.exists(), "the command never started"
    return child


def test_the_tether_ends_as_soon_as_its_owner_closes_the_socket(
    owner: sandbox.Tether, tmp_path: Path
) -> None:
    child = start_sleeper(owner.socket_path, tmp_path / "started")
    owner.close()
    finished = child.wait(timeout_s=10)
    assert (finished.timed_out, finished.returncode) == (False, tether.OWNER_GONE)
    assert not owner.folder.exists()


def test_the_tether_ends_when_its_owner_is_killed(tmp_path: Path) -> None:
    # The owner is a process of its own, killed with SIGKILL: the kernel closes its socket.
    path = tmp_path / "owner.sock"
    code = (
        "import socket, time\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.bind({str(path)!r}); s.listen(1)\n"
        "time.sleep(600)\n"
    )
    owner = process.Child([sys.executable, "-c", code])
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = start_sleeper(path, tmp_path / "started")
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    finished = child.wait(timeout_s=10)
    assert (finished.timed_out, finished.returncode) == (False, tether.OWNER_GONE)


def test_a_tether_whose_owner_is_already_gone_runs_nothing(tmp_path: Path) -> None:
    gone = sandbox.Tether()
    gone.close()
    witness = tmp_path / "ran"
    finished = process.run(tethered(gone.socket_path, "touch", str(witness)), timeout_s=30)
    assert finished.returncode == tether.OWNER_GONE
    assert "owner is gone" in finished.stderr
    assert not witness.exists()


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["sh", "-c", "exit 3"], 3),
        (["sh", "-c", "kill -ABRT $$"], 128 + signal.SIGABRT),
        (["no-such-command-here"], tether.NOT_RUN),
    ],
)
def test_the_tether_exits_as_its_command_did(
    owner: sandbox.Tether, command: list[str], code: int
) -> None:
    finished = process.run(tethered(owner.socket_path, *command), timeout_s=30)
    assert finished.returncode == code, finished.stderr


def test_the_command_reads_the_tethers_stdin(owner: sandbox.Tether) -> None:
    finished = process.run(
        tethered(owner.socket_path, "cat"), timeout_s=30, stdin_data=b"the prompt\n"
    )
    assert (finished.returncode, finished.stdout) == (0, "the prompt\n")
