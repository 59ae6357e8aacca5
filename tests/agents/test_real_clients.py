"""The real CLI clients (Claude Code, Codex CLI, aider) against loopback fake model servers.

Each client, installed by `make clients` (skipped, with the reason, where it is not), is run
as `gauntlet run` runs it, in each sandbox that works here, pointed at a scripted server that
speaks its own API: it reads the brief, calls `gauntlet-ws`, writes a kernel that the judge
passes, and the usage recorded (model calls, tokens in, cached and out) is what the server
answered. A turn, token, dollar or wall-clock budget and an API error each end as they should,
with the usage up to then kept.
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from gauntlet import process, sandbox
from gauntlet.agents import make_agent
from gauntlet.agents.base import AgentResult, Budget, ModelSettings, Usage
from gauntlet.judge import judge
from gauntlet.runner import Job, RunConfig, run_attempt
from gauntlet.store import RunInfo, RunStore, now
from gauntlet.task import Task
from tests.support.fake_models import (
    Fail,
    FakeAnthropic,
    FakeChat,
    FakeModelServer,
    FakeResponses,
    Step,
    Turn,
    call,
    say,
)
from tests.support.real_clients import RealClient, real_client

__all__ = ["real_client"]  # the fixture, used by name

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
KEYS = {"claude-code": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY", "aider": "OPENAI_API_KEY"}
SERVERS: dict[str, type[FakeModelServer]] = {
    "claude-code": FakeAnthropic,
    "codex": FakeResponses,
    "aider": FakeChat,
}
SANDBOXES = ("none", "bwrap", "confine", "docker")


def expert(task: Task) -> str:
    return task.path("expert/kernel.py").read_text()


def after(
    server: type[FakeModelServer], check: Callable[[str], bool], then: Turn, what: str
) -> Step:
    """A step that checks the output of the client's last tool call before answering `then`."""

    def step(body: dict[str, Any]) -> Turn:
        output = server.last_tool_output(body)
        if not check(output):
            raise AssertionError(f"unexpected tool output ({what}):\n{output[:2000]}")
        return then

    return step


def solving_script(agent: str, task: Task, workspace: Path) -> list[Step]:
    """Read the brief, write the expert kernel, run `gauntlet-ws test`, stop once it passes."""
    kernel = expert(task)
    passed = "status: pass"
    if agent == "claude-code":
        server = FakeAnthropic
        return [
            call("Read", file_path=str(workspace / "TASK.md")),
            after(
                server,
                lambda out: "gauntlet-ws" in out,
                call("Read", file_path=str(workspace / "kernel.py")),
                "TASK.md",
            ),
            call("Write", file_path=str(workspace / "kernel.py"), content=kernel),
            call("Bash", command="gauntlet-ws test", description="judge the kernel"),
            after(
                server,
                lambda out: passed in out,
                say("The kernel passes.", tokens_in=3000, tokens_cached=2500, tokens_out=12),
                "gauntlet-ws test",
            ),
        ]
    if agent == "codex":
        server = FakeResponses
        write = f"cat > kernel.py <<'GAUNTLET_EOF'\n{kernel}GAUNTLET_EOF"
        return [
            call("exec_command", cmd="cat TASK.md"),
            after(
                server, lambda out: "gauntlet-ws" in out, call("exec_command", cmd=write), "TASK.md"
            ),
            # The judge may take longer than Codex's default 10 s wait for a command's output
            # on a loaded machine; a model asks for a longer wait the same way.
            call("exec_command", cmd="gauntlet-ws test", yield_time_ms=120_000),
            after(
                server,
                lambda out: passed in out,
                say("The kernel passes.", tokens_in=3000, tokens_cached=2500, tokens_out=12),
                "gauntlet-ws test",
            ),
        ]
    # aider: the brief is in the chat (--read); it edits through a whole-file listing and runs
    # `gauntlet-ws test` itself (--auto-test), asking again only if the test fails.
    return [lambda body: listing(body, kernel, tokens_in=2222, tokens_out=333)]


def listing(body: dict[str, Any], content: str, **usage: Any) -> Turn | Fail:
    """aider's whole-file listing of `kernel.py`, fenced as its system prompt asks.

    aider fences with four backticks when a file in the chat holds three (as TASK.md does).
    """
    messages = str(body["messages"])
    if "Compute y = 2 * x + 1" not in messages:
        return Fail(400, "the brief is not in the chat")
    fence = "````" if "````" in body["messages"][0]["content"] else "```"
    return Turn(text=f"kernel.py\n{fence}\n{content}{fence}\n", **usage)


