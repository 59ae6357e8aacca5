"""Which CLI clients are installed here, their versions, and whether each starts in each sandbox.

`check_clients()` finds each client as its agent would (on PATH, else where `make clients`
installs it), then runs `<client> --version` once unsandboxed and once in every sandbox kind
that works here, all at once, within `CHECK_TIMEOUT_S`: no model is called. (aider's
`--version` imports all of aider, over a second on its own: its interpreter imports the
`aider` package and prints its version instead, from the same files.) A client that
answers in a sandbox has what it needs there (its install prefix, its runtime, its platform
binary or virtual environment are bound, or mounted into the container); one that does not gets
the reason (its last line of output, or that it did not answer in time).
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from gauntlet import process, sandbox
from gauntlet.agents.cli_agents import PROFILES, find_binary
from gauntlet.errors import ConfigError

#: Seconds every check together may take.
CHECK_TIMEOUT_S = 2.0
#: The sandbox kinds checked, after `none` (`auto` is one of them).
CHECKED_SANDBOXES = ("none", "bwrap", "confine", "docker")


@dataclass(frozen=True)
class ClientCheck:
    """One client: where it is, its version, and whether it starts in each sandbox."""

    agent: str
    executable: str | None
    """None when it is not installed."""
    install: str
    """How to install it."""
    version: str | None
    """What `--version` printed unsandboxed (None: it did not answer)."""
    sandboxes: dict[str, str | None]
    """Sandbox kind -> None when the client starts there, else why not (empty when it is not
    installed)."""


def check_clients(timeout_s: float = CHECK_TIMEOUT_S) -> list[ClientCheck]:
    """Every CLI client with a binary of its own (not `generic`), checked in every sandbox."""
    # The launches stay open until every check is answered: closing one ends its container.
    with tempfile.TemporaryDirectory(prefix="gauntlet-check-") as tmp, ExitStack() as launches:
        started: dict[tuple[str, str], process.Child] = {}
        problems: dict[tuple[str, str], str | None] = {}
        found: dict[str, str | None] = {}
        for name, profile in PROFILES.items():
            if not profile.binary:
                continue
            found[name] = executable = find_binary(profile)
            if executable is None:
                continue
            for kind in CHECKED_SANDBOXES:
                key = (name, kind)
                problem = _not_checked(kind)
                if problem is not None:
                    problems[key] = problem
                    continue
                try:
                    started[key] = _start(executable, kind, Path(tmp) / name / kind, launches)
                except (OSError, ConfigError) as err:
                    problems[key] = f"cannot start: {err}"
        deadline = time.monotonic() + timeout_s
        answers: dict[tuple[str, str], process.Finished] = {}
        for key, child in started.items():
            answers[key] = child.wait(timeout_s=max(0.0, deadline - time.monotonic()))
    checks = []
    for name, executable in found.items():
        version = None
        sandboxes: dict[str, str | None] = {}
        for kind in CHECKED_SANDBOXES if executable else ():
            key = (name, kind)
            if key in answers:
                problems[key] = _problem(answers[key], timeout_s)
                if kind == "none" and problems[key] is None:
                    version = answers[key].stdout.strip().splitlines()[0]
            sandboxes[kind] = problems.get(key)
        checks.append(ClientCheck(name, executable, PROFILES[name].install, version, sandboxes))
    return checks


def _not_checked(kind: str) -> str | None:
    if sandbox.availability(kind) is not None:
        return "the sandbox is not usable here"
    return None


def _start(executable: str, kind: str, folder: Path, launches: ExitStack) -> process.Child:
    workspace, home = folder / "workspace", folder / "home"
    workspace.mkdir(parents=True)
    home.mkdir()
    path = os.pathsep.join([str(Path(executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    env = {"PATH": path, "HOME": str(home), "TERM": "dumb", "NO_COLOR": "1", "CI": "1"}
    spec = sandbox.SandboxSpec(kind=kind, network=False)  # type: ignore[arg-type]
    launch = launches.enter_context(
        sandbox.prepare(
            spec, _version_argv(executable), workspace=workspace, env=env, writable=[home]
        )
    )
    return process.Child(launch.argv, env=launch.env, cwd=launch.cwd)


def _version_argv(executable: str) -> list[str]:
    python = Path(executable).parent / "python"
    if Path(executable).name == "aider" and python.exists():
        return [str(python), "-c", "import aider; print('aider', aider.__version__)"]
    return [executable, "--version"]


def _problem(finished: process.Finished, timeout_s: float) -> str | None:
    if finished.timed_out:
        # On a busy machine a container's start alone can take a second: say how busy it was.
        load = os.getloadavg()[0]
        return f"no answer to --version within {timeout_s:g} s (load average {load:.1f})"
    if finished.returncode != 0 or not finished.stdout.strip():
        lines = (finished.stderr or finished.stdout).strip().splitlines()
        how = finished.signal_name or f"code {finished.returncode}"
        return f"--version failed ({how})" + (f": {lines[-1]}" if lines else "")
    return None
