"""Transcripts: the `toolcall` agent's typed JSONL events, and reading any agent's transcript.

The `toolcall` agent writes one `TranscriptEvent` per line, each with `kind` and
`schema_version`, read back through one discriminated union. CLI agents' transcripts are their
own streamed output (Claude Code's and Cursor's stream-json, Codex's JSONL), kept line by line;
plain-text output (aider) is kept as `{"type": "text", "text": ...}` lines. `render_transcript`
turns either into readable lines for `gauntlet show`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

TRANSCRIPT_SCHEMA_VERSION = 1
#: Characters of one message or tool output shown by `render_transcript`.
RENDER_CHARS = 2_000


def _now() -> datetime:
    return datetime.now(UTC)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = TRANSCRIPT_SCHEMA_VERSION
    time: datetime = Field(default_factory=_now)


class AgentStarted(_Event):
    """The attempt began: what the agent was given."""

    kind: Literal["started"] = "started"
    task_id: str
    model: str
    base_url: str | None
    turns: int
    """The iteration budget."""
    tools: list[str]


class MessageAdded(_Event):
    """A message joined the conversation (system, user, assistant or tool)."""

    kind: Literal["message"] = "message"
    turn: int
    message: dict[str, Any]


class ModelCalled(_Event):
    """One completion came back."""

    kind: Literal["model_call"] = "model_call"
    turn: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    duration_s: float
    finish_reason: str | None
    attempts: int
    usage_reported: bool = True


class ApiErrored(_Event):
    """A model API call failed; `retry_in_s` is None when it was not retried."""

    kind: Literal["api_error"] = "api_error"
    turn: int
    attempt: int
    error: str
    retry_in_s: float | None


class ToolRan(_Event):
    """A tool call and its answer (malformed calls included, with the error sent back)."""

    kind: Literal["tool"] = "tool"
    turn: int
    call_id: str
    name: str
    arguments: str
    """The arguments exactly as the model sent them."""
    ok: bool
    output: str
    duration_s: float


class ContextTrimmed(_Event):
    """Old tool outputs were cut so the conversation fits the context window."""

    kind: Literal["context_trimmed"] = "context_trimmed"
    turn: int
    messages: int
    chars_removed: int


class AgentFinished(_Event):
    """The attempt ended."""

    kind: Literal["finished"] = "finished"
    status: str
    message: str
    usage: dict[str, Any]


TranscriptEvent = Annotated[
    AgentStarted
    | MessageAdded
    | ModelCalled
    | ApiErrored
    | ToolRan
    | ContextTrimmed
    | AgentFinished,
    Field(discriminator="kind"),
]
_EVENT = TypeAdapter(TranscriptEvent)


def read_event(line: str) -> TranscriptEvent:
    """Parse one line of a `toolcall` transcript."""
    return _EVENT.validate_json(line)


class TranscriptWriter:
    """Appends events to a JSONL file, flushed after each, so a killed attempt keeps its past."""

    def __init__(self, path: Path) -> None:
        """Open (create) the transcript at `path`."""
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = path.open("a", encoding="utf-8")

    def write(self, event: _Event) -> None:
        """Append one event."""
        self._handle.write(event.model_dump_json() + "\n")
        self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def render_transcript(path: Path) -> list[str]:
    """Readable lines for any agent's transcript: `toolcall` events or a CLI's stream."""
    lines: list[str] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not raw.strip():
            continue
        try:
            lines += _render_event(read_event(raw))
            continue
        except ValidationError:
            pass
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            lines.append(_cut(raw))
            continue
        lines += _render_stream(data) if isinstance(data, dict) else [_cut(raw)]
    return lines


def _render_event(event: TranscriptEvent) -> list[str]:
    if isinstance(event, AgentStarted):
        return [
            f"== started: task {event.task_id}, model {event.model}, "
            f"{event.turns} turns, tools {', '.join(event.tools)}"
        ]
    if isinstance(event, MessageAdded):
        message = event.message
        role = message.get("role", "?")
        if role == "tool":
            return []  # shown by the ToolRan event
        out = []
        if message.get("content"):
            out.append(f"[{event.turn}] {role}: {_cut(str(message['content']))}")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            out.append(
                f"[{event.turn}] {role} calls {function.get('name')}"
                f"({_cut(str(function.get('arguments', '')), 300)})"
            )
        return out
    if isinstance(event, ModelCalled):
        estimate = "" if event.usage_reported else " (estimated)"
        return [
            f"[{event.turn}] model: {event.tokens_in} in / {event.tokens_out} out tokens"
            f"{estimate}, ${event.cost_usd:.4f}, {event.duration_s:.1f} s"
            + (f", {event.attempts} tries" if event.attempts > 1 else "")
        ]
    if isinstance(event, ApiErrored):
        then = f"retry in {event.retry_in_s:.1f} s" if event.retry_in_s is not None else "gave up"
        return [f"[{event.turn}] API error (try {event.attempt}): {event.error}; {then}"]
    if isinstance(event, ToolRan):
        state = "ok" if event.ok else "error"
        return [f"[{event.turn}] {event.name} -> {state}:", *_indent(_cut(event.output))]
    if isinstance(event, ContextTrimmed):
        return [
            f"[{event.turn}] context trimmed: {event.messages} messages, "
            f"{event.chars_removed} characters"
        ]
    return [f"== finished: {event.status}: {event.message} ({_usage_text(event.usage)})"]


def _render_stream(data: dict[str, Any]) -> list[str]:
    """One line of a CLI agent's stream-json or JSONL, in words."""
    kind = str(data.get("type", data.get("kind", "?")))
    if kind == "text":
        return [str(data.get("text", ""))]
    if kind in ("assistant", "user"):
        message = data.get("message", {})
        content = message.get("content") if isinstance(message, dict) else message
        return [f"{kind}: {_cut(_content_text(content))}"]
    if kind == "result":
        cost = data.get("total_cost_usd")
        return [
            f"== result: {data.get('subtype', '')}, turns {data.get('num_turns', '?')}"
            + (f", ${cost}" if cost is not None else "")
            + (f": {_cut(str(data['result']), 500)}" if data.get("result") else "")
        ]
    if kind.startswith("item."):
        item = data.get("item", {})
        if isinstance(item, dict):
            parts = [item.get(k) for k in ("text", "command", "aggregated_output", "changes")]
            text = "\n".join(str(p) for p in parts if p)
            return [f"{kind} {item.get('type', '')}: {_cut(text)}"]
    if kind == "turn.completed":
        return [f"turn completed: {data.get('usage', {})}"]
    if kind == "tool_call":
        return [
            f"tool_call {data.get('subtype', '')}: {_cut(json.dumps(data.get('tool_call')), 300)}"
        ]
    return [f"{kind}: {_cut(json.dumps(data), 300)}"]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                parts.append(f"<{block.get('name')} {json.dumps(block.get('input'))[:300]}>")
            elif block.get("type") == "tool_result":
                parts.append(f"<result {_content_text(block.get('content'))[:300]}>")
        return " ".join(parts)
    return json.dumps(content)


def _usage_text(usage: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in usage.items())


def _indent(text: str) -> list[str]:
    return ["    " + line for line in text.splitlines()]


def _cut(text: str, limit: int = RENDER_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more]"
