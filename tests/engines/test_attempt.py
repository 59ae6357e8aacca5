"""The judge stage reads the contract's files as the agent left them, wherever it runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gauntlet.agents.base import AgentContext, AgentResult, Budget, ModelSettings
from gauntlet.engines import attempt
from gauntlet.engines.attempt import AttemptSpec, _rebuild_submission, _submitted
from gauntlet.judge.pipeline import read_submission
from tests.support.fixtures import SCALE_ADD, with_spec


@pytest.mark.parametrize(
    "layout",
    ["file", "link", "linked_folder", "missing", "folder", "oversized"],
)
def test_a_rebuilt_submission_gets_the_same_reading_as_the_workspace(
    tmp_path: Path, layout: str
) -> None:
    base = SCALE_ADD()
    task = with_spec(
        base,
        submission=base.spec.submission.model_copy(
            update={"files": ["kernel.py", "sub/extra.py"], "max_bytes": 64}
        ),
    )
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "kernel.py").write_text("x = 1\n")
    (workspace / "elsewhere").mkdir()
    (workspace / "elsewhere" / "extra.py").write_text("y = 2\n")
    extra = workspace / "sub" / "extra.py"
    if layout == "file":
        extra.write_text("y = 2\n")
    elif layout == "link":
        os.symlink("../elsewhere/extra.py", extra)
    elif layout == "linked_folder":
        (workspace / "sub").rmdir()
        os.symlink("elsewhere", workspace / "sub")
    elif layout == "folder":
        extra.mkdir()
    elif layout == "oversized":
        extra.write_text("#" * 100)
    files = [_submitted(workspace, name, task) for name in task.spec.submission.files]
    rebuilt = tmp_path / "rebuilt"
    _rebuild_submission(files, rebuilt)
    here = read_submission(task, workspace)
    there = read_submission(task, rebuilt)
    assert (here[1], here[2].replace(str(workspace), "")) == (
        there[1],
        there[2].replace(str(rebuilt), ""),
    )
    if layout == "file":
        assert here[0] is not None and there[0] is not None
        assert here[0].files == there[0].files
    else:
        assert here[1] != "pass"


@pytest.mark.parametrize("agent", ["baseline", "expert", "replay"])
def test_only_agents_that_copy_the_tasks_own_files_run_in_the_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    task = SCALE_ADD()
    children: list[str] = []

    def child(spec: str, ctx: AgentContext) -> AgentResult:
        children.append(spec)
        return AgentResult(status="finished", message="ran in a child")

    monkeypatch.setattr(attempt, "run_in_child", child)
    (tmp_path / "kernel.py").write_text("x = 1\n")
    spec = AttemptSpec(
        run_id="run",
        attempt_id=f"a--{agent}--0",
        agent=agent if agent != "replay" else f"replay:{tmp_path}",
        index=0,
        device="cpu",
        model=ModelSettings(),
        budget=Budget(),
        attempt_dir=tmp_path / "attempt",
    )
    outcome = attempt.agent_stage(task, spec)
    if agent == "replay":  # it reads a folder the user names: under its budget, in a child
        assert children == [spec.agent] and outcome.result.message == "ran in a child"
        return
    assert children == [] and outcome.result.status == "finished"
    expected = task.baseline_files() if agent == "baseline" else task.expert_files()
    assert expected is not None
    assert {f.name: f.data.decode() for f in outcome.submission} == expected
    assert (tmp_path / "attempt" / "transcript.jsonl").is_file()
