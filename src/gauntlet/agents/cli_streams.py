"""What the CLI clients report, read into typed events, and the usage added up from them.

Each client tells its usage its own way; each parser here reads the lines of one client and
keeps a `StreamUsage`: model calls, tokens in (the cached ones included, and those apart),
tokens out, the client's own dollar figure, and how the client said it ended.

- Claude Code (`--output-format stream-json --include-partial-messages`): every model call
  streams `message_start` (input and cache tokens) and `message_delta` (output tokens so far)
  events, so a client killed mid-run has its usage counted up to that point. The final
  `result` says how it ended (its `num_turns` counts a synthetic message after an API error,
  so calls are counted from the stream instead).
- Codex CLI (`exec --json`): stdout says how it ended (`turn.completed`, `turn.failed`,
  `error`); usage per model call comes from its session rollout file under
  `~/.codex/sessions` (`token_usage_record` lines, one per response), which it writes as it
  goes, where stdout has only a total per prompt at the end.
- aider: stdout is text (its API errors are lines such as `litellm.BadRequestError: ...`);
  usage per model call comes from its analytics log (`--analytics-log`, with analytics
  disabled): `message_send` events with exact token counts, where its printed `Tokens: 2.3k
  sent` lines are rounded. A `message_send_starting` with no `message_send` after it is a
  model call that failed.
- Cursor: Claude-like stream-json; completed tool calls are counted and the `result` usage read.
- A generic command: `{"type": "usage", ...}` lines with its totals so far.

Lines that are no JSON object, or of an event type a parser does not read, are ignored by the
parser (they are still kept in the transcript).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gauntlet.agents.base import AgentStatus


@dataclass
class StreamUsage:
    """What a client showed so far."""

    calls: int = 0
    """Model calls (each request the model answered, or began to answer)."""
    tokens_in: int = 0
    """Input tokens, the cached ones included."""
    tokens_cached: int = 0
    """Of `tokens_in`, those read from (or written to) the prompt cache."""
    tokens_out: int = 0
    cost_usd: float | None = None
    """The client's own dollar figure, where it reports one."""
    status: AgentStatus | None = None
    """How the client said it ended, if it did."""
    message: str = ""
    """The client's own last word on how it ended (its error message, for one)."""


class StreamParser(Protocol):
    """Reads a client's output, one line at a time."""

    usage: StreamUsage

    def feed(self, line: str) -> bool:
        """Take one line of stdout; whether it is worth keeping in the transcript."""
        ...

    def feed_side(self, line: str) -> None:
        """Take one line of the client's side file (`CLIProfile.side_file`)."""
        ...


class _Event(BaseModel):
    # Clients add fields release by release: read what is needed, ignore the rest.
    model_config = ConfigDict(extra="ignore", frozen=True)


_E = TypeVar("_E")


def _json(line: str) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _parse(adapter: TypeAdapter[_E], line: str | dict[str, Any]) -> _E | None:
    data = _json(line) if isinstance(line, str) else line
    if data is None:
        return None
    try:
        return adapter.validate_python(data)
    except ValidationError:
        return None  # an event type (or shape) this parser does not read


# --- Claude Code -----------------------------------------------------------------------------


