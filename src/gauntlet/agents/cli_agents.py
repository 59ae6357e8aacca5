"""CLI coding agents: `claude-code`, `codex`, `cursor`, `aider` and `generic:'<command>'`.

Each is launched headless in the workspace, inside the chosen sandbox, the way its current
release expects (`docs/agents.md` gives each command line), with a scrubbed environment: the
model's API key, a private HOME, and `GAUNTLET_WS_SOCKET`, through which `gauntlet-ws` reaches
the feedback tools served outside the sandbox. Its streamed output (stream-json or JSONL; text
lines for aider) is kept line by line as the transcript while it runs, and usage (model calls,
tokens in, cached and out) is read from it and from the side file the client writes in its
home (Codex's session rollout, aider's analytics log): `gauntlet.agents.cli_streams`. Dollars
come from the price table (`prices=FILE` extends it), else from the client's own figure.
Budgets are enforced from outside: the wall clock by killing the agent's whole process tree,
and turns, tokens and dollars by killing it as soon as its usage shows the budget spent.

Options (`claude-code:key=value,...`): `sandbox` (auto, bwrap, confine, docker, none),
`network` (on, off), `prices` (a price table file). Defaults come from `GAUNTLET_SANDBOX` (else
`auto`: the strongest sandbox that works here, `sandbox.resolve`) and
`GAUNTLET_SANDBOX_NETWORK`. `generic:'<command>'` takes a command
(placeholders `{prompt}`, `{workspace}`, `{model}`, `{turns}`; the prompt also arrives on
stdin), after the same options if wanted: `generic:sandbox=bwrap,network=off:'<command>'`.
"""

from __future__ import annotations

import glob
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
from typing import IO

from gauntlet import process, sandbox
from gauntlet.agents.base import (
    AgentContext,
    AgentResult,
    AgentStatus,
    ModelSettings,
    Usage,
    agent,
)
from gauntlet.agents.cli_streams import (
    AiderStream,
    ClaudeStream,
    CodexStream,
    CursorStream,
    GenericStream,
    StreamParser,
)
from gauntlet.agents.llm import PriceTable
from gauntlet.agents.options import flag, parse_options
from gauntlet.agents.tools import Toolbox
from gauntlet.errors import ConfigError
from gauntlet.settings import SANDBOX_ENV, SANDBOX_NETWORK_ENV
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
#: Seconds between two reads of a client's side file while it runs.
SIDE_FILE_POLL_S = 0.2
#: Where `make clients` installs the real clients in a checkout (searched after PATH).
CLIENTS_DIR = Path(__file__).resolve().parents[3] / ".clients"
#: aider's analytics log in the agent's HOME.
AIDER_ANALYTICS = "aider.analytics.jsonl"
#: aider's chat history size that would start a summary: more than any session here holds.
AIDER_HISTORY_TOKENS = 10_000_000
#: Claude Code's tools the agent may use without asking (headless, nobody could answer).
CLAUDE_TOOLS = ("Bash", "Read", "Edit", "MultiEdit", "Write", "Glob", "Grep", "LS", "TodoWrite")
#: The model provider Codex is given (`-c model_providers.<id>...`).
CODEX_PROVIDER = "gauntlet"
#: Codex's endpoint when no `--base-url` is given.
OPENAI_URL = "https://api.openai.com/v1"

OPTIONS = {
    "sandbox": "auto (the default: bwrap, else confine, else docker, else none), bwrap, confine, "
    "docker or none",
    "network": "on or off: whether the sandbox reaches the network",
    "prices": "a TOML or JSON price table file (model = {input_per_mtok, output_per_mtok})",
}

PROMPT = """\
You are working in the folder {workspace}. Your task is described in TASK.md in this folder,
reproduced below. Work only in this folder. For feedback run the `gauntlet-ws` command here
(`gauntlet-ws check`, `gauntlet-ws test`, `gauntlet-ws bench`, ...): it judges your kernel on the
visible configurations. Other configurations will be tested when you stop. When you are done,
stop: the contract's files as they are then are your submission.

{brief}"""


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
    side_file: str | None = None
    """A glob, relative to the agent's HOME, of the file the client writes its usage to."""
    clients_bin: str | None = None
    """Where `make clients` puts the binary, relative to `CLIENTS_DIR`."""
    counts_calls: bool = False
    """Whether its stream counts every model call, so that a normal exit after none is known
    to be a client that did nothing (it is an error, never a finished attempt)."""


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
    # Raw API events give each model call's usage as it streams (kept if the client is killed).
    argv += ["--include-partial-messages", "--max-turns", str(inv.turns)]
    # `bypassPermissions` is refused as root; accepted edits and a list of allowed tools work
    # for every user, and nobody is there to approve anything else.
    argv += ["--permission-mode", "acceptEdits", "--allowedTools", ",".join(CLAUDE_TOOLS)]
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
    # Codex reads no OPENAI_BASE_URL: the endpoint and the key's variable are a provider of
    # its config, given as `-c` overrides (TOML values).
    key = next((k for k in ("OPENAI_API_KEY", "CODEX_API_KEY") if inv.env.get(k)), None)
    provider = {
        "name": CODEX_PROVIDER,
        "base_url": ctx.model.base_url or OPENAI_URL,
        "wire_api": "responses",
    } | ({"env_key": key} if key else {})
    argv += ["-c", f"model_provider={json.dumps(CODEX_PROVIDER)}"]
    for name, value in provider.items():
        argv += ["-c", f"model_providers.{CODEX_PROVIDER}.{name}={json.dumps(value)}"]
    return Launcher([*argv, inv.prompt], dict(inv.env))


