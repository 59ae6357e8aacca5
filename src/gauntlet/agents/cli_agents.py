"""CLI coding agents: `claude-code`, `codex`, `cursor`, `aider` and `generic:'<command>'`.

Each is launched headless in the workspace, inside the chosen sandbox, with the flags its CLI
has for non-interactive work, permissions, turns and cost, and a scrubbed environment: the
model's API key, a private HOME, and `GAUNTLET_WS_SOCKET`, through which `gauntlet-ws` reaches
the feedback tools served outside the sandbox. Its streamed output (stream-json or JSONL; text
lines for aider) is kept line by line as the transcript while it runs, and usage (turns,
tokens, cost) is parsed from it. Budgets are enforced from outside: the wall clock by killing
the agent's whole process tree, and turns, tokens and dollars by killing it as soon as its
stream shows the budget spent.

Options (`claude-code:key=value,...`): `sandbox` (auto, bwrap, confine, docker, none),
`network` (on, off), `image` (docker). Defaults come from `GAUNTLET_SANDBOX` (else `auto`: the
strongest sandbox that works here, `sandbox.resolve`), `GAUNTLET_SANDBOX_NETWORK` and
`GAUNTLET_DOCKER_IMAGE`. `generic:'<command>'` takes a command (placeholders `{prompt}`,
`{workspace}`, `{model}`, `{turns}`; the prompt also arrives on stdin), after the same options
if wanted: `generic:sandbox=bwrap,network=off:'<command>'`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from gauntlet import process, sandbox
from gauntlet.agents.base import (
    AgentContext,
    AgentResult,
    AgentStatus,
    ModelSettings,
    Usage,
    agent,
)
from gauntlet.agents.llm import PriceTable
from gauntlet.agents.options import flag, parse_options
from gauntlet.agents.tools import Toolbox
from gauntlet.errors import ConfigError
from gauntlet.settings import (
    DOCKER_IMAGE_ENV,
    SANDBOX_ENV,
    SANDBOX_NETWORK_ENV,
)
from gauntlet.settings import WS_SOCKET_ENV as SOCKET_ENV
from gauntlet.workspace import turn_limit
from gauntlet.ws import ToolServer

logger = logging.getLogger(__name__)

#: Environment variables every agent keeps when set (locale, proxies).
COMMON_ENV = ("LANG", "LC_ALL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE")
#: Largest transcript kept, in bytes; the stream is still parsed past it.
TRANSCRIPT_LIMIT_BYTES = 50 * 1024 * 1024
#: Characters of the agent's stderr quoted in an error message.
STDERR_TAIL_CHARS = 2_000
#: Bytes of stderr kept.
STDERR_LIMIT_BYTES = 256 * 1024

OPTIONS = {
    "sandbox": "auto (the default: bwrap, else confine, else none), bwrap, confine, docker or none",
    "network": "on or off: whether the sandbox reaches the network",
    "image": "the docker image",
}

PROMPT = """\
You are working in the folder {workspace}. Your task is described in TASK.md in this folder,
reproduced below. Work only in this folder. For feedback run the `gauntlet-ws` command here
(`gauntlet-ws check`, `gauntlet-ws test`, `gauntlet-ws bench`, ...): it judges your kernel on the
visible configurations. Other configurations will be tested when you stop. When you are done,
stop: the contract's files as they are then are your submission.

{brief}"""


@dataclass
class StreamUsage:
    """What a stream showed so far."""

    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    """The agent's own cost figure, where its CLI reports one."""
    status: AgentStatus | None = None
    """How the agent said it ended (e.g. Claude Code's `error_max_turns`), if it did."""
    message: str = ""


class StreamParser(Protocol):
    """Reads an agent's output, one line at a time."""

    usage: StreamUsage

    def feed(self, line: str) -> None:
        """Take one line of stdout."""
        ...


def _json(line: str) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


