"""`gauntlet agents` and `gauntlet show`, the latter on an attempt made by the real runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from gauntlet._cli import agents as agents_cli
from gauntlet.agents.base import Budget, ModelSettings
from gauntlet.errors import UnknownNameError
from gauntlet.runner import Job, RunConfig, run_attempt
from gauntlet.store import RunInfo, RunStore, now
from tests.support.fake_openai import FakeOpenAI, expect, tool_call

FAKES = Path(__file__).resolve().parents[1] / "support" / "fake_cli"


def cli() -> typer.Typer:
    app = typer.Typer()
    agents_cli.register(app)
    return app


def test_agents_lists_what_is_usable_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.delenv("CURSOR_API_KEY", raising=False)
    # Wide enough for a checkout path of any length: the console took its width from COLUMNS
    # when it was made, before this test (a 139-character checkout wrapped the path at 80).
    monkeypatch.setattr(agents_cli, "out", Console(width=1000, highlight=False, soft_wrap=True))
    result = CliRunner().invoke(cli(), ["agents"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if "│" in line}
    assert "yes" in rows["claude-code"] and str(FAKES / "claude") in rows["claude-code"]
    assert "no" in rows["cursor"] and "set CURSOR_API_KEY" in rows["cursor"]
    assert "needs a command" in rows["generic"]
    assert "yes" in rows["toolcall"] and "yes" in rows["none"]


def test_show_prints_the_transcript_and_the_verdict(
    scale_task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    expert = scale_task.path("expert/kernel.py").read_text()
    script = [
        tool_call("write_file", path="kernel.py", content=expert),
        expect(lambda out: out.startswith("wrote"), tool_call("submit")),
    ]
    store = RunStore(tmp_path / "run")
    with FakeOpenAI(script) as server:
        config = RunConfig(
            agents=["toolcall"],
            model=ModelSettings(model="fake-model", base_url=server.base_url),
            budget=Budget(wall_s=300),
        )
        store.create(
            RunInfo(
                run_id="run",
                created_at=now(),
                task_ids=[scale_task.task_id],
                agents=["toolcall"],
                device="cpu",
                budget=config.budget,
                seed_hash="-",
            )
        )
        job = Job(task=scale_task, agent="toolcall", index=0, device="cpu")
        record = run_attempt(store, job, config, secret=77)
        store.append(record)
    assert not server.failures, server.failures
    assert (record.status, record.agent_status) == ("pass", "finished")
    assert record.usage.turns == 2 and record.usage.tool_calls == 2
    assert record.workspace_changes == {"kernel.py": "modified"}

    result = CliRunner().invoke(
        cli(), ["show", str(store.root), record.attempt_id], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    text = result.output
    assert record.attempt_id in text and "agent finished: submitted" in text
    assert "2 turns, 2 tool calls, 200 in / 40 out tokens" in text
    assert "[1] assistant calls write_file" in text and "[2] submit -> ok:" in text
    assert "== finished: finished: submitted" in text
    assert "verdict: pass" in text and "H1 (n=7777" in text

    missing = CliRunner().invoke(cli(), ["show", str(store.root), "nope"])
    assert isinstance(missing.exception, UnknownNameError)
    assert record.attempt_id in str(missing.exception)
