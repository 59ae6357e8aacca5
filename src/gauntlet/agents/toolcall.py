"""`toolcall`: the built-in function-calling agent, over any OpenAI-compatible endpoint.

The agent talks to a model through chat completions with the workspace's tools as functions
(`gauntlet.agents.tools`): it reads and writes files, greps the docs (and the ISA manual for
accel), checks, tests, benchmarks, views output diffs and submits. It stops when it submits,
when the model stops calling tools, or when a budget runs out: turns (model calls; 15 / 20 / 25
by task level unless set), tokens, dollars (from the price table) or wall clock. Malformed tool
calls are answered with an error the model can act on; old tool outputs are cut when the
conversation would no longer fit the context window. Every step is a typed event in the
attempt's JSONL transcript.

Options (`toolcall:key=value,...`): `prices` (a price table file), `context` (the model's
context window in tokens), `retries` (retries of a failed API call).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gauntlet.agents.base import (
    AgentContext,
    AgentResult,
    AgentStatus,
    ModelSettings,
    Usage,
    agent,
)
from gauntlet.agents.llm import (
    MAX_RETRIES,
    ChatClient,
    Completion,
    ModelAPIError,
    PriceTable,
    agent_client,
    check_reachable,
)
from gauntlet.agents.options import number, parse_options
from gauntlet.agents.tools import Toolbox, ToolSpec
from gauntlet.agents.transcript import (
    AgentFinished,
    AgentStarted,
    ApiErrored,
    ContextTrimmed,
    MessageAdded,
    ModelCalled,
    ToolRan,
    TranscriptWriter,
)
from gauntlet.errors import ConfigError
from gauntlet.workspace import turn_limit

logger = logging.getLogger(__name__)

OPTIONS = {
    "prices": "a TOML or JSON price table file (model = {input_per_mtok, output_per_mtok})",
    "context": "the model's context window in tokens (default 65536)",
    "retries": f"retries of a failed model API call (default {MAX_RETRIES})",
}
DEFAULT_CONTEXT_TOKENS = 65_536
#: Share of the context window the prompt may fill; the rest is left for the answer.
PROMPT_SHARE = 0.75
#: Characters per token, for estimating the prompt's size.
CHARS_PER_TOKEN = 4
#: Characters kept of a cut tool output.
TRIMMED_KEEP_CHARS = 400
#: Answers without a tool call that are met with a reminder before the agent stops.
MAX_NUDGES = 2
#: Longest single HTTP request to the model, in seconds.
REQUEST_TIMEOUT_S = 600.0

SYSTEM_PROMPT = """\
You are an expert kernel engineer. You work in a workspace folder through the functions you are
given: read and write files, search the documents, check, test and benchmark your kernel on the
visible configurations. Write a kernel that is correct on every configuration (including ones you
cannot see) and as fast as you can make it. When you are done, call `submit`. The task brief
(TASK.md) follows.