class AnthropicUsage(_Event):
    """Usage as the Anthropic API reports it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0

    @property
    def cached(self) -> int:
        """Tokens read from or written to the cache."""
        return (self.cache_read_input_tokens or 0) + (self.cache_creation_input_tokens or 0)


class _StartedMessage(_Event):
    id: str = ""
    usage: AnthropicUsage = AnthropicUsage()


class MessageStart(_Event):
    """A model call began: its input usage."""

    type: Literal["message_start"]
    message: _StartedMessage


class MessageDelta(_Event):
    """A model call goes on: its output tokens so far."""

    type: Literal["message_delta"]
    usage: AnthropicUsage = AnthropicUsage()


class ClaudeStreamEvent(_Event):
    """A raw API event, passed on with `--include-partial-messages`."""

    type: Literal["stream_event"]
    event: Annotated[MessageStart | MessageDelta, Field(discriminator="type")]


class ClaudeResult(_Event):
    """The last line: how the session ended."""

    type: Literal["result"]
    subtype: str = ""
    is_error: bool = False
    result: str = ""
    total_cost_usd: float | None = None


ClaudeLine = Annotated[ClaudeStreamEvent | ClaudeResult, Field(discriminator="type")]
_CLAUDE = TypeAdapter[ClaudeLine](ClaudeLine)


class ClaudeStream:
    """Claude Code's stream-json with partial messages."""

    def __init__(self) -> None:
        self.usage = StreamUsage()
        self._out = 0
        """Output tokens of the current call counted so far."""

    def feed(self, line: str) -> bool:
        """Take one line.

        Every text and tool-input fragment is left out of the transcript (the `assistant`
        message that follows holds the whole block).
        """
        data = _json(line)
        if data is None:
            return True
        if data.get("type") == "stream_event":
            inner_type = str((data.get("event") or {}).get("type", ""))
            if inner_type.startswith("content_block_"):
                return False
        event = _parse(_CLAUDE, data)
        if isinstance(event, ClaudeStreamEvent):
            inner = event.event
            if isinstance(inner, MessageStart):
                usage = inner.message.usage
                self.usage.calls += 1
                self.usage.tokens_in += usage.input_tokens + usage.cached
                self.usage.tokens_cached += usage.cached
                self._out = usage.output_tokens
                self.usage.tokens_out += usage.output_tokens
            else:
                # message_delta's output count is the call's total so far.
                self.usage.tokens_out += max(0, inner.usage.output_tokens - self._out)
                self._out = max(self._out, inner.usage.output_tokens)
        elif isinstance(event, ClaudeResult):
            self._result(event)
        return True

    def _result(self, result: ClaudeResult) -> None:
        if result.total_cost_usd is not None:
            self.usage.cost_usd = result.total_cost_usd
        if result.subtype in ("error_max_turns", "error_max_budget_usd"):
            self.usage.status = "budget_exhausted"
            self.usage.message = f"Claude Code stopped: {result.subtype}"
        elif result.is_error or result.subtype.startswith("error"):
            self.usage.status = "error"
            self.usage.message = f"Claude Code failed ({result.subtype}): {result.result}"
        else:
            self.usage.status = "finished"

    def feed_side(self, line: str) -> None:
        """Claude Code has no side file."""


# --- Codex CLI -------------------------------------------------------------------------------


class CodexTokens(_Event):
    """Token usage as Codex records it (`input_tokens` includes the cached ones)."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0


class _CodexError(_Event):
    message: str = ""


class CodexTurnCompleted(_Event):
    """One prompt's turn ended; the usage of all its model calls."""

    type: Literal["turn.completed"]
    usage: CodexTokens = CodexTokens()


class CodexTurnFailed(_Event):
    """One prompt's turn failed (an API error that retries did not fix)."""

    type: Literal["turn.failed"]
    error: _CodexError = _CodexError()


class CodexError(_Event):
    """An error Codex reports while going on (a retry) or before it gives up."""

    type: Literal["error"]
    message: str = ""


CodexLine = Annotated[
    CodexTurnCompleted | CodexTurnFailed | CodexError, Field(discriminator="type")
]
_CODEX = TypeAdapter[CodexLine](CodexLine)


class _TokenUsagePayload(_Event):
    response_id: str = ""
    usage: CodexTokens


class CodexTokenRecord(_Event):
    """A rollout line: the usage of one model response."""

    type: Literal["token_usage_record"]
    payload: _TokenUsagePayload


_CODEX_ROLLOUT = TypeAdapter(CodexTokenRecord)


class CodexStream:
    """`codex exec --json` on stdout, its session rollout as the side file."""

    def __init__(self) -> None:
        self.usage = StreamUsage()
        self._responses: set[str] = set()
        self._turn_tokens = CodexTokens()

    def feed(self, line: str) -> bool:
        """Take one line of stdout."""
        event = _parse(_CODEX, line)
        if isinstance(event, CodexTurnCompleted):
            self._turn_tokens = CodexTokens(
                input_tokens=self._turn_tokens.input_tokens + event.usage.input_tokens,
                cached_input_tokens=self._turn_tokens.cached_input_tokens
                + event.usage.cached_input_tokens,
                output_tokens=self._turn_tokens.output_tokens + event.usage.output_tokens,
            )
            if not self._responses:
                # No rollout read (an unreadable home): the turn's total is all there is.
                self.usage.tokens_in = self._turn_tokens.input_tokens
                self.usage.tokens_cached = self._turn_tokens.cached_input_tokens
                self.usage.tokens_out = self._turn_tokens.output_tokens
            self.usage.status = "finished"
            self.usage.message = ""  # an error it reported before was retried away
        elif isinstance(event, CodexTurnFailed):
            self.usage.status = "error"
            self.usage.message = f"codex failed: {_api_message(event.error.message)}"
        elif isinstance(event, CodexError):
            self.usage.message = f"codex: {_api_message(event.message)}"
        return True

    def feed_side(self, line: str) -> None:
        """Take one line of a session rollout file."""
        if '"token_usage_record"' not in line:
            return  # most rollout lines are the conversation itself
        record = _parse(_CODEX_ROLLOUT, line)
        if record is None or record.payload.response_id in self._responses:
            return
        self._responses.add(record.payload.response_id)
        tokens = record.payload.usage
        self.usage.calls += 1
        self.usage.tokens_in += tokens.input_tokens
        self.usage.tokens_cached += tokens.cached_input_tokens
        self.usage.tokens_out += tokens.output_tokens