def endless_script(agent: str, calls: int) -> list[Step]:
    """A model that keeps running a harmless command."""
    if agent == "claude-code":
        return [call("Bash", command="ls", description="look") for _ in range(calls)]
    if agent == "codex":
        # A command that takes a moment, as real ones do: Codex's usage of a call reaches its
        # rollout file a little after the call (see docs/agents.md), and an instant command
        # could let the next call start before the budget is seen spent.
        return [call("exec_command", cmd="sleep 1; ls") for _ in range(calls)]
    # aider asks again while its test fails: an edit that keeps failing it.
    broken = "import torch\n\n\ndef kernel(x):\n    return x\n"
    return [lambda body: listing(body, broken) for _ in range(calls)]


def usable(kind: str) -> None:
    problem = sandbox.availability(kind)
    if problem is not None:
        pytest.skip(f"sandbox {kind} is not usable here: {problem}")


def assert_usage_matches(usage: Usage, served: FakeModelServer, agent: str) -> None:
    """Model calls and tokens recorded are those the server answered."""
    turns = served.served.turns
    assert usage.turns == len(turns), (usage, len(turns))
    assert usage.tokens_in == served.served.tokens_in
    assert usage.tokens_out == served.served.tokens_out
    # aider's log has no cached count for an OpenAI-compatible endpoint.
    cached = 0 if agent == "aider" else served.served.tokens_cached
    assert usage.tokens_cached == cached


def run_client(
    agent: str, kind: str, server: FakeModelServer, make_context, task: Task, budget: Budget
) -> tuple[AgentResult, Any]:
    ctx, ws = make_context(
        task, budget=budget, model=ModelSettings(model="fake-model", base_url=server.base_url)
    )
    return make_agent(f"{agent}:sandbox={kind}").run(ctx), (ctx, ws)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in set(KEYS.values()):
        monkeypatch.setenv(key, "test-key")
    monkeypatch.delenv("GAUNTLET_SANDBOX", raising=False)


@pytest.mark.parametrize("kind", SANDBOXES)
@pytest.mark.parametrize("real_client", sorted(KEYS), indirect=True)
def test_the_client_solves_the_task_in_each_sandbox(
    real_client: RealClient, kind: str, scale_task, make_context
) -> None:
    usable(kind)
    agent = real_client.agent
    ctx, ws = make_context(scale_task, budget=Budget(wall_s=240))
    with SERVERS[agent](solving_script(agent, scale_task, ws.path)) as server:
        ctx = ctx.model_copy(
            update={"model": ModelSettings(model="fake-model", base_url=server.base_url)}
        )
        result = make_agent(f"{agent}:sandbox={kind}").run(ctx)
    assert not server.failures, server.failures
    assert (result.status, result.sandbox) == ("finished", kind), result.message
    assert not server.script, "the client stopped before the script's end"
    assert_usage_matches(result.usage, server, agent)
    assert result.usage.tool_calls >= 1
    log = (ctx.transcript.parent / "tool-calls.jsonl").read_text().splitlines()
    calls = [(c["caller"], c["tool"], c["ok"]) for c in map(json.loads, log)]
    assert (agent, "test", True) in calls, calls
    assert ws.path.joinpath("kernel.py").read_text() == expert(scale_task)
    verdict = judge(scale_task, ws.path, device="cpu", seed=11, mode="final")
    assert verdict.status == "pass", verdict.reason


#: The unprivileged user the clients are also run as (nobody on Debian and most systems).
NORMAL_UID = 65534


def normal_user_problem() -> str | None:
    """Why the tests cannot run again as `NORMAL_UID` here, else None."""
    if os.getuid() != 0:
        return f"the tests already run as a normal user (uid {os.getuid()}): this is that run"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing"
    python = Path(sys.executable).resolve()
    closed = next((p for p in python.parents if not os.stat(p).st_mode & 0o001), None)
    if closed is not None:
        return (
            f"the interpreter {python} is out of reach of uid {NORMAL_UID}: its folder "
            f"{closed} is closed to other users (mode {os.stat(closed).st_mode & 0o777:o})"
        )
    return None


