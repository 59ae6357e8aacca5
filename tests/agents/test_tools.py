"""The feedback tools (one implementation for every agent) and `gauntlet-ws` with its server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gauntlet.agents.base import Budget
from gauntlet.agents.tools import TOOLS, Toolbox, tools_for
from gauntlet.judge import judge
from gauntlet.settings import WS_SOCKET_ENV as SOCKET_ENV
from gauntlet.task import Task, load_task
from gauntlet.workspace import build_workspace, tool_log_path
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
        "check_syntax",
        "test",
        "run_eval",
        "bench",
        "view",
        "view_output",
        "instruction_count",
        "profile",
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
        assert not result.ok, path
        assert any(w in result.text for w in ("outside", "relative", "symbolic link")), path
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
    log = [json.loads(line) for line in tool_log_path(ws.path).read_text().splitlines()]
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
    assert "`gauntlet-ws view_output [<config>] [<rows>]`" in ws.brief
    plain = build_workspace(scale_task, tmp_path / "plain", device="cpu", budget=Budget()).brief
    assert "`gauntlet-ws view <config>`" in plain
    assert not any(f"gauntlet-ws {t}" in plain for t in ("grep_manual", "run_eval", "profile"))
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
    log = tool_log_path(mine.path).read_text().splitlines()
    assert [json.loads(line)["tool"] for line in log] == ["check", "nope", "read_file", "grep"]
    assert not tool_log_path(other.path).exists()
    assert not (mine.path / ".gauntlet-ws.log").exists()
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
        assert not result.ok and "'kernel.py' is a symbolic link" in result.text, tool


RELU = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "npu" / "relu"
#: A program that assembles but computes max(x, 1) instead of max(x, 0).
WRONG = ("vmaxs [r12], [r11], f0", "vmaxs [r12], [r11], f1")
NOT_ASM = "\nthis_is_not_an_instruction r99, #\n"


def relu_box(tmp_path: Path, **kwargs) -> tuple[Task, Path, Toolbox]:  # noqa: ANN003
    """`accel/npu/relu` in a fresh workspace (kernel.asm starts as the baseline) and its tools."""
    task = load_task(RELU)
    ws = build_workspace(task, tmp_path / "ws", device="sim:npu", budget=Budget())
    return task, ws.path, Toolbox(task, ws.path, device="sim:npu", **kwargs)


def test_accel_tools_answer_a_correct_program(tmp_path: Path) -> None:
    task, ws, box = relu_box(tmp_path)
    syntax = box.call("check_syntax", {}, caller="t")
    assert syntax.ok and syntax.text == "All checks passed. 0 error(s), 0 warning(s) (config C1)"
    assert box.call("check_syntax", {"config": "C4"}, caller="t").text.endswith("(config C4)")
    run = box.call("run_eval", {}, caller="t")
    lines = run.text.splitlines()
    assert run.ok and len(lines) == len(task.visible_configs) + 1
    assert re.fullmatch(
        r"C1 \(ROWS=64, COLS=256, dtype=float32\): matching elements 1\.0000; \d+ cycles, "
        r"1\.00x the baseline; correct",
        lines[0],
    )
    assert lines[-1] == "5/5 visible configs correct"
    view = box.call("view_output", {"config": "C2", "rows": 4}, caller="t")
    head, _, output, header, rule, *rows, more = view.text.splitlines()
    assert view.ok and head == "C2 (ROWS=100, COLS=300, dtype=bfloat16), trial 1: correct"
    assert output.startswith("output 'y' (100, 300) bfloat16: |kernel - reference| <= 0.001")
    assert header.startswith("row  | max abs err | wrong/cols") and set(rule) == {"-"}
    assert len(rows) == 4 and all(re.match(r"\d+ +\| +0 \| +0/300 ", r) for r in rows)
    assert more == "... 96 more rows"
    count = box.call("instruction_count", {"config": "C2"}, caller="t")
    first, *units, baseline = count.text.splitlines()
    assert count.ok and re.fullmatch(r"C2 \(.*\): (\d+) instructions executed", first)
    assert {u.split(":")[0].strip() for u in units} == {"scalar", "vector", "matrix", "dma"}
    assert re.fullmatch(r"the baseline executes \d+ on this config", baseline)
    profile = box.call("profile", {}, caller="t")
    assert profile.ok
    for pattern in (
        r"^cycles: \d+$",
        r"^baseline cycles: \d+ \(speedup 1\.00x\)$",
        r"^roofline bound: \d+ cycles for this config and hardware \(\d+\.\d% of it reached\)$",
        r"^busy cycles per unit \(share of the run\):\n  scalar: \d+ \(",
        r"^stall cycles by cause:\n  dma_wait: \d+$",
        r"^DMA bytes: 65536 read, 65536 written$",  # 64 x 256 float32 in, and out
    ):
        assert re.search(pattern, profile.text, re.MULTILINE), pattern
    log = [json.loads(line) for line in tool_log_path(ws).read_text().splitlines()]
    assert [(e["tool"], e["ok"]) for e in log] == [
        ("check_syntax", True),
        ("check_syntax", True),
        ("run_eval", True),
        ("view_output", True),
        ("instruction_count", True),
        ("profile", True),
    ]
    assert log[3]["args"] == {"config": "C2", "rows": 4}


def test_accel_tools_report_wrong_and_broken_programs(tmp_path: Path) -> None:
    _, ws, box = relu_box(tmp_path)
    kernel = ws / "kernel.asm"
    baseline = kernel.read_text()
    kernel.write_text(baseline.replace(*WRONG))
    assert box.call("check_syntax", {}, caller="t").ok  # it assembles
    run = box.call("run_eval", {}, caller="t")
    assert not run.ok and run.text.endswith("0/5 visible configs correct")
    assert re.search(
        r"^C3 \(.*\): matching elements 0\.\d+; wrong: trial 1 .*wrong$", run.text, re.M
    )
    view = box.call("view_output", {"config": "C1"}, caller="t")
    assert not view.ok and view.text.startswith("C1 (ROWS=64, COLS=256, dtype=float32), trial 1:")
    assert re.search(r"^0 +\| +[\d.e+-]+ \| +[1-9]\d*/256 +\| col \d+: 1 vs ", view.text, re.M)
    assert "... 32 more rows" in view.text  # 32 rows by default
    assert box.call("profile", {"config": "C1"}, caller="t").ok  # it ran: measured all the same
    kernel.write_text(baseline + NOT_ASM)
    syntax = box.call("check_syntax", {}, caller="t")
    assert not syntax.ok and re.search(r"^line 4\d, col \d+: error: ", syntax.text, re.M)
    assert syntax.text.endswith("Found problems. 1 error(s), 0 warning(s) (config C1)")
    for tool in ("run_eval", "view_output", "instruction_count", "profile"):
        result = box.call(tool, {}, caller="t")
        assert not result.ok and "does not assemble" in result.text, tool


def test_accel_tools_refuse_what_they_cannot_run(scale_task, tmp_path: Path) -> None:
    task, ws, box = relu_box(tmp_path)
    for tool in ("check_syntax", "view_output", "instruction_count", "profile"):
        result = box.call(tool, {"config": "H1"}, caller="t")
        assert not result.ok and result.text.startswith("no visible config 'H1' (visible: C1,")
    assert box.call("view_output", {"rows": 0}, caller="t").text == "rows must be 1 to 256, not 0"
    assert "must be a integer" in box.call("view_output", {"rows": "4"}, caller="t").text
    assert "takes no argument 'config'" in box.call("run_eval", {"config": "C1"}, caller="t").text
    (ws / "kernel.asm").unlink()
    missing = box.call("run_eval", {}, caller="t")
    assert missing.text == "no kernel.asm in the workspace; write it first"
    (ws / "kernel.asm").symlink_to(task.path("expert.asm"))
    linked = box.call("profile", {}, caller="t")
    assert not linked.ok and "'kernel.asm' is a symbolic link" in linked.text
    # Not an accel task: none of these tools exist.
    assert "unknown tool 'profile'" in Toolbox(scale_task, ws).call("profile", {}, caller="t").text


def test_accel_tools_and_the_judge_see_the_same_inputs_per_submission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gauntlet.accel import tools as accel_tools

    seeds: list[tuple[str, int]] = []
    real_eval = accel_tools.run_eval

    def spy_eval(task: Task, source: str, seed: int = 0) -> str:
        seeds.append(("run_eval", seed))
        return real_eval(task, source, seed=seed)

    def spy_judge(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seeds.append(("judge", kwargs["seed"]))
        return judge(*args, **kwargs)

    monkeypatch.setattr(accel_tools, "run_eval", spy_eval)
    _, ws, box = relu_box(tmp_path, seed=40, judge=spy_judge)
    assert box.call("run_eval", {}, caller="t").ok
    assert box.call("test", {}, caller="t").ok
    (ws / "kernel.asm").write_text((ws / "kernel.asm").read_text() + "\n; changed\n")
    assert box.call("run_eval", {}, caller="t").ok
    assert seeds == [("run_eval", 40), ("judge", 40), ("run_eval", 41)]
