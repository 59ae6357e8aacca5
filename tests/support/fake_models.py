"""Loopback model servers speaking each real CLI client's own API, scripted turn by turn.

- `FakeAnthropic`: the Anthropic Messages API with server-sent events (`POST /v1/messages`),
  what Claude Code speaks.
- `FakeResponses`: the OpenAI Responses API with server-sent events (`POST /v1/responses`),
  what Codex CLI speaks.
- `FakeChat`: OpenAI chat completions (`POST /v1/chat/completions`, streamed or not), what
  aider speaks through LiteLLM.

A real `http.server` on 127.0.0.1 in a thread. Each model request takes the next step of the
script: a `Turn` (text and tool calls, with the token counts to report), a `Fail` (an HTTP error
answer), or a function of the request body that returns one (so a step can read the tool output
the client just sent). The server keeps every request and every turn it answered, so a test can
compare the client's recorded usage with what was really served. A step that raises, or a
request past the end of the script, is recorded in `failures` and answered HTTP 400.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    """One tool call of a turn: the client's tool name and its arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One scripted model answer and the usage reported with it."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    tokens_in: int = 1000
    """Input tokens in all, the cached ones included."""
    tokens_cached: int = 0
    """Of `tokens_in`, those read from the prompt cache."""
    tokens_out: int = 50
    delay_s: float = 0.0
    """Seconds the server waits before answering (a slow model)."""


@dataclass(frozen=True)
class Fail:
    """An HTTP error answer."""

    status: int
    message: str


Step = Turn | Fail | Callable[[dict[str, Any]], "Turn | Fail"]


def say(text: str, **usage: Any) -> Turn:
    """A turn with text and no tool call (the client's last)."""
    return Turn(text=text, **usage)


def call(name: str, /, **arguments: Any) -> Turn:
    """A turn calling one tool."""
    return Turn(calls=(Call(name, arguments),))


@dataclass
class Served:
    """What the server answered so far."""

    turns: list[Turn] = field(default_factory=list)
    errors: list[Fail] = field(default_factory=list)

    @property
    def tokens_in(self) -> int:
        """Input tokens reported, cached ones included."""
        return sum(t.tokens_in for t in self.turns)

    @property
    def tokens_cached(self) -> int:
        """Cached input tokens reported."""
        return sum(t.tokens_cached for t in self.turns)

    @property
    def tokens_out(self) -> int:
        """Output tokens reported."""
        return sum(t.tokens_out for t in self.turns)


_ids = itertools.count(1)


