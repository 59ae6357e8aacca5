"""`gauntlet agents`' check of the real CLI clients: installed or not, version, each sandbox."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gauntlet import sandbox
from gauntlet.agents import cli_agents
from gauntlet.agents.cli_clients import CHECK_TIMEOUT_S, CHECKED_SANDBOXES, check_clients
from tests.support.real_clients import locate


def test_a_client_that_is_nowhere_is_not_installed_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_agents, "CLIENTS_DIR", tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    checks = {c.agent: c for c in check_clients()}
    assert set(checks) == {"claude-code", "codex", "cursor", "aider"}
    codex = checks["codex"]
    assert (codex.executable, codex.version, codex.sandboxes) == (None, None, {})
    assert "npm install -g @openai/codex" in codex.install


def test_installed_clients_start_in_every_usable_sandbox_within_the_check_time() -> None:
    installed = {agent: locate(agent).executable for agent in ("claude-code", "codex", "aider")}
    for kind in CHECKED_SANDBOXES:
        sandbox.availability(kind)  # probed once, before the clock starts
    started = time.monotonic()
    check_clients()
    assert time.monotonic() - started < CHECK_TIMEOUT_S + 1.0
    # Whether each starts is asked again with time to spare: on a loaded machine (2 cores
    # shared) a container's start alone can take longer than the check's 2 s.
    checks = {c.agent: c for c in check_clients(timeout_s=30)}
    for agent, executable in installed.items():
        check = checks[agent]
        assert check.executable == str(executable)
        assert check.version is not None and re.search(r"\d+\.\d+", check.version)
        for kind, problem in check.sandboxes.items():
            if sandbox.availability(kind) is not None:
                assert problem == "the sandbox is not usable here"
            else:
                assert problem is None, (agent, kind, problem)