@pytest.mark.parametrize("kind", SANDBOXES)
@pytest.mark.parametrize("real_client", sorted(KEYS), indirect=True)
def test_the_client_solves_the_task_as_a_normal_user(real_client: RealClient, kind: str) -> None:
    # The test above, again, with the harness and so the client as an unprivileged user:
    # Claude Code treats root differently (it refuses bypassPermissions), and the sandboxes
    # then run without privileges (bwrap and confine through user namespaces; in docker,
    # Claude Code exited 0 at once, silently, while the container's /tmp was root's 0755).
    usable(kind)
    problem = normal_user_problem()
    if problem is not None:
        pytest.skip(problem)
    groups = ["--clear-groups"]
    if kind == "docker":  # the daemon's socket is open to its group
        groups = ["--groups", str(grp.getgrnam("docker").gr_gid)]
    folder = Path(tempfile.mkdtemp(prefix="gauntlet-normal-user-"))
    try:
        for sub in ("home", "tmp", "pytest"):
            (folder / sub).mkdir()
        for path in (folder, *folder.iterdir()):
            os.chown(path, NORMAL_UID, NORMAL_UID)
        test_id = (
            f"tests/agents/test_real_clients.py::test_the_client_solves_the_task_in_each_sandbox"
            f"[{real_client.agent}-{kind}]"
        )
        argv = ["setpriv", f"--reuid={NORMAL_UID}", f"--regid={NORMAL_UID}", *groups, "--"]
        argv += [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--runslow", "-q"]
        argv += [f"--basetemp={folder / 'pytest'}", test_id]
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(folder / "home"),
            "TMPDIR": str(folder / "tmp"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        finished = process.run(argv, env=env, cwd=REPO, timeout_s=600)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-2000:]
    assert "1 passed" in finished.stdout, finished.stdout[-2000:]


#: Dollars per million tokens, in and out, of the price table the cost budget is tested with:
#: each scripted call (1000 tokens in, 50 out) costs $1.05.
PRICE_PER_MTOK = 1000.0
#: Budget kind -> (the budget, the model calls that spend it, its words in the message).
BUDGETS = {
    "turns": (Budget(wall_s=180, turns=2), 3, "turn budget of 2 exhausted"),
    "tokens": (Budget(wall_s=180, tokens=2500), 3, "token budget of 2500 exhausted"),
    "cost": (Budget(wall_s=180, cost_usd=2.0), 2, "cost budget of $2 exhausted"),
}


@pytest.mark.parametrize("spent", sorted(BUDGETS))
@pytest.mark.parametrize("real_client", sorted(KEYS), indirect=True)
def test_a_turn_token_or_cost_budget_kills_the_client_and_keeps_its_usage(
    real_client: RealClient, spent: str, scale_task, make_context, tmp_path: Path
) -> None:
    agent = real_client.agent
    budget, calls, words = BUDGETS[spent]
    prices = tmp_path / "prices.toml"
    prices.write_text(
        f"fake-model = {{input_per_mtok = {PRICE_PER_MTOK}, output_per_mtok = {PRICE_PER_MTOK}}}\n"
    )
    ctx, _ = make_context(
        scale_task, budget=budget, model=ModelSettings(model="fake-model", base_url="x")
    )
    with SERVERS[agent](endless_script(agent, 12)) as server:
        ctx = ctx.model_copy(
            update={"model": ModelSettings(model="fake-model", base_url=server.base_url)}
        )
        result = make_agent(f"{agent}:sandbox=auto,prices={prices}").run(ctx)
    assert result.status == "budget_exhausted", result.message
    usage = result.usage
    # Claude Code stops itself at its --max-turns, after the last call the budget allows.
    if not (agent == "claude-code" and spent == "turns"):
        assert words in result.message, result.message
    # The client was killed at the call that spent the budget, or the next one at the latest
    # (Codex's usage of a call reaches its rollout a moment after the call), and what was
    # served up to then is recorded.
    low = calls - 1 if (agent, spent) == ("claude-code", "turns") else calls
    assert low <= usage.turns <= calls + 1, usage
    assert usage.turns <= len(server.served.turns)
    served = server.served.turns[: usage.turns]
    assert usage.tokens_in == sum(t.tokens_in for t in served)
    # Claude Code may be killed while the last answer streams (its input tokens alone spent the
    # budget): that call's output tokens are counted as far as they streamed.
    finished_out = sum(t.tokens_out for t in served[:-1])
    assert finished_out < usage.tokens_out <= finished_out + served[-1].tokens_out
    if agent != "claude-code":
        assert usage.tokens_out == finished_out + served[-1].tokens_out
    tokens = usage.tokens_in + usage.tokens_out
    assert usage.cost_usd == pytest.approx(tokens * PRICE_PER_MTOK / 1e6)


@pytest.mark.parametrize("real_client", sorted(KEYS), indirect=True)
def test_a_wall_clock_budget_kills_the_client_and_keeps_its_usage(
    real_client: RealClient, scale_task, make_context
) -> None:
    agent = real_client.agent
    slow = Turn(text="thinking", delay_s=600)
    with SERVERS[agent]([*endless_script(agent, 1), slow]) as server:
        started = time.monotonic()
        result, _ = run_client(agent, "auto", server, make_context, scale_task, Budget(wall_s=20))
    assert time.monotonic() - started < 60
    assert result.status == "timeout", result.message
    assert "wall-clock budget of 20 s exhausted" in result.message
    assert len(server.served.turns) == 2  # the second answer never came
    first = server.served.turns[0]
    assert (result.usage.turns, result.usage.tokens_in) == (1, first.tokens_in)
    assert result.usage.tokens_out == first.tokens_out


@pytest.mark.parametrize("real_client", sorted(KEYS), indirect=True)
def test_an_api_error_is_an_agent_error_with_the_clients_message(
    real_client: RealClient, scale_task, tmp_path: Path
) -> None:
    agent = real_client.agent
    store = RunStore(tmp_path / "run")
    with SERVERS[agent]([Fail(400, "scripted refusal 4711")]) as server:
        config = RunConfig(
            agents=[agent],
            model=ModelSettings(model="fake-model", base_url=server.base_url),
            budget=Budget(wall_s=120),
        )
        store.create(
            RunInfo(
                run_id="run",
                created_at=now(),
                task_ids=[scale_task.task_id],
                agents=[agent],
                device="cpu",
                budget=config.budget,
                seed_hash="-",
            )
        )
        record = run_attempt(
            store, Job(task=scale_task, agent=agent, index=0, device="cpu"), config, secret=5
        )
    assert (record.status, record.agent_status) == ("agent_error", "error"), record.agent_message
    assert "scripted refusal 4711" in record.agent_message
    assert record.verdict is None


def crash_client(server: FakeModelServer) -> Step:
    """A step that aborts the client asking it (SIGABRT, as a failed assertion does), unanswered."""

    def step(body: dict[str, Any]) -> Turn:
        port = int(server.root_url.rsplit(":", 1)[1])
        asking = {
            c.pid
            for c in psutil.net_connections(kind="tcp")
            if c.raddr and c.raddr.port == port and c.pid and c.pid != os.getpid()
        }
        assert asking, "no process is connected to the server"
        for pid in asking:
            os.kill(pid, signal.SIGABRT)
        return Turn(text="never read")

    return step


@pytest.mark.parametrize("real_client", sorted(KEYS), indirect=True)
def test_a_crashed_client_is_an_agent_error_never_judged(
    real_client: RealClient, scale_task, tmp_path: Path
) -> None:
    agent = real_client.agent
    store = RunStore(tmp_path / "run")
    server = SERVERS[agent]([])
    server.script.append(crash_client(server))
    with server:
        config = RunConfig(
            agents=[agent],
            model=ModelSettings(model="fake-model", base_url=server.base_url),
            budget=Budget(wall_s=120),
        )
        store.create(
            RunInfo(
                run_id="run",
                created_at=now(),
                task_ids=[scale_task.task_id],
                agents=[agent],
                device="cpu",
                budget=config.budget,
                seed_hash="-",
            )
        )
        record = run_attempt(
            store, Job(task=scale_task, agent=agent, index=0, device="cpu"), config, secret=5
        )
    assert not server.failures, server.failures
    assert (record.status, record.agent_status) == ("agent_error", "error"), record.agent_message
    assert f"{agent} exited with" in record.agent_message, record.agent_message
    assert record.verdict is None
