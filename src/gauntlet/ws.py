"""`gauntlet-ws`: the feedback tools inside a workspace, and the server behind them.

An agent calls `gauntlet-ws check`, `gauntlet-ws test`, ... from its workspace. While an
attempt runs, the harness serves that workspace's `Toolbox` on a Unix socket (`ToolServer`),
outside any sandbox, and hands the socket's path to the agent in `GAUNTLET_WS_SOCKET`. The
server answers only for its own workspace whatever the client claims; it reads the workspace
only through `gauntlet.workspace.read_beneath` (no link followed), searches the copies of the
documents made in the workspace's tools folder when it was built, logs outside the workspace,
and answers every request, a failure of its own included, with `{"ok": false, "text": why}`.
Without a server (a workspace opened by hand) the command runs the tools itself, from the task
folder named in `.gauntlet-ws.json`.

Protocol: the client sends one JSON line `{"tool": NAME, "args": {...}}` and reads one JSON
object `{"ok": BOOL, "text": STR}` until the server closes the connection.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from gauntlet.settings import WS_SOCKET_ENV as SOCKET_ENV

if TYPE_CHECKING:
    from gauntlet.agents.tools import Toolbox

logger = logging.getLogger(__name__)

#: Largest request the server reads, in bytes.
MAX_REQUEST_BYTES = 1 << 20
#: Seconds a client has to send its request.
REQUEST_TIMEOUT_S = 30.0
#: Calls the server holds at once (one runs, the others wait); more are answered "busy".
MAX_PENDING_CALLS = 16
EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE = 0, 1, 2


class ToolServer:
    """Serves one workspace's toolbox on a Unix socket, one call at a time, in a thread."""

    def __init__(self, toolbox: Toolbox, *, caller: str = "gauntlet-ws") -> None:
        """A server for `toolbox`; `caller` names the agent in the tool log."""
        self.toolbox = toolbox
        self.caller = caller
        self._errors: list[str] = []
        self._pending = threading.BoundedSemaphore(MAX_PENDING_CALLS)
        self._dir = Path(tempfile.mkdtemp(prefix="gws-"))
        self.socket_path = self._dir / "ws.sock"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def errors(self) -> list[str]:
        """Failures of our own machinery while serving (each also answered to the client)."""
        return [*self.toolbox.errors, *self._errors]

    @property
    def socket_dir(self) -> Path:
        """The folder holding the socket (bind it into a sandbox)."""
        return self._dir

    def start(self) -> ToolServer:
        """Listen and serve in a daemon thread."""
        self._sock.bind(str(self.socket_path))
        self._sock.listen(8)
        self._thread = threading.Thread(target=self._serve, name="gauntlet-ws-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop accepting calls and remove the socket."""
        self._closed.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ToolServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            if not self._pending.acquire(blocking=False):
                _send(conn, {"ok": False, "text": BUSY})
                return
            try:
                _send(conn, self._reply(conn))
            # The server must answer and keep serving whatever breaks: a failure of our own
            # becomes the answer, and is logged and kept in `errors`.
            except Exception as err:  # noqa: BLE001
                message = f"the tool server failed on this request: {type(err).__name__}: {err}"
                logger.exception("tool server of %s failed", self.toolbox.workspace)
                self._errors.append(message[:2000])
                _send(conn, {"ok": False, "text": message[:2000]})
            finally:
                self._pending.release()

    def _reply(self, conn: socket.socket) -> dict[str, Any]:
        try:
            conn.settimeout(REQUEST_TIMEOUT_S)
            request = _read_request(conn)
            name, args = request["tool"], request.get("args", {})
            if not isinstance(name, str) or not isinstance(args, dict):
                raise ValueError("'tool' must be a string and 'args' an object")
        except (ValueError, KeyError, OSError, RecursionError) as err:
            return {"ok": False, "text": f"bad request to the tool server: {_describe(err)}"}
        result = self.toolbox.call(name, args, caller=self.caller, scope="feedback")
        return {"ok": result.ok, "text": result.text}


BUSY = (
    f"the tool server already holds {MAX_PENDING_CALLS} calls of this workspace; "
    "wait for them to finish"
)


def _describe(err: BaseException) -> str:
    if isinstance(err, RecursionError):
        return "the JSON is nested too deep"
    if isinstance(err, TimeoutError):
        return f"no complete request within {REQUEST_TIMEOUT_S:g} s"
    return str(err)


def _read_request(conn: socket.socket) -> dict[str, Any]:
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError(f"request above {MAX_REQUEST_BYTES} bytes")
    request = json.loads(data.decode("utf-8"))
    if not isinstance(request, dict):
        raise ValueError("the request is not a JSON object")
    return request


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(reply).encode("utf-8"))
    except OSError as err:
        logger.debug("tool client went away before the reply: %s", err)