class ClaudeStream:
    """Claude Code's `--output-format stream-json`.

    `assistant` messages carry per-call usage (repeated for each content block of one message
    id); the final `result` has the totals.
    """

    def __init__(self) -> None:
        self.usage = StreamUsage()
        self._seen: set[str] = set()

    def feed(self, line: str) -> None:
        """Take one line."""
        data = _json(line)
        if data is None:
            return
        kind = data.get("type")
        if kind == "assistant":
            message = data.get("message") or {}
            message_id = str(message.get("id", len(self._seen)))
            if message_id in self._seen:
                return
            self._seen.add(message_id)
            self.usage.turns += 1
            tokens_in, tokens_out = _anthropic_tokens(message.get("usage") or {})
            self.usage.tokens_in += tokens_in
            self.usage.tokens_out += tokens_out
        elif kind == "result":
            self.usage.turns = _int(data.get("num_turns")) or self.usage.turns
            if isinstance(data.get("total_cost_usd"), int | float):
                self.usage.cost_usd = float(data["total_cost_usd"])
            if isinstance(data.get("usage"), dict):
                self.usage.tokens_in, self.usage.tokens_out = _anthropic_tokens(data["usage"])
            subtype = str(data.get("subtype", ""))
            if subtype in ("error_max_turns", "error_max_budget_usd"):
                self.usage.status = "budget_exhausted"
                self.usage.message = f"Claude Code stopped: {subtype}"
            elif data.get("is_error") or subtype.startswith("error"):
                self.usage.status = "error"
                self.usage.message = f"Claude Code failed ({subtype}): {data.get('result', '')}"
            else:
                self.usage.status = "finished"


def _anthropic_tokens(usage: dict[str, Any]) -> tuple[int, int]:
    tokens_in = _int(usage.get("input_tokens"))
    tokens_in += _int(usage.get("cache_creation_input_tokens"))
    tokens_in += _int(usage.get("cache_read_input_tokens"))
    return tokens_in, _int(usage.get("output_tokens"))


class CodexStream:
    """`codex exec --json`.

    `turn.completed` carries the usage of one prompt's turn; each completed step (message,
    command, file change, tool call) counts as a turn here.
    """

    STEP_ITEMS = frozenset(
        {"agent_message", "command_execution", "file_change", "mcp_tool_call", "web_search"}
    )

    def __init__(self) -> None:
        self.usage = StreamUsage()

    def feed(self, line: str) -> None:
        """Take one line."""
        data = _json(line)
        if data is None:
            return
        kind = data.get("type")
        if kind == "item.completed":
            item = data.get("item") or {}
            if item.get("type", item.get("item_type")) in self.STEP_ITEMS:
                self.usage.turns += 1
        elif kind == "turn.completed":
            usage = data.get("usage") or {}
            self.usage.tokens_in += _int(usage.get("input_tokens"))
            self.usage.tokens_out += _int(usage.get("output_tokens"))
            self.usage.status = "finished"
        elif kind in ("turn.failed", "error"):
            error = data.get("error") or {}
            detail = error.get("message") if isinstance(error, dict) else None
            self.usage.status = "error"
            self.usage.message = f"codex failed: {detail or data.get('message', kind)}"


class CursorStream:
    """Cursor's `--output-format stream-json`.

    Claude-like events; each completed `tool_call` counts as a turn; the `result` may carry
    usage.
    """

    def __init__(self) -> None:
        self.usage = StreamUsage()

    def feed(self, line: str) -> None:
        """Take one line."""
        data = _json(line)
        if data is None:
            return
        kind = data.get("type")
        if kind == "tool_call" and data.get("subtype") == "completed":
            self.usage.turns += 1
        elif kind == "result":
            usage = data.get("usage") or {}
            self.usage.tokens_in = _int(usage.get("input_tokens", usage.get("inputTokens")))
            self.usage.tokens_out = _int(usage.get("output_tokens", usage.get("outputTokens")))
            if data.get("is_error") or str(data.get("subtype", "")).startswith("error"):
                self.usage.status = "error"
                self.usage.message = f"cursor failed: {data.get('result', '')}"
            else:
                self.usage.status = "finished"


