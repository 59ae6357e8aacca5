"""A loopback OpenAI-compatible chat-completions server, scripted step by step.

A real `http.server` on 127.0.0.1 in a thread. Each POST to `/v1/chat/completions` takes the next
step of the script: a ready answer (`tool_call`, `tool_calls`, `say`), an HTTP error (`error`),
or a function of the request body that returns one of those (so a step can look at the tool
output the agent just sent). Every request body is kept in `requests`; a step that raises, or a
request past the end of the script, is recorded in `failures` and answered with HTTP 400 (which
agents do not retry), so the test sees it even though it happened in the server's thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """A 200 answer: an assistant message."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 100
    completion_tokens: int = 20
    finish_reason: str | None = None
    report_usage: bool = True


@dataclass
class HTTPError:
    """An error answer."""

    status: int
    message: str
    retry_after: float | None = None
    code: str | None = None


Step = Answer | HTTPError | Callable[[dict[str, Any]], "Answer | HTTPError"]

_counter = iter(range(1, 1_000_000))


def tool_call(name: str, /, **arguments: Any) -> Answer:
    """An answer calling one tool with these arguments."""
    return raw_tool_call(name, json.dumps(arguments))


def raw_tool_call(name: str, arguments: str, **answer: Any) -> Answer:
    """An answer calling one tool with `arguments` sent exactly as given (malformed or not)."""
    call = {
        "id": f"call_{next(_counter)}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    return Answer(tool_calls=[call], **answer)


def say(text: str, **answer: Any) -> Answer:
    """An answer with text and no tool call."""
    return Answer(content=text, **answer)


def error(status: int, message: str = "scripted failure", **kwargs: Any) -> HTTPError:
    """An HTTP error answer."""
    return HTTPError(status, message, **kwargs)


def last_tool_output(request: dict[str, Any]) -> str:
    """The content of the last tool message the agent sent."""
    tools = [m for m in request["messages"] if m.get("role") == "tool"]
    return str(tools[-1]["content"]) if tools else ""


def expect(predicate: Callable[[str], bool], then: Answer, what: str = "") -> Step:
    """A step that checks the last tool output before answering `then`."""

    def step(request: dict[str, Any]) -> Answer:
        output = last_tool_output(request)
        if not predicate(output):
            raise AssertionError(f"unexpected tool output ({what}):\n{output}")
        return then

    return step


class FakeOpenAI:
    """The server. Use as a context manager; `base_url` is what the client needs."""

    def __init__(self, script: list[Step], *, model: str = "fake-model") -> None:
        self.script = list(script)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self.script.extend(steps)

    def _next(self, body: dict[str, Any]) -> Answer | HTTPError:
        with self._lock:
            self.requests.append(body)
            if not self.script:
                self.failures.append(f"request {len(self.requests)} past the end of the script")
                return HTTPError(400, "script exhausted")
            step = self.script.pop(0)
        if callable(step):
            try:
                return step(body)
            except Exception as err:  # noqa: BLE001 - reported to the test through `failures`
                self.failures.append(f"request {len(self.requests)}: {err}")
                return HTTPError(400, f"scripted step failed: {err}")
        return step

    def _response(self, answer: Answer) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if answer.tool_calls:
            message["tool_calls"] = answer.tool_calls
        finish = answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")
        response: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if answer.report_usage:
            response["usage"] = {
                "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens,
                "total_tokens": answer.prompt_tokens + answer.completion_tokens,
            }
        return response

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                answer = fake._next(json.loads(raw))
                if isinstance(answer, HTTPError):
                    body = {
                        "error": {
                            "message": answer.message,
                            "type": "scripted",
                            "code": answer.code,
                        }
                    }
                    extra = {}
                    if answer.retry_after is not None:
                        extra["Retry-After"] = str(answer.retry_after)
                    self._send(answer.status, body, extra)
                    return
                self._send(200, fake._response(answer))

            def _send(
                self, status: int, body: dict[str, Any], extra: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler
