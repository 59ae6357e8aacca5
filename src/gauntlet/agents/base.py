"""The agent protocol: what an agent gets (`AgentContext`) and what it returns (`AgentResult`).

An agent turns a task's workspace into a submission: whatever the contract's files hold in the
workspace when it stops. Agents never judge; the runner hands the workspace to the judge.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from gauntlet import settings
from gauntlet.errors import UnknownNameError
from gauntlet.task import Task

AgentStatus = Literal["finished", "budget_exhausted", "timeout", "error"]
#: The folder of an attempt's run directory where a search agent keeps its state; a resumed run
#: keeps it (the rest of an unrecorded attempt's folder is cleared), so the search goes on.
SEARCH_STATE_DIR = "search"


def search_spares(judgments: int = 1) -> int:
    """Spare judge workers per role for a search agent's own warm judge (`autotune`, `evolve`).

    Its feedback judgments come one right after another, and one spare's imports fall behind
    them (on an H200 a judgment waited 2.2 s for its worker; `docs/gpu_evidence.md`), so two,
    or one per judgment made at once (`judgments`), where the host has
    `settings.SPARES_MIN_CORES` cores for them, else one.
    """
    return max(2, judgments) if (os.cpu_count() or 1) >= settings.SPARES_MIN_CORES else 1


#: Judgments at once of a search agent on a device that is not a GPU (the CPU's Triton
#: interpreter, the accelerator simulators): each takes a core, and the runner's other attempts
#: want theirs.
OFF_GPU_JUDGMENTS = 2


def search_judgments(device: str) -> int:
    """How many of its candidates a search agent judges at once by default on `device`.

    On a GPU, as many as share it (`settings.JUDGMENTS_PER_GPU`: their compiles, references and
    correctness trials side by side, each timed alone under the GPU's lock); elsewhere
    `OFF_GPU_JUDGMENTS`.
    """
    if device.startswith(("cuda", "rocm")):
        return settings.JUDGMENTS_PER_GPU
    return OFF_GPU_JUDGMENTS


class Budget(BaseModel):
    """Limits of one attempt, enforced from outside the agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: float = Field(default=1800, gt=0)
    """Wall-clock seconds; the agent's process group is killed when they run out."""
    turns: int = Field(default=0, ge=0)
    """Model turns or tool iterations (0: the default for the task's level)."""
    tokens: int = Field(default=0, ge=0)
    """Input plus output tokens (0: unlimited)."""
    cost_usd: float = Field(default=0.0, ge=0)
    """Dollars (0: unlimited)."""


class Usage(BaseModel):
    """What an attempt consumed."""

    model_config = ConfigDict(extra="forbid")

    wall_s: float = 0.0
    turns: int = 0
    tokens_in: int = 0
    """Input tokens, the cached ones included."""
    tokens_cached: int = 0
    """Of `tokens_in`, those read from or written to the provider's prompt cache (where the
    agent's client reports them)."""
    tokens_out: int = 0
    cost_usd: float = 0.0
    tool_calls: int = 0


class ModelSettings(BaseModel):
    """Which model an LLM-driven agent talks to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    base_url: str | None = None
    temperature: float | None = None


class AgentContext(BaseModel):
    """Everything an agent may use for one attempt."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    task: Task
    workspace: Path
    """The isolated folder the agent works in; the submission is read from here."""
    brief: str
    """The task brief (`TASK.md`) as the agent sees it."""
    budget: Budget
    model: ModelSettings = ModelSettings()
    device: str = "cpu"
    """The device the feedback tools judge on."""
    transcript: Path
    """Where the agent writes its transcript (JSONL or the CLI's own stream)."""
    seed: int = 0
    """A per-attempt seed for the agent's own randomness (never the judge's secret)."""


class AgentResult(BaseModel):
    """How an agent ended."""

    model_config = ConfigDict(extra="forbid")

    status: AgentStatus
    usage: Usage = Usage()
    message: str = ""
    """Why it stopped (an error message, 'turn budget exhausted', ...)."""
    transcript: Path | None = None
    sandbox: str | None = None
    """How the agent's own processes were contained (`bwrap`, `confine`, `docker`, `none`);
    None for an agent that starts no process of its own (the judge contains submissions)."""


@runtime_checkable
class Agent(Protocol):
    """An agent: one method, `run`."""

    name: str

    def run(self, ctx: AgentContext) -> AgentResult:
        """Work in `ctx.workspace` until done or out of budget."""
        ...


AgentFactory = Callable[[str], Agent]
_REGISTRY: dict[str, AgentFactory] = {}
_F = TypeVar("_F", bound=AgentFactory)


def agent(name: str) -> Callable[[_F], _F]:
    """Register an agent factory under `name`; the factory gets the argument after ':'."""

    def register(factory: _F) -> _F:
        if name in _REGISTRY:
            raise ValueError(f"agent '{name}' is registered twice")
        _REGISTRY[name] = factory
        return factory

    return register


def agent_names() -> list[str]:
    """Names of every registered agent."""
    _load_builtin_agents()
    return sorted(_REGISTRY)


def make_agent(spec: str) -> Agent:
    """Build an agent from `name` or `name:argument` (e.g. `replay:DIR`)."""
    _load_builtin_agents()
    name, _, argument = spec.partition(":")
    if name not in _REGISTRY:
        raise UnknownNameError("agent", name, sorted(_REGISTRY), "see 'gauntlet agents'")
    return _REGISTRY[name](argument)


def _load_builtin_agents() -> None:
    # Importing each module runs its @agent decorator; the module list lives in agents/__init__.
    import importlib

    from gauntlet.agents import BUILTIN_AGENT_MODULES

    for module in BUILTIN_AGENT_MODULES:
        importlib.import_module(f"gauntlet.agents.{module}")