class FakeModelServer(ABC):
    """The HTTP server shared by the three APIs; subclasses render answers."""

    #: Path suffix of a model request.
    ROUTE = ""

    def __init__(self, script: list[Step], *, model: str = "fake-model") -> None:
        self.script = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.served = Served()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`."""
        return f"{self.root_url}/v1"

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # slow answers still waiting end now
        self._server.shutdown()
        self._server.server_close()

    def next_answer(self, body: dict[str, Any]) -> Turn | Fail:
        """The next step of the script for this request, recorded."""
        with self._lock:
            self.requests.append(body)
            if not self.script:
                self.failures.append(f"request {len(self.requests)} past the end of the script")
                return Fail(400, "script exhausted")
            step = self.script.pop(0)
        if callable(step):
            try:
                step = step(body)
            except Exception as err:  # noqa: BLE001 - reported to the test through `failures`
                self.failures.append(f"request {len(self.requests)}: {err}")
                return Fail(400, f"scripted step failed: {err}")
        with self._lock:
            if isinstance(step, Turn):
                self.served.turns.append(step)
            else:
                self.served.errors.append(step)
        return step

    def last_tool_output(self, body: dict[str, Any]) -> str:
        """The output of the last tool call the client sent back in this request."""
        raise AssertionError(f"{type(self).__name__}: this API's fake carries no tool calls")

    def error_body(self, fail: Fail) -> dict[str, Any]:
        """The JSON body of an error answer."""
        return {"error": {"message": fail.message, "type": "invalid_request_error"}}

    @abstractmethod
    def render(self, turn: Turn, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The events of a streamed answer."""

    def render_whole(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        """A non-streamed answer (only where the real client asks for one)."""
        raise AssertionError(f"{type(self).__name__}: the client asked for a non-streamed answer")

    def other(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        """The answer to any request that is not a model call."""
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_GET(self) -> None:  # noqa: N802
                self._json(*fake.other("GET", self.path))

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                route = self.path.split("?", 1)[0]
                if not route.endswith(fake.ROUTE):
                    self._json(*fake.other("POST", self.path))
                    return
                body = json.loads(raw)
                answer = fake.next_answer(body)
                if isinstance(answer, Fail):
                    self._json(answer.status, fake.error_body(answer))
                    return
                if answer.delay_s and fake._closing.wait(answer.delay_s):
                    return
                if not body.get("stream"):
                    self._json(200, fake.render_whole(answer, body))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for event in fake.render(answer, body):
                        name = event.get("type", "message")
                        frame = f"event: {name}\ndata: {json.dumps(event)}\n\n"
                        self.wfile.write(frame.encode())
                        self.wfile.flush()
                    if isinstance(fake, FakeChat):
                        self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed mid-answer
                self.close_connection = True

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


class FakeAnthropic(FakeModelServer):
    """The Anthropic Messages API, streamed as Claude Code asks for it."""

    ROUTE = "/v1/messages"

    @property
    def base_url(self) -> str:
        """Claude Code appends `/v1/messages` itself: its base URL is the root."""
        return self.root_url

    @staticmethod
    def last_tool_output(body: dict[str, Any]) -> str:
        """The last `tool_result` block of the last user message."""
        content = body["messages"][-1].get("content")
        results = [
            b for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        if not results:
            return ""
        inner = results[-1].get("content", "")
        if isinstance(inner, list):
            return "\n".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
        return str(inner)

    def error_body(self, fail: Fail) -> dict[str, Any]:
        """Anthropic's error shape."""
        return {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": fail.message},
        }

    def other(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        """`count_tokens` answers a small count; anything else is unknown."""
        if "count_tokens" in path:
            return 200, {"input_tokens": 10}
        return super().other(method, path)

    def render(self, turn: Turn, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """message_start, a block per text and tool call, message_delta with the usage."""
        usage = {
            "input_tokens": turn.tokens_in - turn.tokens_cached,
            "cache_read_input_tokens": turn.tokens_cached,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        }
        message = {
            "id": f"msg_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.model),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        yield {"type": "message_start", "message": message}
        index = 0
        if turn.text:
            block = {"type": "text", "text": ""}
            yield {"type": "content_block_start", "index": index, "content_block": block}
            delta = {"type": "text_delta", "text": turn.text}
            yield {"type": "content_block_delta", "index": index, "delta": delta}
            yield {"type": "content_block_stop", "index": index}
            index += 1
        for tool in turn.calls:
            block = {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": tool.name}
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": block | {"input": {}},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(tool.arguments)}
            yield {"type": "content_block_delta", "index": index, "delta": delta}
            yield {"type": "content_block_stop", "index": index}
            index += 1
        stop = "tool_use" if turn.calls else "end_turn"
        yield {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": turn.tokens_out},
        }
        yield {"type": "message_stop"}


class FakeResponses(FakeModelServer):
    """The OpenAI Responses API, streamed as Codex CLI asks for it."""

    ROUTE = "/responses"

    @staticmethod
    def last_tool_output(body: dict[str, Any]) -> str:
        """The last `function_call_output` item of the input."""
        outputs = [i for i in body.get("input", []) if i.get("type") == "function_call_output"]
        return str(outputs[-1].get("output", "")) if outputs else ""

    def other(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        """`/models` lists the one model (Codex may ask which models the provider has)."""
        if path.split("?", 1)[0].endswith("/models"):
            return 200, {
                "object": "list",
                "data": [{"id": self.model, "object": "model"}],
                "models": [],
            }
        return super().other(method, path)

    def render(self, turn: Turn, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """response.created, an output item per text and tool call, response.completed."""
        response_id = f"resp_{next(_ids)}"
        yield {"type": "response.created", "response": {"id": response_id}}
        if turn.text:
            item = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{next(_ids)}",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
            yield {"type": "response.output_item.done", "item": item}
        for tool in turn.calls:
            item = {
                "type": "function_call",
                "id": f"fc_{next(_ids)}",
                "call_id": f"call_{next(_ids)}",
                "name": tool.name,
                "arguments": json.dumps(tool.arguments),
            }
            yield {"type": "response.output_item.done", "item": item}
        usage = {
            "input_tokens": turn.tokens_in,
            "input_tokens_details": {"cached_tokens": turn.tokens_cached},
            "output_tokens": turn.tokens_out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.tokens_in + turn.tokens_out,
        }
        yield {"type": "response.completed", "response": {"id": response_id, "usage": usage}}


class FakeChat(FakeModelServer):
    """OpenAI chat completions, streamed or not, as aider (through LiteLLM) asks for them."""

    ROUTE = "/chat/completions"

    def other(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        """`/models` lists the one model."""
        if path.split("?", 1)[0].endswith("/models"):
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
        return super().other(method, path)

    def _usage(self, turn: Turn) -> dict[str, Any]:
        return {
            "prompt_tokens": turn.tokens_in,
            "completion_tokens": turn.tokens_out,
            "total_tokens": turn.tokens_in + turn.tokens_out,
            "prompt_tokens_details": {"cached_tokens": turn.tokens_cached},
        }

    def render_whole(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        """One chat.completion with the text (aider edits files through text)."""
        return {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": turn.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": self._usage(turn),
        }

    def render(self, turn: Turn, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The text in one chunk, then a chunk with the finish reason and the usage."""
        base = {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", self.model),
        }
        delta = {"role": "assistant", "content": turn.text}
        yield base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        yield base | {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": self._usage(turn),
        }
