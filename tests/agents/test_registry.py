"""Every agent is registered once, by its module, and the registry knows them all."""

from __future__ import annotations

from pathlib import Path

import gauntlet.agents
from gauntlet.agents import BUILTIN_AGENT_MODULES, agent_names
from gauntlet.agents.base import _REGISTRY


def test_every_agent_module_registers_and_no_other_does() -> None:
    names = agent_names()
    by_module: dict[str, list[str]] = {}
    for name in names:
        module = _REGISTRY[name].__module__.removeprefix("gauntlet.agents.")
        by_module.setdefault(module, []).append(name)
    assert set(by_module) == set(BUILTIN_AGENT_MODULES)
    assert by_module["toolcall"] == ["toolcall"]
    assert sorted(by_module["cli_agents"]) == ["aider", "claude-code", "codex", "cursor", "generic"]
    folder = Path(gauntlet.agents.__file__).parent
    helpers = {p.stem for p in folder.glob("*.py")} - set(BUILTIN_AGENT_MODULES)
    assert {"tools", "llm", "transcript", "options", "catalog", "base"} <= helpers
    assert not helpers & set(by_module)