def _cursor(ctx: AgentContext, inv: _Invocation) -> Launcher:
    argv = [inv.binary, "-p", inv.prompt, "--output-format", "stream-json", "--force"]
    if ctx.model.model:
        argv += ["--model", ctx.model.model]
    return Launcher(argv, dict(inv.env))


def _aider(ctx: AgentContext, inv: _Invocation) -> Launcher:
    argv = [inv.binary, "--message", inv.prompt, "--yes-always", "--no-git", "--no-auto-commits"]
    argv += ["--no-pretty", "--no-stream", "--no-check-update", "--no-show-model-warnings"]
    # Analytics stay off; their log is written anyway and holds each call's exact usage.
    argv += ["--analytics-disable", "--analytics-log", str(inv.home / AIDER_ANALYTICS)]
    # Its background summaries of the chat are model calls it logs nowhere: with them off,
    # every call is in the analytics log (one `--message` session stays short anyway).
    argv += ["--no-restore-chat-history", "--max-chat-history-tokens", str(AIDER_HISTORY_TOKENS)]
    argv += ["--chat-history-file", str(inv.home / "aider.chat.history.md")]
    argv += ["--input-history-file", str(inv.home / "aider.input.history")]
    # Its automatic lint knows no `.asm` or `.cu` and would stop the test loop; the judge checks.
    argv += ["--no-auto-lint", "--read", "TASK.md"]
    for name in ctx.task.spec.submission.files:
        argv += ["--file", name]
    argv += ["--test-cmd", "gauntlet-ws test", "--auto-test"]
    model = ctx.model.model
    if model and ctx.model.base_url and "/" not in model:
        model = f"openai/{model}"  # LiteLLM's name for a model behind an OpenAI-compatible URL
    if model:
        argv += ["--model", model]
    if ctx.model.base_url:
        argv += ["--openai-api-base", ctx.model.base_url]
    # LiteLLM would fetch its price list from GitHub at every start.
    env = inv.env | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return Launcher(argv, env)


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
            "npm install -g @anthropic-ai/claude-code (or: make clients)",
            ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
            (
                "ANTHROPIC_BASE_URL",
                "ANTHROPIC_MODEL",
                "CLAUDE_CODE_USE_BEDROCK",
                "CLAUDE_CODE_USE_VERTEX",
            ),
            _claude,
            ClaudeStream,
            clients_bin="node_modules/.bin",
            counts_calls=True,
        ),
        CLIProfile(
            "codex",
            "codex",
            "npm install -g @openai/codex (or: make clients)",
            ("OPENAI_API_KEY", "CODEX_API_KEY"),
            ("OPENAI_ORG_ID", "OPENAI_PROJECT"),
            _codex,
            CodexStream,
            side_file=".codex/sessions/**/rollout-*.jsonl",
            clients_bin="node_modules/.bin",
            counts_calls=True,
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
            "python -m pip install aider-install && aider-install (or: make clients)",
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
            side_file=AIDER_ANALYTICS,
            clients_bin="aider/bin",
            counts_calls=True,
        ),
        CLIProfile("generic", "", "", (), (), _generic, GenericStream),
    )
}