"""
START_PROMPT = (
    "Begin. Read the files you need, write the kernel, check and test it, and call `submit` "
    "when the visible tests pass and you cannot make it faster."
)
NUDGE_PROMPT = (
    "Continue by calling one of the functions. When you are done, call `submit`; "
    "the files in the workspace as they are then are your submission."
)


class ToolCallAgent:
    """The function-calling agent."""

    name = "toolcall"

    def __init__(
        self,
        *,
        prices: PriceTable | None = None,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        max_retries: int = MAX_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """An agent; `sleep` (retry backoff) and `clock` (wall budget) are injectable for tests."""
        self.prices = prices if prices is not None else PriceTable()
        self.context_tokens = context_tokens
        self.max_retries = max_retries
        self._sleep = sleep
        self._clock = clock

    def availability(self) -> str | None:
        """None when usable here, else what is missing."""
        try:
            import openai  # noqa: F401
        except ImportError:
            return "the openai package is missing: pip install 'openai>=1.40'"
        return None

    def preflight(self, model: ModelSettings) -> None:
        """Check, before a run's first attempt, that the agent can work at all.

        Raises:
            ConfigError: No model is named, no API key is set for the default endpoint, the
                endpoint does not answer, or it refuses the key.
        """
        check_reachable("toolcall", self._client(model))

    def _client(self, model: ModelSettings) -> ChatClient:
        return agent_client(
            "toolcall",
            model.model,
            base_url=model.base_url,
            temperature=model.temperature,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )

    def run(self, ctx: AgentContext) -> AgentResult:
        """Solve the task in `ctx.workspace` until it submits or a budget runs out.

        Raises:
            ConfigError: No model is named, or no API key is set for the default endpoint.
        """
        client = self._client(ctx.model)
        writer = TranscriptWriter(ctx.transcript)
        try:
            return _Session(self, ctx, client, writer).run()
        finally:
            writer.close()


class _Session:
    """One attempt's conversation."""

    def __init__(
        self, owner: ToolCallAgent, ctx: AgentContext, client: ChatClient, writer: TranscriptWriter
    ) -> None:
        self.owner = owner
        self.ctx = ctx
        self.client = client
        self.writer = writer
        # The call log is kept with the attempt's transcript, outside the workspace.
        self.toolbox = Toolbox(
            ctx.task,
            ctx.workspace,
            device=ctx.device,
            seed=ctx.seed,
            log_path=ctx.transcript.parent / "tool-calls.jsonl",
        )
        self.specs: list[ToolSpec] = self.toolbox.specs()
        self.tools = [t.openai_tool() for t in self.specs]
        self.max_turns = turn_limit(ctx.task, ctx.budget)
        self.usage = Usage()
        self.messages: list[dict[str, Any]] = []
        self.context_tokens = owner.context_tokens
        self.started = owner._clock()
        self.deadline = self.started + ctx.budget.wall_s
        self.turn = 0

    def run(self) -> AgentResult:
        self.writer.write(
            AgentStarted(
                task_id=self.ctx.task.task_id,
                model=self.client.model,
                base_url=self.ctx.model.base_url,
                turns=self.max_turns,
                tools=[t.name for t in self.specs],
            )
        )
        self._add({"role": "system", "content": SYSTEM_PROMPT + self.ctx.brief})
        self._add({"role": "user", "content": START_PROMPT})
        status, message = self._loop()
        self.usage.wall_s = round(self.owner._clock() - self.started, 3)
        self.writer.write(
            AgentFinished(status=status, message=message, usage=self.usage.model_dump())
        )
        return AgentResult(
            status=status, usage=self.usage, message=message, transcript=self.ctx.transcript
        )

    def _loop(self) -> tuple[AgentStatus, str]:
        nudges = 0
        while True:
            stop = self._budget_stop()
            if stop is not None:
                return stop
            if self.turn >= self.max_turns:
                return "budget_exhausted", f"turn budget of {self.max_turns} exhausted"
            self.turn += 1
            completion = self._complete()
            if isinstance(completion, str):
                return "error", completion
            self._add(completion.message())
            if not completion.tool_calls:
                if nudges >= MAX_NUDGES:
                    return "finished", "the model stopped calling tools without submitting"
                nudges += 1
                self._add({"role": "user", "content": NUDGE_PROMPT})
                continue
            nudges = 0
            submitted = False
            for call in completion.tool_calls:
                submitted = self._run_tool(call.call_id, call.name, call.arguments) or submitted
            if submitted:
                return "finished", "submitted"

    def _budget_stop(self) -> tuple[AgentStatus, str] | None:
        budget = self.ctx.budget
        if self.owner._clock() >= self.deadline:
            return "timeout", f"wall-clock budget of {budget.wall_s:g} s exhausted"
        tokens = self.usage.tokens_in + self.usage.tokens_out
        if budget.tokens and tokens >= budget.tokens:
            return "budget_exhausted", f"token budget of {budget.tokens} exhausted ({tokens} used)"
        if budget.cost_usd and self.usage.cost_usd >= budget.cost_usd:
            return (
                "budget_exhausted",
                f"cost budget of ${budget.cost_usd:g} exhausted (${self.usage.cost_usd:.4f} used)",
            )
        return None

    def _complete(self) -> Completion | str:
        """One model call; the error message when it fails for good."""
        overflowed = False
        while True:
            self._fit_context()
            remaining = max(self.deadline - self.owner._clock(), 1.0)
            started = self.owner._clock()
            try:
                completion = self.client.complete(
                    self.messages,
                    self.tools,
                    timeout_s=min(remaining, REQUEST_TIMEOUT_S),
                    on_retry=self._retrying,
                )
            except ModelAPIError as err:
                self.writer.write(
                    ApiErrored(turn=self.turn, attempt=0, error=str(err), retry_in_s=None)
                )
                if err.context_overflow and not overflowed:
                    # The window is smaller than we assumed: cut to well below what was sent.
                    overflowed = True
                    self.context_tokens = int(self._prompt_tokens() * 0.6)
                    continue
                return f"model API error: {err}"
            break
        cost = self.owner.prices.cost_usd(
            self.client.model, completion.tokens_in, completion.tokens_out
        )
        self.usage.turns += 1
        self.usage.tokens_in += completion.tokens_in
        self.usage.tokens_out += completion.tokens_out
        self.usage.cost_usd = round(self.usage.cost_usd + cost, 6)
        self.writer.write(
            ModelCalled(
                turn=self.turn,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                cost_usd=round(cost, 6),
                duration_s=round(self.owner._clock() - started, 3),
                finish_reason=completion.finish_reason,
                attempts=completion.attempts,
                usage_reported=completion.usage_reported,
            )
        )
        return completion

    def _retrying(self, attempt: int, error: str, delay: float) -> None:
        self.writer.write(
            ApiErrored(turn=self.turn, attempt=attempt, error=error, retry_in_s=delay)
        )

    def _run_tool(self, call_id: str, name: str, arguments: str) -> bool:
        """Run one tool call and answer it; whether it was a successful `submit`."""
        started = self.owner._clock()
        args, problem = _parse_arguments(name, arguments, self.specs)
        if problem is not None:
            ok, output, submitted = False, problem, False
        else:
            result = self.toolbox.call(name, args, caller=self.owner.name)
            ok, output, submitted = result.ok, result.text, result.submitted
        self.usage.tool_calls += 1
        self.writer.write(
            ToolRan(
                turn=self.turn,
                call_id=call_id,
                name=name,
                arguments=arguments,
                ok=ok,
                output=output,
                duration_s=round(self.owner._clock() - started, 3),
            )
        )
        content = output if ok else f"error: {output}"
        self._add({"role": "tool", "tool_call_id": call_id, "content": content})
        return submitted

    def _add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.writer.write(MessageAdded(turn=self.turn, message=message))

    def _prompt_tokens(self) -> int:
        size = len(json.dumps(self.messages)) + len(json.dumps(self.tools))
        return size // CHARS_PER_TOKEN

    def _fit_context(self) -> None:
        """Cut old tool outputs (and old files written) until the prompt fits the window."""
        limit = int(self.context_tokens * PROMPT_SHARE)
        excess = (self._prompt_tokens() - limit) * CHARS_PER_TOKEN
        if excess <= 0:
            return
        # Oldest first: tool outputs and the arguments of past calls (files written), never the
        # latest tool output, which the model has not acted on yet.
        latest = max((i for i, m in enumerate(self.messages) if m["role"] == "tool"), default=-1)
        candidates: list[dict[str, Any]] = []
        for index, message in enumerate(self.messages):
            if message["role"] == "tool" and index != latest:
                candidates.append(message)
            elif message["role"] == "assistant":
                candidates += [call["function"] for call in message.get("tool_calls") or []]
        trimmed = removed = 0
        for item in candidates:
            if removed >= excess:
                break
            saved = _trim(item)
            if saved > 0:
                trimmed += 1
                removed += saved
        if trimmed:
            self.writer.write(
                ContextTrimmed(turn=self.turn, messages=trimmed, chars_removed=removed)
            )


