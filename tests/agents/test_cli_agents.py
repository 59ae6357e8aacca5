"""CLI agents against fake binaries on PATH that emulate each CLI's headless output."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from gauntlet import sandbox
from gauntlet.agents import cli_agents, make_agent
from gauntlet.agents.base import Budget, ModelSettings
from gauntlet.agents.cli_agents import CLIAgent
from gauntlet.agents.llm import Price
from gauntlet.agents.transcript import render_transcript
from gauntlet.errors import ConfigError
from gauntlet.judge import judge
from gauntlet.workspace import workspace_changes

FAKES = Path(__file__).resolve().parents[1] / "support" / "fake_cli"
KEYS = (
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "CURSOR_API_KEY",
    "DEEPSEEK_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
)


@pytest.fixture(autouse=True)
def fake_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GAUNTLET_LEAK_CHECK", "must-not-reach-the-agent")
    for key in (*KEYS, "GAUNTLET_SANDBOX", "GAUNTLET_SANDBOX_NETWORK"):
        monkeypatch.delenv(key, raising=False)


def facts(transcript: Path) -> dict:
    """The command line and environment the fake recorded in its first lines."""
    for line in transcript.read_text().splitlines():
        event = json.loads(line)
        if "argv" in event:
            return event
        if event.get("type") == "text" and event["text"].startswith("FACTS "):
            return json.loads(event["text"][len("FACTS ") :])
    raise AssertionError("the fake recorded no facts")


def tool_log(transcript: Path) -> list[dict]:
    # Kept with the attempt's transcript, outside the workspace.
    log = transcript.parent / "tool-calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


CASES = {
    "claude-code": (
        "ANTHROPIC_API_KEY",
        [
            ["-p"],
            ["--output-format", "stream-json", "--verbose", "--include-partial-messages"],
            ["--max-turns", "15", "--permission-mode", "acceptEdits", "--allowedTools"],
            ["--model", "solve"],
            ["--max-budget-usd", "2.5"],
        ],
        # two calls streamed: input 100 + 50 cache read + 10 cache write, output 20 each;
        # priced from the table (its own $0.0123 is the fallback for an unpriced model)
        {"turns": 2, "tokens_in": 320, "tokens_cached": 120, "tokens_out": 40, "cost_usd": 0.0004},
        "check",
    ),
    "codex": (
        "OPENAI_API_KEY",
        [
            ["exec", "--json", "--skip-git-repo-check", "--color", "never"],
            ["--dangerously-bypass-approvals-and-sandbox", "-C"],
            ["-m", "solve"],
            ["-c", 'model_provider="gauntlet"'],
            ["-c", 'model_providers.gauntlet.base_url="https://api.openai.com/v1"'],
            ["-c", 'model_providers.gauntlet.wire_api="responses"'],
            ["-c", 'model_providers.gauntlet.env_key="OPENAI_API_KEY"'],
        ],
        # three token_usage_records in its rollout (the reasoning item is no call of its own)
        {
            "turns": 3,
            "tokens_in": 1200,
            "tokens_cached": 300,
            "tokens_out": 300,
            "cost_usd": 0.0018,
        },
        "check",
    ),
    "cursor": (
        "CURSOR_API_KEY",
        [["-p"], ["--output-format", "stream-json", "--force"], ["--model", "solve"]],
        {"turns": 2, "tokens_in": 500, "tokens_out": 60, "cost_usd": 0.00062},
        "check",
    ),
    "aider": (
        "OPENAI_API_KEY",
        [
            ["--yes-always", "--no-git", "--no-auto-commits", "--no-pretty", "--no-stream"],
            ["--analytics-disable", "--analytics-log"],
            ["--no-auto-lint", "--read", "TASK.md", "--file", "kernel.py"],
            ["--test-cmd", "gauntlet-ws test", "--auto-test"],
            ["--model", "solve"],
        ],
        # two message_send events in its analytics log, exact where its printed lines round
        {"turns": 2, "tokens_in": 5453, "tokens_out": 320, "cost_usd": 0.006093},
        "test",
    ),
}


def contains(argv: list[str], part: list[str]) -> bool:
    return any(argv[i : i + len(part)] == part for i in range(len(argv)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_agent_headless_run(
    name: str, scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, argv_parts, expected_usage, tool = CASES[name]
    monkeypatch.setenv(key, f"fake-{key.lower()}")
    ctx, ws = make_context(
        scale_task, budget=Budget(wall_s=120, cost_usd=2.5), model=ModelSettings(model="solve")
    )
    agent = make_agent(name)
    assert isinstance(agent, CLIAgent)
    agent.prices.prices["solve"] = Price(input_per_mtok=1.0, output_per_mtok=2.0)
    result = agent.run(ctx)
    assert (result.status, result.message) == ("finished", f"{name} exited normally"), result
    assert result.transcript == ctx.transcript

    recorded = facts(ctx.transcript)
    argv = recorded["argv"]
    for part in argv_parts:
        assert contains(argv, part), (part, argv)
    prompt_flag = {"aider": "--message", "codex": None}.get(name, "-p")
    prompt = argv[argv.index(prompt_flag) + 1] if prompt_flag else argv[-1]
    assert "TASK.md" in prompt and ws.brief in prompt
    assert recorded["cwd"] == str(ws.path)

    env = recorded["env"]
    assert env[key] == f"fake-{key.lower()}"
    assert "GAUNTLET_LEAK_CHECK" not in env
    assert env["HOME"] != os.environ.get("HOME") and not env["HOME"].startswith(str(ws.path))
    assert env["GAUNTLET_WS_SOCKET"].endswith("ws.sock")
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)

    usage = result.usage.model_dump()
    for field, value in expected_usage.items():
        assert usage[field] == pytest.approx(value), (field, usage)
    assert result.usage.tool_calls == 1 and result.usage.wall_s > 0

    # The fake edited the kernel and reached the tool server through gauntlet-ws.
    marker = "cursor" if name == "cursor" else name.split("-")[0]
    assert f"# edited by {marker}" in (ws.path / "kernel.py").read_text()
    assert workspace_changes(ws) == {"kernel.py": "modified"}
    calls = tool_log(ctx.transcript)
    assert [(c["caller"], c["tool"], c["ok"]) for c in calls] == [(name, tool, True)]
    rendered = "\n".join(render_transcript(ctx.transcript))
    assert ("All checks passed" if tool == "check" else "status: pass") in rendered


def test_codex_and_aider_transcripts_are_kept_line_by_line(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    ctx, _ = make_context(scale_task, model=ModelSettings(model="solve"))
    make_agent("codex").run(ctx)
    kinds = [json.loads(line)["type"] for line in ctx.transcript.read_text().splitlines()]
    assert kinds == ["thread.started", "turn.started"] + ["item.completed"] * 4 + ["turn.completed"]


def test_missing_binary_or_key_names_the_remedy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli_agents, "CLIENTS_DIR", tmp_path)  # no `make clients` install either
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN"):
        make_agent("claude-code")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with pytest.raises(ConfigError, match=r"'claude'.*npm install -g @anthropic-ai/claude-code"):
        make_agent("claude-code")
    with pytest.raises(ConfigError, match="'cursor-agent' command"):
        make_agent("cursor")
    with pytest.raises(ConfigError, match="bad option 'turbo=on'"):
        make_agent("codex:turbo=on")
    with pytest.raises(ConfigError, match="unknown sandbox 'vm'"):
        make_agent("aider:sandbox=vm")
    with pytest.raises(ConfigError, match="needs a command"):
        make_agent("generic")
    with pytest.raises(ConfigError, match="'no-such-agent-binary' command"):
        make_agent("generic:no-such-agent-binary --flag")


def test_agent_failure_is_reported_with_its_stderr(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSOR_API_KEY", "k")
    ctx, _ = make_context(scale_task, model=ModelSettings(model="fail"))
    result = make_agent("cursor").run(ctx)
    assert result.status == "error"
    assert "exited with code 3" in result.message and "refused the key" in result.message
    assert "refused the key" in ctx.transcript.with_suffix(".stderr.txt").read_text()


def test_claude_max_turns_is_budget_exhausted(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    ctx, _ = make_context(scale_task, model=ModelSettings(model="max-turns"))
    result = make_agent("claude-code").run(ctx)
    assert result.status == "budget_exhausted" and "error_max_turns" in result.message
    assert result.usage.cost_usd == pytest.approx(0.5)  # its own figure: no price for the model


def test_token_budget_kills_the_agent_from_outside(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    ctx, _ = make_context(
        scale_task, budget=Budget(wall_s=60, tokens=2000), model=ModelSettings(model="spend")
    )
    started = time.monotonic()
    result = make_agent("claude-code").run(ctx)
    assert time.monotonic() - started < 30
    assert result.status == "budget_exhausted"
    assert result.message.startswith("token budget of 2000 exhausted (2000 used)")
    assert result.usage.turns == 4


def test_turn_budget_kills_the_agent_from_outside(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    ctx, _ = make_context(
        scale_task, budget=Budget(wall_s=60, turns=5), model=ModelSettings(model="spend")
    )
    result = make_agent("codex").run(ctx)
    assert result.status == "budget_exhausted"
    assert result.message.startswith("turn budget of 5 exhausted (6 model calls)")


def test_runaway_agent_is_killed_at_its_wall_budget_and_its_partial_work_judged(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSOR_API_KEY", "k")
    ctx, ws = make_context(
        scale_task, budget=Budget(wall_s=4), model=ModelSettings(model="runaway")
    )
    started = time.monotonic()
    result = make_agent("cursor").run(ctx)
    assert time.monotonic() - started < 20
    assert result.status == "timeout" and "4 s exhausted" in result.message
    record = next(
        json.loads(line)
        for line in ctx.transcript.read_text().splitlines()
        if "children" in json.loads(line)
    )
    assert len(record["children"]) == 2  # one stayed in the agent's group, one left it

    def alive() -> list[psutil.Process]:
        found = [
            p
            for p in psutil.process_iter(["cmdline"])
            if record["token"] in (p.info["cmdline"] or [])
        ]
        return [p for p in found if p.status() != psutil.STATUS_ZOMBIE]

    deadline = time.monotonic() + 10  # SIGKILL is delivered asynchronously
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive() == []
    assert "# edited by cursor (partial)" in (ws.path / "kernel.py").read_text()
    verdict = judge(scale_task, ws.path, device="cpu", seed=5, mode="final")
    assert verdict.status == "pass", verdict.reason


@pytest.mark.skipif(sandbox.availability("bwrap") is not None, reason="bwrap is not usable here")
def test_cli_agent_under_bwrap(scale_task, make_context, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    ctx, ws = make_context(scale_task, model=ModelSettings(model="solve"))
    result = make_agent("claude-code:sandbox=bwrap,network=off").run(ctx)
    assert result.status == "finished", result.message
    assert "# edited by claude" in (ws.path / "kernel.py").read_text()
    assert [(c["tool"], c["ok"]) for c in tool_log(ctx.transcript)] == [("check", True)]


def test_generic_command_placeholders_stdin_and_usage_lines(scale_task, make_context) -> None:
    code = (
        "import json, sys\n"
        "prompt = sys.stdin.read()\n"
        "seen = {'args': sys.argv[1:], 'stdin_has_brief': 'TASK.md' in prompt}\n"
        "print(json.dumps({'type': 'seen', **seen}))\n"
        "print('plain text line')\n"
        "print(json.dumps({'type': 'usage', 'turns': 1, 'tokens_in': 10, 'tokens_out': 1}))\n"
        "usage = {'turns': 4, 'tokens_in': 900, 'tokens_out': 90, 'cost_usd': 0.25}\n"
        "print(json.dumps({'type': 'usage', **usage}))\n"
    )
    ctx, ws = make_context(scale_task, model=ModelSettings(model="m1"))
    program = ws.path.parent / "agent.py"
    program.write_text(code)
    agent = make_agent(f"generic:{sys.executable} {program} {{workspace}} {{model}} {{turns}}")
    result = agent.run(ctx)
    assert result.status == "finished", result.message
    assert (result.usage.turns, result.usage.tokens_in, result.usage.tokens_out) == (4, 900, 90)
    assert result.usage.cost_usd == pytest.approx(0.25)
    lines = [json.loads(line) for line in ctx.transcript.read_text().splitlines()]
    assert lines[0] == {"type": "seen", "args": [str(ws.path), "m1", "15"], "stdin_has_brief": True}
    assert lines[1] == {"type": "text", "text": "plain text line"}


def test_a_client_missing_where_the_attempt_runs_is_an_agent_error_with_the_remedy(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run's pre-flight found it, the attempt's own process (another host, say) does not:
    # the remedy is the agent's message, and the untouched template is never judged.
    from gauntlet.agents.child import run_in_child

    ctx, ws = make_context(scale_task)
    result = run_in_child("generic:sandbox=none:no-such-client-4711 -p x", ctx)
    assert result.status == "error"
    assert result.message.startswith(
        "the agent could not start: agent 'generic' needs the 'no-such-client-4711' command"
    ), result.message
    assert "Traceback" not in result.message
    assert workspace_changes(ws) == {}


def test_a_client_gone_before_its_start_is_an_error_naming_it(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    client = tmp_path / "bin" / "claude"
    client.parent.mkdir()
    client.write_text("#!/bin/sh\n")
    client.chmod(0o755)
    monkeypatch.setenv("PATH", f"{client.parent}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    agent = make_agent("claude-code:sandbox=none")
    client.unlink()
    ctx, _ = make_context(scale_task)
    result = agent.run(ctx)
    assert result.status == "error"
    assert result.message.startswith(f"claude-code could not be started ({client})"), result.message


def test_a_client_that_exits_normally_without_calling_its_model_is_an_error(
    scale_task, make_context, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    ctx, ws = make_context(scale_task, model=ModelSettings(model="silent"))
    result = make_agent("claude-code:sandbox=none").run(ctx)
    assert result.status == "error", result
    assert result.message.startswith("claude-code exited normally without calling its model")
    assert workspace_changes(ws) == {}
