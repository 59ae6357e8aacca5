"""`gauntlet-ws` in an `accel` workspace: the accel subcommands, through the server or not.

The task is `accel/npu/relu`; `kernel.asm` starts as its baseline. The same commands run from a
plain process talking to a `ToolServer`, in-process without a server, and from an agent under
bwrap, where the task folder does not exist and the tools answer through the socket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gauntlet import sandbox
from gauntlet.agents import make_agent
from gauntlet.agents.base import AgentContext, Budget, ModelSettings
from gauntlet.agents.tools import Toolbox
from gauntlet.settings import WS_SOCKET_ENV
from gauntlet.task import Task, load_task
from gauntlet.workspace import Workspace, build_workspace, tool_log_path
from gauntlet.ws import ToolServer

REPO = Path(__file__).resolve().parents[1]
GAUNTLET_WS = str(Path(sys.executable).parent / "gauntlet-ws")
ACCEL_TOOLS = ("check_syntax", "run_eval", "view_output", "instruction_count", "profile")


@pytest.fixture
def relu() -> Task:
    return load_task(REPO / "tasks" / "accel" / "npu" / "relu")


@pytest.fixture
def workspace(relu: Task, tmp_path: Path) -> Workspace:
    return build_workspace(relu, tmp_path / "ws", device="sim:npu", budget=Budget())


def ws(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GAUNTLET_WS, *args], cwd=cwd, env=env, capture_output=True, text=True)


def tool_log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in tool_log_path(folder).read_text().splitlines()]


def test_help_lists_the_accel_tools_only_in_an_accel_workspace(
    workspace: Workspace, tmp_path: Path
) -> None:
    env = {"PATH": os.environ["PATH"]}
    listed = ws(["--help"], workspace.path, env).stdout
    assert all(tool in listed for tool in (*ACCEL_TOOLS, "grep_manual"))
    scale = load_task(REPO / "tests" / "agents" / "task_scale")
    other = build_workspace(scale, tmp_path / "triton", device="cpu", budget=Budget())
    listed = ws(["--help"], other.path, env).stdout
    assert "check" in listed and not any(tool in listed for tool in ACCEL_TOOLS)
    refused = ws(["profile"], other.path, env)
    assert refused.returncode == 2 and "invalid choice: 'profile'" in refused.stderr


def test_accel_subcommands_through_the_server(relu: Task, workspace: Workspace) -> None:
    env = {"PATH": os.environ["PATH"]}
    with ToolServer(Toolbox(relu, workspace.path, device="sim:npu"), caller="cli") as server:
        env[WS_SOCKET_ENV] = str(server.socket_path)
        syntax = ws(["check_syntax", "C2"], workspace.path, env)
        assert syntax.returncode == 0
        assert syntax.stdout == "All checks passed. 0 error(s), 0 warning(s) (config C2)\n"
        run = ws(["run_eval"], workspace.path, env)
        assert run.returncode == 0 and run.stdout.endswith("\n5/5 visible configs correct\n")
        view = ws(["view_output", "C5", "2"], workspace.path, env)
        assert view.returncode == 0 and view.stdout.endswith("\n... 95 more rows\n")
        count = ws(["instruction_count"], workspace.path, env)
        assert count.returncode == 0 and "instructions executed\n  scalar: " in count.stdout
        profile = ws(["profile", "C3"], workspace.path, env)
        assert profile.returncode == 0 and "roofline bound: " in profile.stdout
        unknown = ws(["profile", "H1"], workspace.path, env)
        assert unknown.returncode == 1 and unknown.stdout.startswith("no visible config 'H1'")
        usage = ws(["view_output", "C1", "many"], workspace.path, env)
        assert usage.returncode == 2 and "invalid int value: 'many'" in usage.stderr
        (workspace.path / "kernel.asm").write_text("    bogus r1\n")
        broken = ws(["check_syntax"], workspace.path, env)
        assert broken.returncode == 1 and "Found problems. 1 error(s)" in broken.stdout
    calls = [(c["tool"], c["caller"], c["ok"]) for c in tool_log(workspace.path)]
    assert calls == [
        ("check_syntax", "cli", True),
        ("run_eval", "cli", True),
        ("view_output", "cli", True),
        ("instruction_count", "cli", True),
        ("profile", "cli", True),
        ("profile", "cli", False),
        ("check_syntax", "cli", False),
    ]


def test_accel_subcommand_without_a_server(workspace: Workspace) -> None:
    env = {"PATH": os.environ["PATH"]}
    done = ws(["-C", str(workspace.path), "instruction_count", "C4"], Path("/"), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("C4 (ROWS=128, COLS=96, dtype=bfloat16, hw_vlen=16, hw_mlen=16)")
    assert [c["tool"] for c in tool_log(workspace.path)] == ["instruction_count"]


AGENT_SCRIPT = """\
ls {task_root} || echo "no task folder here"
for tool in check_syntax run_eval "view_output C2 3" "instruction_count C3" "profile C4"; do
    gauntlet-ws $tool > out.txt; echo "$tool -> $?"; cat out.txt
done
rm out.txt
"""


@pytest.mark.skipif(sandbox.availability("bwrap") is not None, reason="bwrap is not usable here")
def test_accel_subcommands_under_bwrap(
    relu: Task, workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GAUNTLET_SANDBOX", "bwrap")
    monkeypatch.setenv("GAUNTLET_SANDBOX_NETWORK", "off")
    script = tmp_path / "agent.sh"
    script.write_text(AGENT_SCRIPT.format(task_root=relu.root))
    ctx = AgentContext(
        task=relu,
        workspace=workspace.path,
        brief=workspace.brief,
        budget=Budget(wall_s=120),
        model=ModelSettings(model="none"),
        device="sim:npu",
        transcript=tmp_path / "transcript.jsonl",
    )
    result = make_agent(f"generic:/bin/sh {script}").run(ctx)
    assert result.status == "finished", result.message
    lines = [json.loads(line)["text"] for line in ctx.transcript.read_text().splitlines()]
    assert "no task folder here" in lines  # the tools answer from outside the sandbox
    for tool in ("check_syntax", "run_eval", "view_output C2 3", "instruction_count C3"):
        assert f"{tool} -> 0" in lines, lines
    assert "profile C4 -> 0" in lines and "5/5 visible configs correct" in lines
    assert any(line.startswith("roofline bound: ") for line in lines)
    # A CLI agent's tool log is kept with its transcript, outside the workspace.
    log = (ctx.transcript.parent / "tool-calls.jsonl").read_text().splitlines()
    calls = [(c["tool"], c["ok"]) for c in map(json.loads, log)]
    assert calls == [(tool, True) for tool in ACCEL_TOOLS]
    assert result.usage.tool_calls == len(ACCEL_TOOLS)