class AiderStream:
    """aider's text output.

    One `Tokens: ... sent, ... received. Cost: $X message, $Y session.` line per model call.
    """

    TOKENS = re.compile(
        r"Tokens: (?P<sent>[\d.,]+[kM]?) sent(?:, [\d.,]+[kM]? cache \w+)*, "
        r"(?P<received>[\d.,]+[kM]?) received\.(?: Cost: \$(?P<message>[\d.,]+) message, "
        r"\$(?P<session>[\d.,]+) session\.)?"
    )

    def __init__(self) -> None:
        self.usage = StreamUsage()

    def feed(self, line: str) -> None:
        """Take one line."""
        match = self.TOKENS.search(line)
        if match is None:
            return
        self.usage.turns += 1
        self.usage.tokens_in += _count(match["sent"])
        self.usage.tokens_out += _count(match["received"])
        if match["session"]:
            self.usage.cost_usd = float(match["session"].replace(",", ""))


def _count(text: str) -> int:
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1], 1)
    number = text[:-1] if scale > 1 else text
    return round(float(number.replace(",", "")) * scale)


class GenericStream:
    """A generic command's output.

    Any line `{"type": "usage", "turns": N, "tokens_in": N, "tokens_out": N, "cost_usd": X}`
    states its totals so far (the last one counts).
    """

    def __init__(self) -> None:
        self.usage = StreamUsage()

    def feed(self, line: str) -> None:
        """Take one line."""
        data = _json(line)
        if data is None or data.get("type") != "usage":
            return
        self.usage.turns = _int(data.get("turns"))
        self.usage.tokens_in = _int(data.get("tokens_in"))
        self.usage.tokens_out = _int(data.get("tokens_out"))
        if isinstance(data.get("cost_usd"), int | float):
            self.usage.cost_usd = float(data["cost_usd"])


