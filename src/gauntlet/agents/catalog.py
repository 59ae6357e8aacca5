"""What agents and sandboxes this machine can use (for `gauntlet agents`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gauntlet import sandbox, settings
from gauntlet.agents.base import agent_names, make_agent
from gauntlet.errors import ConfigError


@dataclass(frozen=True)
class AgentInfo:
    """One registered agent and whether it can run here."""

    name: str
    usable: bool
    detail: str
    """What it runs, or what to install or set (or the argument it needs)."""


@dataclass(frozen=True)
class SandboxInfo:
    """One sandbox kind and whether it works here."""

    kind: str
    usable: bool
    detail: str


def describe_agents() -> list[AgentInfo]:
    """Every registered agent: usable here or not, and why."""
    infos = []
    for name in agent_names():
        try:
            made = make_agent(name)
        except ConfigError as err:
            infos.append(AgentInfo(name, False, str(err)))
            continue
        detail = getattr(made, "availability", None)
        problem = detail() if callable(detail) else None
        infos.append(AgentInfo(name, problem is None, problem or _usable_detail(made)))
    return infos


def describe_sandboxes() -> list[SandboxInfo]:
    """Every sandbox kind: usable here or not, and why."""
    infos = []
    for kind in sandbox.SANDBOX_KINDS:
        problem = sandbox.availability(kind)
        detail = {
            "auto": "the default: the first of bwrap, confine, docker that works, else none",
            "none": "unsandboxed: the agent reads and writes what the user can (flagged)",
            "bwrap": "only the workspace writable, toolchain read-only, the rest invisible",
            "confine": "as bwrap, through gauntlet's own namespace launcher",
            "docker": "as bwrap, in a container (needs a Docker daemon)",
        }[kind]
        if kind == "auto":
            chosen, note = sandbox.resolve(kind)
            detail += f" (here: {chosen}{'; ' + note if note else ''})"
        infos.append(SandboxInfo(kind, problem is None, problem or detail))
    return infos


def _usable_detail(made: object) -> str:
    binary = getattr(made, "binary", None)
    if isinstance(binary, str):
        spec = getattr(made, "sandbox", None)
        kind = getattr(spec, "kind", "none")
        return f"{binary} (sandbox {kind})"
    if getattr(made, "name", "") in ("toolcall", "evolve"):
        key = "set" if os.environ.get(settings.API_KEY_ENV) else "not set"
        return f"needs --model; OPENAI_API_KEY {key} (a --base-url endpoint may need no key)"
    if getattr(made, "name", "") == "autotune":
        return "built in, no model: searches the knobs a task declares ([autotune])"
    return "built in"
