"""Fixtures of the agent tests: a tiny task, a built workspace and an agent context for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gauntlet import suites
from gauntlet.agents.base import AgentContext, Budget, ModelSettings
from gauntlet.task import Task, load_task
from gauntlet.workspace import Workspace, build_workspace

TASK_DIR = Path(__file__).parent / "task_scale"
REPO = Path(__file__).resolve().parents[2]

MakeContext = Callable[..., tuple[AgentContext, Workspace]]
MakeAccelContext = Callable[..., AgentContext]


@pytest.fixture
def scale_task() -> Task:
    """`test/scale`: y = 2x + 1 in Triton, one hidden config (n = 7777), an expert."""
    return load_task(TASK_DIR)


@pytest.fixture
def make_context(tmp_path: Path) -> MakeContext:
    """Build a workspace for a task and the context an agent gets for it."""
    counter = iter(range(1000))

    def make(
        task: Task,
        *,
        budget: Budget | None = None,
        model: ModelSettings | None = None,
        attempt: str | None = None,
    ) -> tuple[AgentContext, Workspace]:
        name = attempt or f"attempt-{next(counter)}"
        budget = budget or Budget(wall_s=120)
        workspace = build_workspace(
            task, tmp_path / name / "workspace", device="cpu", budget=budget
        )
        ctx = AgentContext(
            task=task,
            workspace=workspace.path,
            brief=workspace.brief,
            budget=budget,
            model=model or ModelSettings(model="fake-model"),
            device="cpu",
            transcript=tmp_path / name / "transcript.jsonl",
            seed=3,
        )
        return ctx, workspace

    return make


@pytest.fixture
def accel_context(tmp_path: Path) -> MakeAccelContext:
    """A workspace and context for `accel/npu/relu` on `sim:npu`, in a fresh attempt folder."""

    def make(base_url: str, budget: Budget | None = None, name: str = "attempt") -> AgentContext:
        task = suites.load_by_id("accel/npu/relu")
        budget = budget or Budget(wall_s=300)
        workspace = build_workspace(
            task, tmp_path / name / "ws" / "workspace", device="sim:npu", budget=budget
        )
        return AgentContext(
            task=task,
            workspace=workspace.path,
            brief=workspace.brief,
            budget=budget,
            model=ModelSettings(model="fake-model", base_url=base_url),
            device="sim:npu",
            transcript=tmp_path / name / "run" / "transcript.jsonl",
            seed=7,
        )

    return make
