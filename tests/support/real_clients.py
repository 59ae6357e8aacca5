"""The real CLI clients that `make clients` installs under `.clients/`, for the tests of them.

`real_client` (a fixture, parametrized indirectly with an agent name) gives the client's
executable and puts its folder first on PATH, or skips the test saying why: not installed, and
whether the registry it comes from answers from here.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from gauntlet.agents.cli_agents import CLIENTS_DIR, PROFILES

#: The registry each client is installed from, probed only to say why a test is skipped.
REGISTRIES = {
    "claude-code": "https://registry.npmjs.org/@anthropic-ai%2fclaude-code",
    "codex": "https://registry.npmjs.org/@openai%2fcodex",
    "aider": "https://pypi.org/simple/aider-chat/",
}


@dataclass(frozen=True)
class RealClient:
    """One installed client."""

    agent: str
    executable: Path


def _registry_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def locate(agent: str) -> RealClient:
    """The client of `agent` under `.clients/`, else skip the test with the reason."""
    profile = PROFILES[agent]
    assert profile.clients_bin is not None
    found = shutil.which(profile.binary, path=str(CLIENTS_DIR / profile.clients_bin))
    if found is None:
        registry = REGISTRIES[agent]
        if _registry_answers(registry):
            pytest.skip(f"{agent} is not installed under {CLIENTS_DIR}: run 'make clients'")
        pytest.skip(
            f"{agent} is not installed under {CLIENTS_DIR} and its registry ({registry}) is "
            "unreachable from here, so 'make clients' cannot install it"
        )
    return RealClient(agent, Path(found))


@pytest.fixture
def real_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> RealClient:
    """The installed client named by the test's parameter, first on PATH."""
    client = locate(request.param)
    monkeypatch.setenv("PATH", f"{client.executable.parent}{os.pathsep}{os.environ['PATH']}")
    return client
