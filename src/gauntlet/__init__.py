"""Kernel Gauntlet: a benchmark and harness for AI agents that write compute kernels.

The public API, loaded on first use so that `import gauntlet` stays light (no PyTorch, no GPU,
no network until a function that needs them is called). Anything not listed in `__all__` may
change without notice.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # tasks
    "Task": "gauntlet.task",
    "TaskSpec": "gauntlet.task",
    "Config": "gauntlet.task",
    "load_task": "gauntlet.task",
    "select_tasks": ("gauntlet.suites", "select"),
    "load_task_by_id": ("gauntlet.suites", "load_by_id"),
    "check_task": "gauntlet.taskcheck",
    # judging
    "judge": "gauntlet.judge.pipeline",
    "Judge": "gauntlet.judge.service",
    "Verdict": "gauntlet.judge.verdict",
    "ConfigResult": "gauntlet.judge.verdict",
    "Timing": "gauntlet.judge.verdict",
    # devices
    "list_devices": "gauntlet.devices",
    # agents
    "Agent": "gauntlet.agents.base",
    "AgentContext": "gauntlet.agents.base",
    "AgentResult": "gauntlet.agents.base",
    "Budget": "gauntlet.agents.base",
    "Usage": "gauntlet.agents.base",
    "agent": "gauntlet.agents.base",
    "agent_names": "gauntlet.agents.base",
    "make_agent": "gauntlet.agents.base",
    "build_workspace": "gauntlet.workspace",
    # runs
    "RunConfig": "gauntlet.runner",
    "start_run": "gauntlet.runner",
    "resume_run": "gauntlet.runner",
    "RunStore": "gauntlet.store",
    "AttemptRecord": "gauntlet.store",
    # scores and reports
    "score_run": "gauntlet.score",
    "compare_runs": "gauntlet.compare",
    "write_report": "gauntlet.report",
    "leaderboard": "gauntlet.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'gauntlet' has no attribute '{name}'")
    module_name, attribute = target if isinstance(target, tuple) else (target, name)
    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