@dataclass(frozen=True)
class Launcher:
    """What is needed to launch one CLI agent."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None = None


@dataclass(frozen=True)
class CLIProfile:
    """One CLI agent: its binary, how to install it, its keys, how to launch and read it."""

    name: str
    binary: str
    install: str
    keys: tuple[str, ...]
    """Environment variables of which at least one must be set (empty: none needed)."""
    passthrough: tuple[str, ...]
    """Further variables passed on when set (endpoints, organisation ids)."""
    build: Callable[[AgentContext, _Invocation], Launcher]
    parser: Callable[[], StreamParser]
    text_output: bool = False
    """Whether stdout is plain text (kept as `{"type": "text"}` lines)."""


@dataclass
class _Invocation:
    """Per-attempt facts a profile builds its command from."""

    binary: str
    prompt: str
    turns: int
    home: Path
    env: dict[str, str]
    command: list[str] = field(default_factory=list)


def _claude(ctx: AgentContext, inv: _Invocation) -> Launcher:
    argv = [inv.binary, "-p", inv.prompt, "--output-format", "stream-json", "--verbose"]
    argv += ["--max-turns", str(inv.turns), "--permission-mode", "bypassPermissions"]
    if ctx.model.model:
        argv += ["--model", ctx.model.model]
    if ctx.budget.cost_usd:
        argv += ["--max-budget-usd", f"{ctx.budget.cost_usd:g}"]
    env = inv.env | {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    if ctx.model.base_url:
        env["ANTHROPIC_BASE_URL"] = ctx.model.base_url
    return Launcher(argv, env)


def _codex(ctx: AgentContext, inv: _Invocation) -> Launcher:
    argv = [inv.binary, "exec", "--json", "--skip-git-repo-check", "--color", "never"]
    argv += ["--dangerously-bypass-approvals-and-sandbox", "-C", str(ctx.workspace)]
    if ctx.model.model:
        argv += ["-m", ctx.model.model]
    env = dict(inv.env)
    if ctx.model.base_url:
        env["OPENAI_BASE_URL"] = ctx.model.base_url
    return Launcher([*argv, inv.prompt], env)


def _cursor(ctx: AgentContext, inv: _Invocation) -> Launcher:
    argv = [inv.binary, "-p", inv.prompt, "--output-format", "stream-json", "--force"]
    if ctx.model.model:
        argv += ["--model", ctx.model.model]
    return Launcher(argv, dict(inv.env))


def _aider(ctx: AgentContext, inv: _Invocation) -> Launcher:
    argv = [inv.binary, "--message", inv.prompt, "--yes-always", "--no-git", "--no-auto-commits"]
    argv += ["--no-pretty", "--no-stream", "--no-check-update", "--analytics-disable"]
    argv += ["--no-show-model-warnings", "--no-restore-chat-history"]
    argv += ["--chat-history-file", str(inv.home / "aider.chat.history.md")]
    argv += ["--input-history-file", str(inv.home / "aider.input.history")]
    argv += ["--read", "TASK.md"]
    for name in ctx.task.spec.submission.files:
        argv += ["--file", name]
    argv += ["--test-cmd", "gauntlet-ws test", "--auto-test"]
    if ctx.model.model:
        argv += ["--model", ctx.model.model]
    if ctx.model.base_url:
        argv += ["--openai-api-base", ctx.model.base_url]
    return Launcher(argv, dict(inv.env))


def _generic(ctx: AgentContext, inv: _Invocation) -> Launcher:
    values = {
        "prompt": inv.prompt,
        "workspace": str(ctx.workspace),
        "model": ctx.model.model or "",
        "turns": str(inv.turns),
    }
    argv = [_fill(part, values) for part in inv.command]
    argv[0] = inv.binary
    return Launcher(argv, dict(inv.env), stdin=inv.prompt.encode("utf-8"))


def _fill(part: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(prompt|workspace|model|turns)\}", lambda m: values[m[1]], part)


PROFILES: dict[str, CLIProfile] = {
    p.name: p
    for p in (
        CLIProfile(
            "claude-code",
            "claude",
            "npm install -g @anthropic-ai/claude-code",
            ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
            (
                "ANTHROPIC_BASE_URL",
                "ANTHROPIC_MODEL",
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX",
            ),
            _claude,
            ClaudeStream,
        ),
        CLIProfile(
            "codex",
            "codex",
            "npm install -g @openai/codex",
            ("OPENAI_API_KEY", "CODEX_API_KEY"),
            ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT"),
            _codex,
            CodexStream,
        ),
        CLIProfile(
            "cursor",
            "cursor-agent",
            "curl https://cursor.com/install -fsS | bash",
            ("CURSOR_API_KEY",),
            (),
            _cursor,
            CursorStream,
        ),
        CLIProfile(
            "aider",
            "aider",
            "python -m pip install aider-install && aider-install",
            (
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "DEEPSEEK_API_KEY",
                "GEMINI_API_KEY",
                "OPENROUTER_API_KEY",
            ),
            ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OLLAMA_API_BASE"),
            _aider,
            AiderStream,
            text_output=True,
        ),
        CLIProfile("generic", "", "", (), (), _generic, GenericStream),
    )
}


class CLIAgent:
    """A CLI coding agent launched headless in the workspace."""

    def __init__(
        self,
        profile: CLIProfile,
        sandbox_spec: sandbox.SandboxSpec,
        *,
        command: list[str] | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        """Check that the agent can run here.

        Raises:
            ConfigError: Its binary is not on PATH, none of its keys is set, or the sandbox is
                not usable; the message names what to install or set.
        """
        self.profile = profile
        self.name = profile.name
        kind, self.sandbox_note = sandbox.resolve(sandbox_spec.kind)
        self.sandbox = sandbox_spec.model_copy(update={"kind": kind})
        self.sandbox_kind: str = kind
        """How the agent's processes are contained (`auto` resolved): recorded per attempt."""
        self.command = command or []
        self.prices = prices if prices is not None else PriceTable()
        binary = self.command[0] if self.command else profile.binary
        # In a container the image's binary runs, found on the image's own PATH.
        resolved = binary if kind == "docker" else shutil.which(binary)
        if resolved is None:
            remedy = f"; install it with: {profile.install}" if profile.install else ""
            raise ConfigError(
                f"agent '{self.name}' needs the '{binary}' command, which is not on PATH{remedy}"
            )
        self.binary = resolved
        if profile.keys and not any(os.environ.get(k) for k in profile.keys):
            raise ConfigError(
                f"agent '{self.name}' needs an API key: set "
                + " or ".join(profile.keys)
                + " in the environment"
            )
        problem = sandbox.availability(kind)
        if problem is not None:
            raise ConfigError(f"agent '{self.name}' cannot use sandbox '{kind}': {problem}")

    def preflight(self, model: ModelSettings) -> None:
        """Check, before a run's first attempt, that an endpoint given with `--base-url` answers.

        (The binary and the key are checked when the agent is made; a vendor's own endpoint is
        not probed, since the machine may reach it only through the agent's own settings.)

        Raises:
            ConfigError: The endpoint does not answer.
        """
        if not model.base_url:
            return
        problem = endpoint_problem(model.base_url)
        if problem is not None:
            raise ConfigError(f"agent '{self.name}' cannot reach its model: {problem}")

    def run(self, ctx: AgentContext) -> AgentResult:
        """Run the agent until it exits or its budget runs out; the workspace is the result."""
        home = Path(tempfile.mkdtemp(prefix="gauntlet-home-"))
        # The call log is kept with the attempt's transcript, outside the workspace.
        toolbox = Toolbox(
            ctx.task,
            ctx.workspace,
            device=ctx.device,
            seed=ctx.seed,
            log_path=ctx.transcript.parent / "tool-calls.jsonl",
        )
        try:
            with ToolServer(toolbox, caller=self.name) as server:
                return self._run(ctx, home, server, toolbox)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def _run(
        self, ctx: AgentContext, home: Path, server: ToolServer, toolbox: Toolbox
    ) -> AgentResult:
        turns = turn_limit(ctx.task, ctx.budget)
        prompt = PROMPT.format(workspace=ctx.workspace, brief=ctx.brief)
        invocation = _Invocation(
            binary=self.binary,
            prompt=prompt,
            turns=turns,
            home=home,
            env=self._environment(ctx, home, server),
            command=self.command,
        )
        launcher = self.profile.build(ctx, invocation)
        # A generic command's absolute paths (a script, a config) are readable in the sandbox.
        named = [Path(a) for a in self.command[1:] if a.startswith("/") and Path(a).exists()]
        launch = sandbox.prepare(
            self.sandbox,
            launcher.argv,
            workspace=ctx.workspace,
            env=launcher.env,
            writable=[home, server.socket_dir],
            readable=named,
            hidden=[ctx.task.root],
            name=f"gauntlet-{ctx.workspace.parent.name}",
        )
        watch = _Watch(self, ctx, turns, ctx.transcript, self.profile.text_output)
        started = time.monotonic()
        child = process.Child(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            stdin_data=launcher.stdin,
            output_limit=STDERR_LIMIT_BYTES,
            on_stdout_line=watch.feed,
        )
        watch.attach(child)
        logger.info("started agent %s (pid %d) in %s", self.name, child.pid, ctx.workspace)
        finished = child.wait(timeout_s=ctx.budget.wall_s, kill_tree=True)
        for command in launch.cleanup:
            process.run(command, timeout_s=30)
        watch.close()
        stderr = finished.stderr.strip()
        if stderr:
            ctx.transcript.with_suffix(".stderr.txt").write_text(stderr + "\n", encoding="utf-8")
        usage = watch.totals(time.monotonic() - started, toolbox.calls)
        status, message = self._outcome(ctx, finished, watch, stderr)
        if server.errors:
            message += f" (tool server: {'; '.join(server.errors[:3])})"
        if self.sandbox_note:
            message += f" ({self.sandbox_note})"
        return AgentResult(
            status=status,
            usage=usage,
            message=message,
            transcript=ctx.transcript,
            sandbox=self.sandbox_kind,
        )

    def _environment(self, ctx: AgentContext, home: Path, server: ToolServer) -> dict[str, str]:
        tools_bin = str(Path(sys.executable).parent)
        path = os.pathsep.join(
            [tools_bin, str(Path(self.binary).parent), os.environ.get("PATH", "/usr/bin:/bin")]
        )
        env = {
            "PATH": path,
            "HOME": str(home),
            "TERM": "dumb",
            "NO_COLOR": "1",
            "CI": "1",
            SOCKET_ENV: str(server.socket_path),
        }
        if self.sandbox.kind != "none":
            env["IS_SANDBOX"] = "1"  # the agent runs contained (Claude Code allows bypass as root)
        for key in (*COMMON_ENV, *self.profile.keys, *self.profile.passthrough):
            if os.environ.get(key):
                env[key] = os.environ[key]
        return env

    def _outcome(
        self, ctx: AgentContext, finished: process.Finished, watch: _Watch, stderr: str
    ) -> tuple[AgentStatus, str]:
        if watch.stop_reason:
            return "budget_exhausted", watch.stop_reason + "; the agent's processes were killed"
        if finished.timed_out:
            return (
                "timeout",
                f"wall-clock budget of {ctx.budget.wall_s:g} s exhausted; the agent's processes "
                "were killed",
            )
        said = watch.parser.usage
        if said.status is not None and said.status != "finished":
            return said.status, said.message
        if finished.returncode != 0:
            how = finished.signal_name or f"code {finished.returncode}"
            tail = stderr[-STDERR_TAIL_CHARS:]
            return "error", f"{self.name} exited with {how}" + (f": {tail}" if tail else "")
        return "finished", said.message or f"{self.name} exited normally"


