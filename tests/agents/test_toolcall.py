"""The toolcall agent against a real loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gauntlet.agents import make_agent
from gauntlet.agents.base import Budget, ModelSettings
from gauntlet.agents.llm import Price, PriceTable
from gauntlet.agents.toolcall import ToolCallAgent
from gauntlet.agents.transcript import (
    AgentFinished,
    ApiErrored,
    ContextTrimmed,
    ModelCalled,
    ToolRan,
    read_event,
    render_transcript,
)
from gauntlet.errors import ConfigError
from tests.support.fake_openai import (
    FakeOpenAI,
    error,
    expect,
    last_tool_output,
    raw_tool_call,
    say,
    tool_call,
)


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def events(path: Path) -> list:
    return [read_event(line) for line in path.read_text().splitlines()]


def run(server: FakeOpenAI, ctx, agent: ToolCallAgent | None = None):  # noqa: ANN001, ANN201
    ctx = ctx.model_copy(
        update={"model": ModelSettings(model="fake-model", base_url=server.base_url)}
    )
    delays: list[float] = []
    agent = agent or ToolCallAgent(sleep=delays.append)
    result = agent.run(ctx)
    assert not server.failures, server.failures
    return result, delays


def test_api_errors_are_retried_with_backoff(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task)
    script = [error(500), error(429, retry_after=7), error(503), tool_call("submit")]
    with FakeOpenAI(script) as server:
        result, delays = run(server, ctx)
    assert result.status == "finished" and result.message == "submitted"
    assert delays == [2.0, 7.0, 8.0]  # doubling from 2 s, Retry-After honoured
    assert len(server.requests) == 4
    assert server.headers[0]["authorization"] == "Bearer test-key"
    assert result.usage.turns == 1 and result.usage.tool_calls == 1
    found = events(ctx.transcript)
    retries = [e for e in found if isinstance(e, ApiErrored)]
    assert [e.retry_in_s for e in retries] == [2.0, 7.0, 8.0]
    assert "HTTP 429" in retries[1].error
    assert [e.attempts for e in found if isinstance(e, ModelCalled)] == [4]


def test_api_gives_up_after_retries_and_on_fatal_errors(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task)
    with FakeOpenAI([error(503)] * 3) as server:
        result, delays = run(server, ctx, ToolCallAgent(max_retries=2, sleep=lambda s: None))
    assert result.status == "error"
    assert "HTTP 503" in result.message and "gave up after 3 tries" in result.message

    ctx, _ = make_context(scale_task)
    with FakeOpenAI([error(401, "invalid api key")]) as server:
        result, delays = run(server, ctx)
    assert result.status == "error" and "HTTP 401" in result.message
    assert "invalid api key" in result.message and delays == []
    assert isinstance(events(ctx.transcript)[-1], AgentFinished)


def test_malformed_tool_calls_get_errors_the_model_can_act_on(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task)
    script = [
        raw_tool_call("write_file", '{"path": "kernel.py", "content": '),
        expect(
            lambda out: "not valid JSON" in out and '"required": ["path", "content"]' in out,
            raw_tool_call("run_shell", "{}"),
            "bad JSON",
        ),
        expect(
            lambda out: "no function 'run_shell'" in out and "write_file" in out,
            raw_tool_call("read_file", '["kernel.py"]'),
            "unknown tool",
        ),
        expect(
            lambda out: "must be a JSON object" in out,
            tool_call("read_file", path=5),
            "not an object",
        ),
        expect(
            lambda out: "'path' of tool 'read_file' must be a string" in out,
            tool_call("view"),
            "wrong type",
        ),
        expect(
            lambda out: "needs 'config'" in out and "usage: view <config>" in out,
            tool_call("read_file", path="../../etc/passwd"),
            "missing argument",
        ),
        expect(lambda out: "outside the workspace" in out, tool_call("submit"), "escape"),
    ]
    with FakeOpenAI(script) as server:
        result, _ = run(server, ctx)
    assert result.status == "finished" and result.usage.tool_calls == 7
    tools = [e for e in events(ctx.transcript) if isinstance(e, ToolRan)]
    assert [t.ok for t in tools] == [False] * 6 + [True]
    assert tools[0].arguments == '{"path": "kernel.py", "content": '
    # Every error went back as a tool message, so the conversation stayed well-formed.
    last = server.requests[-1]["messages"]
    calls = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert calls[:6] == answered


def test_turn_budget(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task, budget=Budget(wall_s=60, turns=3))
    with FakeOpenAI([tool_call("list_files")] * 5) as server:
        result, _ = run(server, ctx)
    assert result.status == "budget_exhausted"
    assert result.message == "turn budget of 3 exhausted"
    assert len(server.requests) == 3 and result.usage.turns == 3


def test_turn_budget_defaults_to_the_task_level(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task)
    with FakeOpenAI([tool_call("list_files")] * 16) as server:
        result, _ = run(server, ctx)
    assert result.message == "turn budget of 15 exhausted" and len(server.requests) == 15
    assert "'turns': 15" not in result.message
    assert f"tools {', '.join(['check', 'test', 'bench', 'view', 'grep'])}" in "\n".join(
        render_transcript(ctx.transcript)
    )


def test_token_and_cost_budgets(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task, budget=Budget(wall_s=60, tokens=250))
    with FakeOpenAI([tool_call("list_files")] * 5) as server:
        result, _ = run(server, ctx)
    assert result.status == "budget_exhausted"
    assert result.message == "token budget of 250 exhausted (360 used)"
    assert (result.usage.tokens_in, result.usage.tokens_out) == (300, 60)

    prices = PriceTable()
    prices.prices["fake-model"] = Price(input_per_mtok=1000.0, output_per_mtok=5000.0)
    ctx, _ = make_context(scale_task, budget=Budget(wall_s=60, cost_usd=0.3))
    with FakeOpenAI([tool_call("list_files")] * 5) as server:
        result, _ = run(server, ctx, ToolCallAgent(prices=prices))
    # Each call costs 100 * 1000e-6 + 20 * 5000e-6 = $0.2.
    assert result.status == "budget_exhausted" and len(server.requests) == 2
    assert result.usage.cost_usd == pytest.approx(0.4)


def test_wall_clock_budget(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task, budget=Budget(wall_s=250))
    ticks = iter(range(0, 100_000, 50))
    agent = ToolCallAgent(clock=lambda: float(next(ticks)))
    with FakeOpenAI([tool_call("list_files")] * 10) as server:
        result, _ = run(server, ctx, agent)
    assert result.status == "timeout" and "250 s" in result.message
    assert 0 < len(server.requests) < 10


def test_text_answers_are_nudged_then_the_agent_stops(scale_task, make_context) -> None:
    ctx, _ = make_context(scale_task)
    with FakeOpenAI([say("thinking"), say("still"), say("bye")]) as server:
        result, _ = run(server, ctx)
    assert result.status == "finished"
    assert result.message == "the model stopped calling tools without submitting"
    assert server.requests[1]["messages"][-1]["role"] == "user"
    assert "call `submit`" in server.requests[1]["messages"][-1]["content"]


def test_old_tool_outputs_are_cut_to_fit_the_context(scale_task, make_context) -> None:
    # Each read returns about 28,000 characters (7,000 tokens at 4 characters a token).
    ctx, ws = make_context(scale_task)
    (ws.path / "big.txt").write_text("\n".join(f"line {i} " + "x" * 60 for i in range(400)))
    script = [*[tool_call("read_file", path="big.txt")] * 4, tool_call("submit")]
    with FakeOpenAI(script) as server:
        result, _ = run(server, ctx, ToolCallAgent(context_tokens=12_000))
    assert result.status == "finished"
    assert any(isinstance(e, ContextTrimmed) for e in events(ctx.transcript))
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert all("cut to fit the context window" in m["content"] for m in tool_messages[:-1])
    assert "cut to fit" not in tool_messages[-1]["content"]  # the latest output stays whole
    assert len(last_tool_output(server.requests[-1])) > 20_000
    assert len(json.dumps(server.requests[-1]["messages"])) < 12_000 * 4  # fits the window


def test_a_context_overflow_error_cuts_further_and_retries(scale_task, make_context) -> None:
    ctx, ws = make_context(scale_task)
    (ws.path / "big.txt").write_text("\n".join(f"line {i} " + "x" * 60 for i in range(400)))
    overflow = error(
        400, "This model's maximum context length is 8192 tokens", code="context_length_exceeded"
    )
    script = [*[tool_call("read_file", path="big.txt")] * 4, overflow, tool_call("submit")]
    with FakeOpenAI(script) as server:
        result, _ = run(server, ctx, ToolCallAgent(context_tokens=64_000))
    assert result.status == "finished" and result.usage.turns == 5
    kinds = [type(e).__name__ for e in events(ctx.transcript)]
    assert kinds.index("ApiErrored") < kinds.index("ContextTrimmed")
    sizes = [len(json.dumps(r["messages"])) for r in server.requests]
    assert sizes[-1] < sizes[-2] / 2  # the retry sent a prompt cut well below the failed one


def test_configuration_errors(scale_task, make_context, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, _ = make_context(scale_task, model=ModelSettings())
    with pytest.raises(ConfigError, match="needs a model"):
        ToolCallAgent().run(ctx)
    monkeypatch.delenv("OPENAI_API_KEY")
    ctx, _ = make_context(scale_task)
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        ToolCallAgent().run(ctx)
    with pytest.raises(ConfigError, match="bad option 'colour=red'"):
        make_agent("toolcall:colour=red")


def test_price_table_file(tmp_path: Path) -> None:
    table_file = tmp_path / "prices.toml"
    table_file.write_text("[my-model]\ninput_per_mtok = 1.0\noutput_per_mtok = 3.0\n")
    agent = make_agent(f"toolcall:prices={table_file},context=4096")
    assert isinstance(agent, ToolCallAgent) and agent.context_tokens == 4096
    assert agent.prices.cost_usd("my-model", 1_000_000, 1_000_000) == pytest.approx(4.0)
    assert agent.prices.price("openai/gpt-4o-2024-08-06") == agent.prices.prices["gpt-4o"]
    table_file.write_text("[my-model]\ninput_per_mtok = -1\noutput_per_mtok = 3.0\n")
    with pytest.raises(ConfigError, match="price of 'my-model'"):
        make_agent(f"toolcall:prices={table_file}")
