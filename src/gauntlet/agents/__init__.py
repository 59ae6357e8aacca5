"""Agents: the protocol and its implementations, each registered with `@agent(name)`."""

from gauntlet.agents.base import (
    Agent,
    AgentContext,
    AgentResult,
    Budget,
    ModelSettings,
    Usage,
    agent,
    agent_names,
    make_agent,
)

#: Modules under gauntlet.agents that register built-in agents.
BUILTIN_AGENT_MODULES = ("offline", "toolcall", "cli_agents", "autotune", "evolve")

__all__ = [
    "Agent",
    "AgentContext",
    "AgentResult",
    "Budget",
    "ModelSettings",
    "Usage",
    "agent",
    "agent_names",
    "make_agent",
]