class _Watch:
    """Keeps the transcript, parses usage and enforces budgets as the agent's lines arrive.

    Runs in the reader thread of the agent's stdout; turn, token and cost budgets kill the
    agent's process tree as soon as the stream shows them spent.
    """

    def __init__(
        self, owner: CLIAgent, ctx: AgentContext, turns: int, transcript: Path, text: bool
    ) -> None:
        self.owner = owner
        self.ctx = ctx
        self.turns = turns
        self.text = text
        self.parser = owner.profile.parser()
        transcript.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = transcript.open("w", encoding="utf-8")
        self._written = 0
        self._lock = threading.Lock()
        self._child: process.Child | None = None
        self.stop_reason = ""

    def attach(self, child: process.Child) -> None:
        """The process to kill when a budget runs out."""
        with self._lock:
            self._child = child
            pending = bool(self.stop_reason)
        if pending:
            child.kill_tree()

    def feed(self, line: str) -> None:
        """One line of the agent's stdout."""
        with self._lock:
            self._keep(line)
            self.parser.feed(line)
            if not self.stop_reason:
                self.stop_reason = self._exhausted()
                if self.stop_reason and self._child is not None:
                    self._child.kill_tree()

    def _keep(self, line: str) -> None:
        if self._written > TRANSCRIPT_LIMIT_BYTES:
            return
        if self.text or _json(line) is None:
            line = json.dumps({"type": "text", "text": line})
        self._handle.write(line + "\n")
        self._handle.flush()
        self._written += len(line) + 1
        if self._written > TRANSCRIPT_LIMIT_BYTES:
            marker = {"type": "text", "text": f"[transcript cut at {TRANSCRIPT_LIMIT_BYTES} bytes]"}
            self._handle.write(json.dumps(marker) + "\n")

    def _exhausted(self) -> str:
        budget = self.ctx.budget
        usage = self.parser.usage
        if usage.turns > self.turns:
            return f"turn budget of {self.turns} exhausted ({usage.turns} turns)"
        tokens = usage.tokens_in + usage.tokens_out
        if budget.tokens and tokens >= budget.tokens:
            return f"token budget of {budget.tokens} exhausted ({tokens} used)"
        cost = self._cost()
        if budget.cost_usd and cost >= budget.cost_usd:
            return f"cost budget of ${budget.cost_usd:g} exhausted (${cost:.4f} used)"
        return ""

    def _cost(self) -> float:
        usage = self.parser.usage
        if usage.cost_usd is not None:
            return usage.cost_usd
        if not self.ctx.model.model:
            return 0.0
        return self.owner.prices.cost_usd(self.ctx.model.model, usage.tokens_in, usage.tokens_out)

    def totals(self, wall_s: float, tool_calls: int) -> Usage:
        """The attempt's usage."""
        with self._lock:
            usage = self.parser.usage
            return Usage(
                wall_s=round(wall_s, 3),
                turns=usage.turns,
                tokens_in=usage.tokens_in,
                tokens_out=usage.tokens_out,
                cost_usd=round(self._cost(), 6),
                tool_calls=tool_calls,
            )

    def close(self) -> None:
        """Close the transcript."""
        with self._lock:
            self._handle.close()


