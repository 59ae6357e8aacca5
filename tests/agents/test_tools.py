"""The feedback tools (one implementation for every agent) and `gauntlet-ws` with its server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gauntlet.agents.base import Budget
from gauntlet.agents.tools import TOOLS, Toolbox, tools_for
from gauntlet.judge import judge
from gauntlet.settings import WS_SOCKET_ENV as SOCKET_ENV
from gauntlet.task import Task
from gauntlet.workspace import build_workspace
from gauntlet.ws import ToolServer, call_server

GAUNTLET_WS = str(Path(sys.executable).parent / "gauntlet-ws")


def accel_variant(task: Task) -> Task:
    """The test task dressed as an `npu` accel task (enough for the manual and the tool list)."""
    submission = task.spec.submission.model_copy(update={"language": "asm", "files": ["k.asm"]})
    spec = task.spec.model_copy(
        update={"track": "accel", "platform": "npu", "submission": submission}
    )
    return task.model_copy(update={"spec": spec})


def test_tool_lists_per_track() -> None:
    feedback = [t.name for t in tools_for("triton2triton", "feedback")]
    assert feedback == ["check", "test", "bench", "view", "grep"]
    assert [t.name for t in tools_for("accel", "feedback")] == [
        "check",
        "test",
        "bench",
        "view",
        "grep_manual",
        "grep",
    ]
    agent_only = [t.name for t in tools_for("torch2triton", "agent")]
    assert agent_only == ["list_files", "read_file", "write_file", "submit"]
    for tool in TOOLS:
        schema = tool.openai_tool()["function"]["parameters"]
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])


def test_file_tools_stay_inside_the_workspace(scale_task, tmp_path: Path) -> None:
    ws = build_workspace(scale_task, tmp_path / "ws", device="cpu", budget=Budget())
    box = Toolbox(scale_task, ws.path)
    (ws.path / "link").symlink_to("/etc/hostname")
    for path in ("/etc/hostname", "../outside.txt", "link"):
        result = box.call("read_file", {"path": path}, caller="test")
        assert not result.ok and ("outside" in result.text or "relative" in result.text), path
    assert not box.call("write_file", {"path": "../x.py", "content": "x"}, caller="t").ok
    refused = box.call("write_file", {"path": ".gauntlet-ws.json", "content": "{}"}, caller="t")
    assert not refused.ok and "harness" in refused.text
    written = box.call("write_file", {"path": "sub/a.py", "content": "a\nb\n"}, caller="t")
    assert written.ok and (ws.path / "sub" / "a.py").read_text() == "a\nb\n"
    assert box.call("read_file", {"path": "sub/a.py", "offset": 2}, caller="t").text == "    2  b"
    listing = box.call("list_files", {}, caller="t").text
    assert "kernel.py" in listing and "sub/a.py" in listing and ".gauntlet-ws" not in listing
    grep = box.call("grep", {"pattern": r"def kernel\("}, caller="t")
    assert grep.ok and "reference/baseline.py:14:" in grep.text
    assert "invalid regular expression" in box.call("grep", {"pattern": "("}, caller="t").text
    submitted = box.call("submit", {}, caller="t")
    assert submitted.submitted
    (ws.path / "kernel.py").unlink()
    assert "missing kernel.py" in box.call("submit", {}, caller="t").text
    log = [json.loads(line) for line in (ws.path / ".gauntlet-ws.log").read_text().splitlines()]
    assert len(log) == box.calls == 12
    assert {entry["caller"] for entry in log} == {"test", "t"}


def test_feedback_tools_judge_once_per_submission(scale_task, tmp_path: Path) -> None:
    ws = build_workspace(scale_task, tmp_path / "ws", device="cpu", budget=Budget())
    seeds: list[int] = []

    def counting_judge(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seeds.append(kwargs["seed"])
        assert kwargs["configs"] == "visible" and kwargs["mode"] == "feedback"
        return judge(*args, **kwargs)

    box = Toolbox(scale_task, ws.path, seed=40, judge=counting_judge)
    test = box.call("test", {}, caller="t")
    assert test.ok and test.text.startswith("status: pass (2/2 visible configs correct)")
    assert "C1 (n=1000, dtype=float32): PASS" in test.text and "H1" not in test.text
    bench = box.call("bench", {}, caller="t")
    assert "not timed: device 'cpu' is not timed" in bench.text
    view = box.call("view", {"config": "C2"}, caller="t")
    assert view.ok and "rel L2 bound" in view.text and "matching elements  100.0000%" in view.text
    assert "no visible config 'H1'" in box.call("view", {"config": "H1"}, caller="t").text
    assert seeds == [40]  # one judge call for the unchanged submission
    (ws.path / "kernel.py").write_text(
        (ws.path / "kernel.py").read_text().replace("x * 2.0 + 1.0", "x * 2.0")
    )
    wrong = box.call("test", {}, caller="t")
    assert not wrong.ok and "status: incorrect" in wrong.text and "FAIL" in wrong.text
    assert seeds == [40, 41]  # fresh inputs for the new submission
    broken = box.call("check", {}, caller="t")
    assert broken.ok  # a wrong kernel still builds: check does not run it
    (ws.path / "kernel.py").write_text("import os\n")
    rejected = box.call("check", {}, caller="t")
    assert not rejected.ok and "guards: failed" in rejected.text and "'os'" in rejected.text


def test_accel_workspace_has_the_manual_and_its_tools(scale_task, tmp_path: Path) -> None:
    task = accel_variant(scale_task)
    ws = build_workspace(task, tmp_path / "ws", device="sim:npu", budget=Budget())
    manual = (ws.path / "MANUAL.md").read_text()
    assert "## Instruction summary" in manual
    assert "`gauntlet-ws grep_manual <pattern>`" in ws.brief and "MANUAL.md" in ws.brief
    box = Toolbox(task, ws.path, device="sim:npu")
    found = box.call("grep_manual", {"pattern": "vredsum"}, caller="t")
    assert found.ok and "vredsum fd, [va]" in found.text
    assert "No match" in box.call("grep_manual", {"pattern": "zzzqqq"}, caller="t").text
    assert "grep_manual" not in [t.name for t in Toolbox(scale_task, ws.path).specs()]


def test_gauntlet_ws_through_the_server(scale_task, tmp_path: Path) -> None:
    mine = build_workspace(scale_task, tmp_path / "mine", device="cpu", budget=Budget())
    other = build_workspace(scale_task, tmp_path / "other", device="cpu", budget=Budget())
    (mine.path / "kernel.py").write_text("import os\n")
    env = {"PATH": os.environ["PATH"]}
    with ToolServer(Toolbox(scale_task, mine.path), caller="cli-agent") as server:
        env[SOCKET_ENV] = str(server.socket_path)
        done = subprocess.run(
            [GAUNTLET_WS, "check"], cwd=other.path, env=env, capture_output=True, text=True
        )
        # The server answers for its own workspace, whatever folder the client runs in.
        assert done.returncode == 1 and "guards: failed" in done.stdout
        usage = subprocess.run(
            [GAUNTLET_WS, "view"], cwd=mine.path, env=env, capture_output=True, text=True
        )
        assert usage.returncode == 2 and "config" in usage.stderr
        assert call_server(str(server.socket_path), "nope", {})["text"].startswith(
            "unknown tool 'nope'"
        )
        # The agent's own file tools are not served: CLI agents have theirs, in the sandbox.
        reply = call_server(str(server.socket_path), "read_file", {"path": "TASK.md"})
        assert reply == {"ok": False, "text": reply["text"]}
        assert reply["text"].startswith("unknown tool 'read_file'")
        grep = subprocess.run(
            [GAUNTLET_WS, "grep", "Visible"], cwd=mine.path, env=env, capture_output=True
        )
        assert grep.returncode == 0 and b"TASK.md:" in grep.stdout
    log = (mine.path / ".gauntlet-ws.log").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in log] == ["check", "nope", "read_file", "grep"]
    assert not (other.path / ".gauntlet-ws.log").exists()
    assert not server.socket_dir.exists()


def test_gauntlet_ws_without_a_server_runs_the_tools_itself(scale_task, tmp_path: Path) -> None:
    ws = build_workspace(scale_task, tmp_path / "ws", device="cpu", budget=Budget())
    env = {"PATH": os.environ["PATH"]}
    done = subprocess.run(
        [GAUNTLET_WS, "-C", str(ws.path), "check"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("All checks passed.")
    outside = subprocess.run(
        [GAUNTLET_WS, "check"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert outside.returncode == 2 and "not inside a Kernel Gauntlet workspace" in outside.stderr


def test_feedback_refuses_a_linked_submission(scale_task, tmp_path: Path) -> None:
    ws = build_workspace(scale_task, tmp_path / "ws", device="cpu", budget=Budget())
    (ws.path / "kernel.py").unlink()
    (ws.path / "kernel.py").symlink_to(scale_task.path("expert/kernel.py"))

    def no_judge(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a linked submission must not be judged")

    box = Toolbox(scale_task, ws.path, judge=no_judge)
    for tool, args in (("check", {}), ("test", {}), ("bench", {}), ("view", {"config": "C1"})):
        result = box.call(tool, args, caller="t")
        assert not result.ok and "kernel.py: a symbolic link" in result.text, tool
