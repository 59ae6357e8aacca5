"""Engines that execute a run's attempts: `local` (a thread pool here) and `ray` (Ray tasks)."""

from __future__ import annotations

from gauntlet.engines.attempt import (
    AgentOutcome,
    AttemptOutcome,
    AttemptSpec,
    JudgeSettings,
    agent_stage,
    judge_stage,
    make_attempt,
)
from gauntlet.engines.executor import ENGINES, AttemptWork, EngineName, Executor
from gauntlet.engines.local import LocalExecutor

__all__ = [
    "ENGINES",
    "AgentOutcome",
    "AttemptOutcome",
    "AttemptSpec",
    "AttemptWork",
    "EngineName",
    "Executor",
    "JudgeSettings",
    "LocalExecutor",
    "agent_stage",
    "judge_stage",
    "make_attempt",
]