def _api_message(text: str) -> str:
    """The message inside an API error body Codex quotes whole, else the text."""
    data = _json(text)
    error = data.get("error") if data else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return text


# --- aider -----------------------------------------------------------------------------------


class _SendProperties(_Event):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    total_cost: float = 0.0


class AiderSend(_Event):
    """A model call answered, with its exact usage."""

    event: Literal["message_send"]
    properties: _SendProperties


class AiderSendStarting(_Event):
    """A model call began."""

    event: Literal["message_send_starting"]


class _ExceptionProperties(_Event):
    exception: str = ""


class AiderSendException(_Event):
    """A model call raised inside aider."""

    event: Literal["message_send_exception"]
    properties: _ExceptionProperties = _ExceptionProperties()


AiderLine = Annotated[
    AiderSend | AiderSendStarting | AiderSendException, Field(discriminator="event")
]
_AIDER = TypeAdapter[AiderLine](AiderLine)


class AiderStream:
    """aider's text on stdout, its analytics log as the side file."""

    #: An API error as LiteLLM words it (`litellm.BadRequestError: OpenAIException - ...`).
    API_ERROR = re.compile(r"^litellm\.(?P<kind>\w+(Error|Exception)): (?P<detail>.*)$")

    def __init__(self) -> None:
        self.usage = StreamUsage()
        self._pending = 0
        self._last_error = ""

    def feed(self, line: str) -> bool:
        """Take one line of stdout."""
        match = self.API_ERROR.match(line.strip())
        if match is not None:
            self._last_error = f"{match['kind']}: {match['detail']}"
            self._judge()
        return True

    def feed_side(self, line: str) -> None:
        """Take one line of the analytics log."""
        event = _parse(_AIDER, line)
        if isinstance(event, AiderSendStarting):
            self._pending += 1
        elif isinstance(event, AiderSend):
            self._pending = max(0, self._pending - 1)
            self.usage.calls += 1
            self.usage.tokens_in += event.properties.prompt_tokens
            self.usage.tokens_out += event.properties.completion_tokens
            self.usage.cost_usd = event.properties.total_cost
        elif isinstance(event, AiderSendException):
            self._last_error = self._last_error or event.properties.exception
        self._judge()

    def _judge(self) -> None:
        # aider exits 0 after a failed model call: a call that began and never got its
        # answer, with the error it printed, is how it really ended.
        if self._pending and self._last_error:
            self.usage.status = "error"
            self.usage.message = f"aider's model call failed: {self._last_error}"
        else:
            self.usage.status = None
            self.usage.message = ""


# --- Cursor and generic commands --------------------------------------------------------------


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class CursorStream:
    """Cursor's `--output-format stream-json` (not run against the real client here).

    Claude-like events; each completed `tool_call` counts as a call; the `result` may carry
    usage.
    """

    def __init__(self) -> None:
        self.usage = StreamUsage()

    def feed(self, line: str) -> bool:
        """Take one line."""
        data = _json(line)
        if data is None:
            return True
        kind = data.get("type")
        if kind == "tool_call" and data.get("subtype") == "completed":
            self.usage.calls += 1
        elif kind == "result":
            usage = data.get("usage") or {}
            self.usage.tokens_in = _int(usage.get("input_tokens", usage.get("inputTokens")))
            self.usage.tokens_out = _int(usage.get("output_tokens", usage.get("outputTokens")))
            if data.get("is_error") or str(data.get("subtype", "")).startswith("error"):
                self.usage.status = "error"
                self.usage.message = f"cursor failed: {data.get('result', '')}"
            else:
                self.usage.status = "finished"
        return True

    def feed_side(self, line: str) -> None:
        """Cursor has no side file."""


class GenericUsage(_Event):
    """A generic command's totals so far."""

    type: Literal["usage"]
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None


_GENERIC = TypeAdapter(GenericUsage)


class GenericStream:
    """A generic command's output: any `{"type": "usage", ...}` line states its totals so far."""

    def __init__(self) -> None:
        self.usage = StreamUsage()

    def feed(self, line: str) -> bool:
        """Take one line."""
        event = _parse(_GENERIC, line)
        if event is not None:
            self.usage.calls = event.turns
            self.usage.tokens_in = event.tokens_in
            self.usage.tokens_out = event.tokens_out
            if event.cost_usd is not None:
                self.usage.cost_usd = event.cost_usd
        return True

    def feed_side(self, line: str) -> None:
        """A generic command has no side file."""
