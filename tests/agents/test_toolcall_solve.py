"""Whole solves: the toolcall agent, driven by a scripted loopback model, solves tasks.

The model reads the files, writes a kernel with a mistake, checks it and gets the build error,
fixes it, passes the visible tests and submits; then the judge, in final mode on visible and
hidden configs, passes the submission. The fix is the task's expert solution, the mistake a
line the compiler (or assembler) rejects. GPU tracks go through `check` and `test`; `accel`
through its own tools: the manual, `check_syntax`, `run_eval` and `profile`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gauntlet.agents.base import AgentContext, Budget, ModelSettings
from gauntlet.agents.toolcall import ToolCallAgent
from gauntlet.agents.transcript import ToolRan, read_event
from gauntlet.judge import judge
from gauntlet.task import Task, load_task
from gauntlet.workspace import build_workspace, workspace_changes
from tests.support.fake_openai import FakeOpenAI, Step, expect, tool_call
from tests.support.fixtures import SCALE_ADD

REPO = Path(__file__).resolve().parents[2]
BROKEN = {"triton": "\n\ndef broken(:\n    pass\n", "asm": "\nthis_is_not_an_instruction r99, #\n"}


def suite_task(folder: str) -> Task:
    path = REPO / "tasks" / folder
    if not (path / "task.toml").is_file():
        pytest.skip(f"waiting for task 'tasks/{folder}' in the suite")
    return load_task(path)


def gpu_feedback(name: str, fixed: str) -> list[Step]:
    """Check (the build fails), fix, check, test on the visible configs."""
    return [
        expect(lambda out: out.startswith("wrote"), tool_call("check"), "write"),
        expect(
            lambda out: re.search(r"(contract|guards|build): failed", out) is not None,
            tool_call("write_file", path=name, content=fixed),
            "the build error",
        ),
        tool_call("check"),
        expect(lambda out: "All checks passed" in out, tool_call("test"), "fixed build"),
        expect(lambda out: out.startswith("status: pass"), tool_call("submit"), "visible pass"),
    ]


def accel_feedback(name: str, fixed: str) -> list[Step]:
    """Check the syntax (an error), look the instruction up, fix, check, eval, profile."""
    return [
        expect(lambda out: out.startswith("wrote"), tool_call("check_syntax"), "write"),
        expect(
            lambda out: (
                re.search(r"line \d+, col \d+: error: ", out) is not None
                and "Found problems. 1 error(s)" in out
            ),
            tool_call("grep_manual", pattern="vmaxs"),
            "the assembler's error",
        ),
        expect(
            lambda out: "Format: `vmaxs [vd], [va], fs`" in out,
            tool_call("write_file", path=name, content=fixed),
            "the manual's entry",
        ),
        tool_call("check_syntax", config="C4"),
        expect(
            lambda out: out.startswith("All checks passed. 0 error(s)"),
            tool_call("run_eval"),
            "fixed syntax",
        ),
        expect(
            lambda out: out.endswith("5/5 visible configs correct") and "matching elements" in out,
            tool_call("profile", config="C1"),
            "visible eval",
        ),
        expect(
            lambda out: "roofline bound" in out and "stall cycles by cause" in out,
            tool_call("submit"),
            "profile",
        ),
    ]


#: Per submission language: the feedback part of the script, and the tools it calls, with ok.
FEEDBACK = {
    "triton": (
        gpu_feedback,
        [("check", False), ("write_file", True), ("check", True), ("test", True)],
    ),
    "asm": (
        accel_feedback,
        [
            ("check_syntax", False),
            ("grep_manual", True),
            ("write_file", True),
            ("check_syntax", True),
            ("run_eval", True),
            ("profile", True),
        ],
    ),
}


def solve_script(task: Task) -> list[Step]:
    name = task.spec.submission.files[0]
    assert task.spec.expert is not None
    fixed = task.path(task.spec.expert.files[name]).read_text()
    broken = fixed + BROKEN[task.spec.submission.language]
    feedback, _ = FEEDBACK[task.spec.submission.language]
    opening: list[Step] = [
        tool_call("list_files"),
        expect(lambda out: "TASK.md" in out, tool_call("read_file", path="TASK.md"), "files"),
        expect(
            lambda out: "Visible configurations" in out and "cannot see" in out,
            tool_call("read_file", path=name),
            "brief",
        ),
        tool_call("write_file", path=name, content=broken),
    ]
    return opening + feedback(name, fixed)


def solve(task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    device = task.spec.device_kinds()[0]
    budget = Budget(wall_s=600)
    workspace = build_workspace(task, tmp_path / "workspace", device=device, budget=budget)
    with FakeOpenAI(solve_script(task)) as server:
        ctx = AgentContext(
            task=task,
            workspace=workspace.path,
            brief=workspace.brief,
            budget=budget,
            model=ModelSettings(model="fake-model", base_url=server.base_url),
            device=device,
            transcript=tmp_path / "transcript.jsonl",
        )
        result = ToolCallAgent().run(ctx)
    assert not server.failures, server.failures
    assert (result.status, result.message) == ("finished", "submitted")
    script = solve_script(task)
    assert result.usage.turns == result.usage.tool_calls == len(script)
    tools = [
        e
        for e in map(read_event, ctx.transcript.read_text().splitlines())
        if isinstance(e, ToolRan)
    ]
    _, feedback_tools = FEEDBACK[task.spec.submission.language]
    assert [(t.name, t.ok) for t in tools][3:] == [
        ("write_file", True),
        *feedback_tools,
        ("submit", True),
    ]
    name = task.spec.submission.files[0]
    assert workspace_changes(workspace)[name] in ("modified", "added")
    verdict = judge(task, workspace.path, device=device, seed=20240611, mode="final")
    assert verdict.status == "pass", verdict.reason
    assert verdict.hidden_correct is True


def test_toolcall_solves_a_triton2triton_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fixture task: the loop is the same as on a suite task, at a fraction of the
    # interpreter's time (the softmax task took 31 s of CI's budget).
    solve(SCALE_ADD(), tmp_path, monkeypatch)


def test_toolcall_solves_an_accel_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    solve(suite_task("accel/npu/relu"), tmp_path, monkeypatch)