#: Seconds the pre-flight check waits for an endpoint to answer.
PREFLIGHT_TIMEOUT_S = 10.0


def endpoint_problem(url: str, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> str | None:
    """None when something answers HTTP at `url` (any status), else why not."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None  # it answered, with an error status: a server is there
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        return f"the endpoint {url} does not answer ({reason})"


def _sandbox_from(agent_name: str, options: dict[str, str]) -> sandbox.SandboxSpec:
    kind = options.get("sandbox", os.environ.get(SANDBOX_ENV, "auto"))
    if kind not in sandbox.SANDBOX_KINDS:
        raise ConfigError(
            f"unknown sandbox '{kind}' for agent '{agent_name}' "
            f"(known: {', '.join(sandbox.SANDBOX_KINDS)})"
        )
    network = flag(
        agent_name, "network", options.get("network", os.environ.get(SANDBOX_NETWORK_ENV, "on"))
    )
    image = options.get("image", os.environ.get(DOCKER_IMAGE_ENV, sandbox.DEFAULT_DOCKER_IMAGE))
    return sandbox.SandboxSpec(kind=kind, network=network, image=image)  # type: ignore[arg-type]


def _named(name: str) -> Callable[[str], CLIAgent]:
    def factory(argument: str) -> CLIAgent:
        options = parse_options(name, argument, OPTIONS)
        return CLIAgent(PROFILES[name], _sandbox_from(name, options))

    factory.__doc__ = f"`{name}[:sandbox=...,network=...,image=...]`."
    return factory


agent("claude-code")(_named("claude-code"))
agent("codex")(_named("codex"))
agent("cursor")(_named("cursor"))
agent("aider")(_named("aider"))


#: Options written before a generic command: `key=value,...:` with keys of `OPTIONS`.
_KEYS = "|".join(OPTIONS)
_GENERIC_OPTIONS = re.compile(rf"^((?:(?:{_KEYS})=[^,:\s]*,?)+):(.*)$", re.S)


@agent("generic")
def make_generic(argument: str) -> CLIAgent:
    """`generic:[key=value,...:]'<command>'`: any command, launched like the other CLI agents."""
    options: dict[str, str] = {}
    prefix = _GENERIC_OPTIONS.match(argument)
    if prefix is not None:
        options = parse_options("generic", prefix.group(1), OPTIONS)
        argument = prefix.group(2)
    try:
        command = shlex.split(argument)
    except ValueError as err:
        raise ConfigError(
            f"cannot split the command of agent 'generic' ({argument!r}): {err}"
        ) from err
    if not command:
        raise ConfigError(
            "agent 'generic' needs a command: generic:'<command>' (placeholders {prompt}, "
            "{workspace}, {model}, {turns}; the prompt also arrives on stdin), after options "
            "if wanted: generic:sandbox=none,network=off:'<command>'"
        )
    return CLIAgent(PROFILES["generic"], _sandbox_from("generic", options), command=command)