def call_server(socket_path: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Send one call to a tool server and return its reply (`ok`, `text`)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(socket_path)
        conn.sendall(json.dumps({"tool": tool, "args": args}).encode("utf-8") + b"\n")
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    reply = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(reply, dict):
        raise ValueError("the tool server's reply is not a JSON object")
    return reply


def find_workspace(start: Path) -> Path | None:
    """The workspace holding `start` (the nearest folder with `.gauntlet-ws.json`)."""
    for folder in [start, *start.parents]:
        if (folder / ".gauntlet-ws.json").is_file():
            return folder
    return None


def _parser(track: str | None) -> argparse.ArgumentParser:
    from gauntlet.agents.tools import TOOLS, tools_for

    tools = (
        tools_for(track, scope="feedback") if track else [t for t in TOOLS if t.scope == "feedback"]
    )
    parser = argparse.ArgumentParser(
        prog="gauntlet-ws",
        description="Feedback tools of a Kernel Gauntlet workspace (visible configs only).",
    )
    parser.add_argument(
        "-C", dest="directory", type=Path, default=None, help="the workspace (default: here)"
    )
    commands = parser.add_subparsers(dest="tool", required=True, metavar="TOOL")
    for tool in tools:
        sub = commands.add_parser(tool.name, help=tool.summary, description=tool.summary)
        for param in tool.params:
            sub.add_argument(
                param.name,
                type=int if param.kind == "integer" else str,
                nargs=None if param.required else "?",
                help=param.description,
            )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `gauntlet-ws` command."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    start = Path.cwd()
    if len(args_list) >= 2 and args_list[0] == "-C":
        start = Path(args_list[1]).resolve()
    workspace = find_workspace(start)
    track = _workspace_track(workspace) if workspace is not None else None
    parsed = _parser(track).parse_args(args_list)
    if workspace is None:
        sys.stderr.write(
            f"gauntlet-ws: '{start}' is not inside a Kernel Gauntlet workspace "
            "(no .gauntlet-ws.json here or above)\n"
        )
        return EXIT_USAGE
    tool_args = {k: v for k, v in vars(parsed).items() if k not in ("tool", "directory")}
    tool_args = {k: v for k, v in tool_args.items() if v is not None}
    socket_path = os.environ.get(SOCKET_ENV)
    try:
        if socket_path:
            reply = call_server(socket_path, parsed.tool, tool_args)
        else:
            reply = _call_in_process(workspace, parsed.tool, tool_args)
    except (OSError, ValueError) as err:
        sys.stderr.write(f"gauntlet-ws: the tool server at '{socket_path}' failed: {err}\n")
        return EXIT_USAGE
    text = str(reply.get("text", ""))
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    return EXIT_OK if reply.get("ok") else EXIT_TOOL_FAILED


def _workspace_track(workspace: Path) -> str | None:
    try:
        config = json.loads((workspace / ".gauntlet-ws.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    track = config.get("track") if isinstance(config, dict) else None
    return track if isinstance(track, str) else None


def _call_in_process(workspace: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    from gauntlet.agents.tools import Toolbox
    from gauntlet.errors import GauntletError
    from gauntlet.task import load_task
    from gauntlet.workspace import read_ws_config, tool_log_path

    try:
        config = read_ws_config(workspace)
        task = load_task(config.task_dir)
    except GauntletError as err:
        return {"ok": False, "text": f"gauntlet-ws cannot run the tools here: {err}"}
    log = tool_log_path(workspace.resolve())
    try:
        calls = log.read_bytes().count(b"\n") if log.is_file() else 0
        toolbox = Toolbox(task, workspace, device=config.device, seed=calls)
    except (OSError, GauntletError) as err:
        return {"ok": False, "text": f"gauntlet-ws cannot run the tools here: {err}"}
    result = toolbox.call(tool, args, caller="gauntlet-ws", scope="feedback")
    return {"ok": result.ok, "text": result.text}