def _trim(item: dict[str, Any]) -> int:
    """Cut one tool output (`content`) or one call's arguments in place; characters saved."""
    if "content" in item:
        text = str(item["content"])
        if len(text) <= TRIMMED_KEEP_CHARS * 2:
            return 0
        cut = len(text) - TRIMMED_KEEP_CHARS
        item["content"] = (
            text[:TRIMMED_KEEP_CHARS] + f"\n[... {cut} characters cut to fit the context window]"
        )
        return cut - 60
    text = str(item.get("arguments", ""))
    if len(text) <= TRIMMED_KEEP_CHARS * 2:
        return 0
    try:
        args = json.loads(text)
    except json.JSONDecodeError:
        args = None
    if isinstance(args, dict):
        for key, value in args.items():
            if isinstance(value, str) and len(value) > TRIMMED_KEEP_CHARS:
                args[key] = f"[{len(value)} characters, cut to fit the context window]"
        item["arguments"] = json.dumps(args)
    else:
        item["arguments"] = json.dumps({"cut": f"{len(text)} characters of arguments"})
    return len(text) - len(item["arguments"])


def _parse_arguments(
    name: str, arguments: str, specs: list[ToolSpec]
) -> tuple[dict[str, Any], str | None]:
    """The call's arguments as an object, or the error to send back to the model."""
    spec = next((t for t in specs if t.name == name), None)
    if spec is None:
        known = ", ".join(t.name for t in specs)
        return {}, f"there is no function '{name}'; the functions are: {known}"
    if not arguments.strip():
        return {}, None
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as err:
        return {}, (
            f"the arguments of '{name}' are not valid JSON ({err.msg} at line {err.lineno}, "
            f"column {err.colno}); send one JSON object matching this schema: "
            f"{json.dumps(spec.json_schema())}"
        )
    if not isinstance(args, dict):
        return {}, (
            f"the arguments of '{name}' must be a JSON object, not {type(args).__name__}; "
            f"schema: {json.dumps(spec.json_schema())}"
        )
    return args, None


@agent("toolcall")
def make_toolcall(argument: str) -> ToolCallAgent:
    """`toolcall[:prices=FILE,context=N,retries=N]`."""
    options = parse_options("toolcall", argument, OPTIONS)
    prices = PriceTable.load(Path(options["prices"])) if "prices" in options else None
    context = int(
        number("toolcall", "context", options.get("context", str(DEFAULT_CONTEXT_TOKENS)))
    )
    retries = options.get("retries", str(MAX_RETRIES))
    if not retries.isdigit():
        raise ConfigError(
            f"option 'retries' of agent 'toolcall' must be a whole number, not '{retries}'"
        )
    return ToolCallAgent(prices=prices, context_tokens=context, max_retries=int(retries))