def find_binary(profile: CLIProfile, binary: str | None = None) -> str | None:
    """The client's executable: on PATH, else where `make clients` installed it."""
    name = binary or profile.binary
    found = shutil.which(name)
    if found is None and profile.clients_bin is not None:
        found = shutil.which(name, path=str(CLIENTS_DIR / profile.clients_bin))
    return found


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
            ConfigError: Its binary is not on PATH (nor where `make clients` puts it), none of
                its keys is set, or the sandbox is not usable; the message names what to
                install or set.
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
        resolved = find_binary(profile, binary)
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
        env = self._environment(ctx, home, server)
        _keep_path_in_login_shells(home, env["PATH"])
        invocation = _Invocation(
            binary=self.binary,
            prompt=prompt,
            turns=turns,
            home=home,
            env=env,
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
        watch = _Watch(self, ctx, turns, home)
        started = time.monotonic()
        # Closing the launch ends the agent's container (docker), whatever still runs there.
        with launch:
            try:
                # die_with_parent: this process killed with its harness (`kill -9`, which no
                # one can clean up after) takes the client along; bwrap and confine end their
                # namespaces with it (the container ends with the launch's tether).
                child = process.Child(
                    launch.argv,
                    env=launch.env,
                    cwd=launch.cwd,
                    stdin_data=launcher.stdin,
                    output_limit=STDERR_LIMIT_BYTES,
                    on_stdout_line=watch.feed,
                    die_with_parent=True,
                )
            except OSError as err:
                watch.close()
                return AgentResult(
                    status="error",
                    message=f"{self.name} could not be started ({launch.argv[0]}): {err}",
                    transcript=ctx.transcript,
                    sandbox=self.sandbox_kind,
                )
            watch.attach(child)
            logger.info("started agent %s (pid %d) in %s", self.name, child.pid, ctx.workspace)
            finished = child.wait(timeout_s=ctx.budget.wall_s, kill_tree=True)
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
        for key in (*COMMON_ENV, *self.profile.keys, *self.profile.passthrough):
            if os.environ.get(key):
                env[key] = os.environ[key]
        return env

    def _outcome(
        self, ctx: AgentContext, finished: process.Finished, watch: _Watch, stderr: str
    ) -> tuple[AgentStatus, str]:
        said = watch.parser.usage
        if watch.stop_reason:
            return "budget_exhausted", watch.stop_reason + "; the agent's processes were killed"
        if finished.timed_out:
            return (
                "timeout",
                f"wall-clock budget of {ctx.budget.wall_s:g} s exhausted; the agent's processes "
                "were killed" + (f" (its last word: {said.message})" if said.message else ""),
            )
        if said.status is not None and said.status != "finished":
            return said.status, said.message
        if finished.returncode != 0:
            how = finished.signal_name or f"code {finished.returncode}"
            last = said.message or stderr[-STDERR_TAIL_CHARS:]
            return "error", f"{self.name} exited with {how}" + (f": {last}" if last else "")
        if self.profile.counts_calls and said.calls == 0:
            # Seen with Claude Code 2.1.197 where it cannot make /tmp/claude-<uid> (a non-root
            # user in a container whose /tmp was root's): exit 0, no output, no request.
            # Judging the untouched template would score the baseline.
            last = said.message or stderr[-STDERR_TAIL_CHARS:] or "it printed nothing"
            return "error", f"{self.name} exited normally without calling its model: {last}"
        return "finished", said.message or f"{self.name} exited normally"


def _keep_path_in_login_shells(home: Path, path: str) -> None:
    """Have login shells in the private HOME put the agent's PATH first again.

    Codex runs commands with `bash -lc`, and a login shell's `/etc/profile` resets PATH on many
    systems, so `gauntlet-ws` would not be found; the shell then reads these files in HOME.
    """
    line = f'export PATH={shlex.quote(path)}"${{PATH:+:$PATH}}"\n'
    for name in (".bash_profile", ".profile"):
        (home / name).write_text(line, encoding="utf-8")


class _Watch:
    """Keeps the transcript, reads usage and enforces budgets as the agent's output arrives.

    `feed` runs in the reader thread of the agent's stdout; a thread of its own reads the
    client's side file (`CLIProfile.side_file`) in HOME as it grows. Turn, token and cost
    budgets kill the agent's process tree as soon as the usage shows them spent.
    """

    def __init__(self, owner: CLIAgent, ctx: AgentContext, turns: int, home: Path) -> None:
        self.owner = owner
        self.ctx = ctx
        self.turns = turns
        self.text = owner.profile.text_output
        self.parser = owner.profile.parser()
        ctx.transcript.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[str] = ctx.transcript.open("w", encoding="utf-8")
        self._written = 0
        self._lock = threading.Lock()
        self._child: process.Child | None = None
        self.stop_reason = ""
        self._side = (
            _SideFile(home, owner.profile.side_file, self._feed_side)
            if owner.profile.side_file
            else None
        )

    def attach(self, child: process.Child) -> None:
        """The process to kill when a budget runs out."""
        with self._lock:
            self._child = child
            pending = bool(self.stop_reason)
        if pending:
            child.kill_tree()

    def feed(self, line: str) -> None:
        """One line of the agent's stdout."""
        if self._side is not None:
            # A line on stdout (a command starting, say) often follows a model call: read its
            # usage now rather than at the next poll, so a budget stops the client sooner.
            self._side.read()
        with self._lock:
            if self.parser.feed(line):
                self._keep(line)
            self._check()

    def _feed_side(self, line: str) -> None:
        with self._lock:
            self.parser.feed_side(line)
            self._check()

    def _check(self) -> None:
        if not self.stop_reason:
            self.stop_reason = self._exhausted()
            if self.stop_reason and self._child is not None:
                self._child.kill_tree()

    def _keep(self, line: str) -> None:
        if self._written > TRANSCRIPT_LIMIT_BYTES:
            return
        if self.text or not line.startswith("{"):
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
        if usage.calls > self.turns:
            return f"turn budget of {self.turns} exhausted ({usage.calls} model calls)"
        tokens = usage.tokens_in + usage.tokens_out
        if budget.tokens and tokens >= budget.tokens:
            return f"token budget of {budget.tokens} exhausted ({tokens} used)"
        cost = self._cost()
        if budget.cost_usd and cost >= budget.cost_usd:
            return f"cost budget of ${budget.cost_usd:g} exhausted (${cost:.4f} used)"
        return ""

    def _cost(self, final: bool = False) -> float:
        """The price table's figure, else the client's own, else 0 (said once, at the end)."""
        usage = self.parser.usage
        model = self.ctx.model.model
        if model and self.owner.prices.price(model) is not None:
            return self.owner.prices.cost_usd(model, usage.tokens_in, usage.tokens_out)
        if usage.cost_usd is not None:
            return usage.cost_usd
        if not model or not final:
            return 0.0
        return self.owner.prices.cost_usd(model, usage.tokens_in, usage.tokens_out)

    def totals(self, wall_s: float, tool_calls: int) -> Usage:
        """The attempt's usage."""
        with self._lock:
            usage = self.parser.usage
            return Usage(
                wall_s=round(wall_s, 3),
                turns=usage.calls,
                tokens_in=usage.tokens_in,
                tokens_cached=usage.tokens_cached,
                tokens_out=usage.tokens_out,
                cost_usd=round(self._cost(final=True), 6),
                tool_calls=tool_calls,
            )

    def close(self) -> None:
        """Read the side file to its end and close the transcript."""
        if self._side is not None:
            self._side.stop()
        with self._lock:
            self._handle.close()


class _SideFile:
    """Follows the files matching a glob in a folder, line by line, from a thread of its own."""

    def __init__(self, folder: Path, pattern: str, on_line: Callable[[str], None]) -> None:
        self.pattern = str(folder / pattern)
        self.on_line = on_line
        self._offsets: dict[str, int] = {}
        self._partial: dict[str, bytes] = {}
        self._lock = threading.Lock()
        """Held while reading: the poller and the stdout reader both read."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        while not self._stop.wait(SIDE_FILE_POLL_S):
            self.read()

    def read(self) -> None:
        """Pass on the whole lines written since the last read."""
        with self._lock:
            self._read()

    def _read(self) -> None:
        for name in sorted(glob.glob(self.pattern, recursive=True)):
            try:
                with open(name, "rb") as handle:
                    handle.seek(self._offsets.get(name, 0))
                    data = handle.read()
            except OSError:
                continue
            self._offsets[name] = self._offsets.get(name, 0) + len(data)
            # A line is read once it is whole; the rest waits for the next read.
            *lines, rest = (self._partial.get(name, b"") + data).split(b"\n")
            self._partial[name] = rest
            for raw in lines:
                self.on_line(raw.decode("utf-8", errors="replace"))

    def stop(self) -> None:
        """Stop following, after a last read of what the files hold."""
        self._stop.set()
        self._thread.join()
        self.read()


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
    return sandbox.SandboxSpec(kind=kind, network=network)  # type: ignore[arg-type]


def _prices(options: dict[str, str]) -> PriceTable | None:
    return PriceTable.load(Path(options["prices"])) if "prices" in options else None


def _named(name: str) -> Callable[[str], CLIAgent]:
    def factory(argument: str) -> CLIAgent:
        options = parse_options(name, argument, OPTIONS)
        return CLIAgent(PROFILES[name], _sandbox_from(name, options), prices=_prices(options))

    factory.__doc__ = f"`{name}[:sandbox=...,network=...,prices=FILE]`."
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
    return CLIAgent(
        PROFILES["generic"],
        _sandbox_from("generic", options),
        command=command,
        prices=_prices(options),
    )
