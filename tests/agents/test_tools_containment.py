"""What the feedback tools never do, whatever the agent leaves in its workspace.

Real files, links, FIFOs and sparse files in a real workspace; the tool server and
`gauntlet-ws` as real processes; the judge's real worker processes. The task is `test/scale`:
its expert (`BLOCK=1024`), `task.toml` (hidden config H1, n = 7777) and input generator are
what must never come back.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gauntlet.agents import tools as tools_module
from gauntlet.agents.base import Budget
from gauntlet.agents.tools import PatternError, Toolbox, search_lines
from gauntlet.errors import ConfigError
from gauntlet.judge import judge
from gauntlet.settings import WS_SOCKET_ENV
from gauntlet.task import Task
from gauntlet.workspace import Workspace, build_workspace, digest, tool_log_path
from gauntlet.ws import ToolServer, call_server

GAUNTLET_WS = str(Path(sys.executable).parent / "gauntlet-ws")
#: Exponential backtracking on a line of 40 a's and a '!'; `re` takes years on it.
CATASTROPHIC = r"(a+)+$"
#: Backtracks without end on the brief's lines: over 20 s in `re` (measured), where nothing
#: could interrupt it.
SLOW_ON_THE_BRIEF = r"(\w+\s?)*\.$"
#: Deeper than Python's parser recurses (and longer than a pattern may be).
NESTED = "(" * 5000 + "a" + ")" * 5000


def unseen_lines(task: Task) -> set[str]:
    """Lines (of 16 characters or more) of the task files that the workspace does not show."""
    shown = {
        line.strip()
        for name in ("baseline.py", "reference.py")
        for line in task.path(name).read_text().splitlines()
    }
    lines = set()
    for name in ("expert/kernel.py", "task.toml", "inputs.py"):
        for line in task.path(name).read_text().splitlines():
            if len(line.strip()) >= 16 and line.strip() not in shown:
                lines.add(line.strip())
    assert any("BLOCK=1024" in line for line in lines) and any("7777" in line for line in lines)
    return lines


def assert_nothing_unseen(text: str, task: Task) -> None:
    assert "BLOCK=1024" not in text and "7777" not in text and "make_inputs" not in text
    for line in unseen_lines(task):
        assert line not in text, line


def sparse(path: Path, size: int = 20 << 30) -> None:
    """A sparse file of `size` bytes (20 GiB by default), allocating nothing."""
    path.touch()
    os.truncate(path, size)


@pytest.fixture
def ws(scale_task: Task, tmp_path: Path) -> Workspace:
    return build_workspace(scale_task, tmp_path / "ws", device="cpu", budget=Budget())


def plant_links(task: Task, workspace: Path) -> None:
    """Links an agent can make towards the task's unseen files, wherever grep might look."""
    (workspace / "reference" / "expert.py").symlink_to(task.path("expert/kernel.py"))
    (workspace / "reference" / "task").symlink_to(task.root)
    (workspace / "configs.json").unlink()
    (workspace / "configs.json").symlink_to(task.path("task.toml"))
    (workspace / "TASK.md").unlink()
    (workspace / "TASK.md").symlink_to(task.path("inputs.py"))
    (workspace / "MANUAL.md").symlink_to(task.path("expert/kernel.py"))


# Point 1: links, FIFOs and huge files in the workspace.


def test_grep_searches_the_copies_made_at_build_and_follows_no_link(
    scale_task: Task, ws: Workspace
) -> None:
    plant_links(scale_task, ws.path)
    box = Toolbox(scale_task, ws.path)
    for pattern in ("BLOCK", "H1", "expert", "inputs", "torch", "."):
        result = box.call("grep", {"pattern": pattern}, caller="t")
        assert_nothing_unseen(result.text, scale_task)
    # The documents as built are still searched: the copies in the tools folder.
    found = box.call("grep", {"pattern": "configurations you cannot see"}, caller="t")
    assert found.ok and found.text.startswith("TASK.md:")
    assert "configs.json:" in box.call("grep", {"pattern": "4096"}, caller="t").text
    assert (ws.tools_dir / "docs" / "TASK.md").read_text() == ws.brief
    assert not ws.tools_dir.resolve().is_relative_to(ws.path.resolve())


def test_grep_through_the_server_returns_nothing_of_the_task(
    scale_task: Task, ws: Workspace
) -> None:
    plant_links(scale_task, ws.path)
    env = {"PATH": os.environ["PATH"]}
    with ToolServer(Toolbox(scale_task, ws.path), caller="cli") as server:
        env[WS_SOCKET_ENV] = str(server.socket_path)
        for pattern in ("BLOCK", "def ", "n", "H"):
            done = subprocess.run(
                [GAUNTLET_WS, "grep", pattern], cwd=ws.path, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            assert_nothing_unseen(done.stdout, scale_task)


def test_file_tools_refuse_links_fifos_and_huge_files(scale_task: Task, ws: Workspace) -> None:
    box = Toolbox(scale_task, ws.path)
    (ws.path / "expert.py").symlink_to(scale_task.path("expert/kernel.py"))
    (ws.path / "task").symlink_to(scale_task.root)
    (ws.path / "inside").symlink_to(ws.path / "kernel.py")  # a link inside: refused all the same
    os.mkfifo(ws.path / "pipe")
    sparse(ws.path / "huge.txt")
    for path in ("expert.py", "task/task.toml", "task/expert/kernel.py", "inside"):
        result = box.call("read_file", {"path": path}, caller="t")
        assert not result.ok and "symbolic link" in result.text, path
        assert_nothing_unseen(result.text, scale_task)
    started = time.monotonic()
    fifo = box.call("read_file", {"path": "pipe"}, caller="t")
    assert not fifo.ok and "a FIFO, not a regular file" in fifo.text
    huge = box.call("read_file", {"path": "huge.txt"}, caller="t")
    assert not huge.ok and "above the limit" in huge.text
    assert time.monotonic() - started < 2
    listing = box.call("list_files", {}, caller="t").text
    assert "expert.py  (a symbolic link; not read by the tools)" in listing
    assert "task/" not in listing  # a linked folder is listed, never entered
    # Writing through a linked folder is refused; nothing lands in the task folder.
    before = {p: p.read_bytes() for p in scale_task.root.rglob("*") if p.is_file()}
    written = box.call("write_file", {"path": "task/inputs.py", "content": "x"}, caller="t")
    assert not written.ok and "symbolic link" in written.text
    # Writing over a link replaces the link, never its target.
    replaced = box.call("write_file", {"path": "expert.py", "content": "mine\n"}, caller="t")
    assert replaced.ok and not (ws.path / "expert.py").is_symlink()
    assert {p: p.read_bytes() for p in scale_task.root.rglob("*") if p.is_file()} == before


def test_the_submission_is_read_as_a_regular_file_only(scale_task: Task, ws: Workspace) -> None:
    def no_judge(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a refused submission must not be judged")

    box = Toolbox(scale_task, ws.path, judge=no_judge)
    kernel = ws.path / "kernel.py"
    kernel.unlink()
    os.mkfifo(kernel)
    started = time.monotonic()
    fifo = box.call("test", {}, caller="t")
    assert not fifo.ok and "'kernel.py' is a FIFO" in fifo.text
    kernel.unlink()
    sparse(kernel)
    huge = box.call("check", {}, caller="t")
    assert not huge.ok and "above the limit" in huge.text
    assert time.monotonic() - started < 2
    kernel.unlink()
    (ws.path / "real").mkdir()
    (ws.path / "real" / "kernel.py").write_text("x")
    nested = scale_task.model_copy(
        update={
            "spec": scale_task.spec.model_copy(
                update={
                    "submission": scale_task.spec.submission.model_copy(
                        update={"files": ["sub/kernel.py"]}
                    )
                }
            )
        }
    )
    (ws.path / "sub").symlink_to(ws.path / "real")  # a link on the way, not at the end
    linked = Toolbox(nested, ws.path, judge=no_judge).call("bench", {}, caller="t")
    assert not linked.ok and "'sub' is a symbolic link" in linked.text


# Point 1: the log lives outside the workspace and follows no link.


def test_a_log_link_in_the_workspace_makes_the_server_write_nowhere_else(
    scale_task: Task, ws: Workspace, tmp_path: Path
) -> None:
    victim = tmp_path / "victim_inputs.py"
    victim.write_text(scale_task.path("inputs.py").read_text())
    original = victim.read_bytes()
    (ws.path / ".gauntlet-ws.log").symlink_to(victim)
    with ToolServer(Toolbox(scale_task, ws.path), caller="cli") as server:
        reply = call_server(str(server.socket_path), "grep", {"pattern": "Visible"})
        assert reply["ok"]
        # Even the log's own place, swapped for a link (an agent without a sandbox), is not
        # followed: the line is lost, the target untouched.
        log = tool_log_path(ws.path)
        assert len(log.read_text().splitlines()) == 1
        log.unlink()
        log.symlink_to(victim)
        assert call_server(str(server.socket_path), "grep", {"pattern": "Visible"})["ok"]
    assert victim.read_bytes() == original
    assert log.is_symlink()
    with pytest.raises(ConfigError, match="inside the workspace"):
        Toolbox(scale_task, ws.path, log_path=ws.path / "calls.jsonl")


# Point 2: patterns run bounded; the server answers every request and keeps serving.


def test_a_pattern_nested_too_deep_fails_in_the_search_process() -> None:
    # Past the length cap too: the search process is the second line of defence.
    with pytest.raises(PatternError, match="too complex a regular expression"):
        tools_module.run_limited_python(
            tools_module._SEARCH_CHILD,
            {"pattern": NESTED, "texts": ["a"], "max_hits": 1},
            what="the nested pattern",
        )


def test_a_catastrophic_pattern_is_stopped_within_two_seconds() -> None:
    lines = ["a" * 40 + "!"] * 3
    started = time.monotonic()
    with pytest.raises(PatternError, match="ran longer than 1.5 s"):
        search_lines(CATASTROPHIC, lines, 10)
    assert time.monotonic() - started < 2.5
    assert search_lines("A+!", lines, 2) == ([0, 1], 3)


def test_the_server_answers_bad_patterns_and_requests_and_keeps_serving(
    scale_task: Task, ws: Workspace
) -> None:
    (ws.path / "reference" / "baseline.py").chmod(0o644)
    with ToolServer(Toolbox(scale_task, ws.path), caller="cli") as server:
        path = str(server.socket_path)
        started = time.monotonic()
        slow = call_server(path, "grep", {"pattern": SLOW_ON_THE_BRIEF})
        assert time.monotonic() - started < 2.5
        assert not slow["ok"] and "ran longer than" in slow["text"]
        nested = call_server(path, "grep", {"pattern": NESTED})
        assert not nested["ok"] and "above the limit of 1000" in nested["text"]
        invalid = call_server(path, "grep", {"pattern": "("})
        assert not invalid["ok"] and "invalid regular expression" in invalid["text"]
        long = call_server(path, "grep", {"pattern": "a" * 5000})
        assert not long["ok"] and "above the limit of 1000" in long["text"]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            deep = '{"tool": "grep", "args": {"pattern": ' + "[" * 100_000 + "]" * 100_000 + "}}"
            conn.sendall(deep.encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
            answer = json.loads(b"".join(iter(lambda: conn.recv(65536), b"")))
        assert answer["ok"] is False and "nested too deep" in answer["text"]
        assert call_server(path, "grep", {"pattern": "Visible"})["ok"]
        assert server.errors == []


def test_a_failure_of_the_harness_is_an_answer(scale_task: Task, ws: Workspace) -> None:
    def broken_judge(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("the judge broke")

    with ToolServer(Toolbox(scale_task, ws.path, judge=broken_judge), caller="cli") as server:
        reply = call_server(str(server.socket_path), "test", {})
        assert reply == {
            "ok": False,
            "text": "tool 'test' failed in the harness: RuntimeError: the judge broke",
        }
        assert call_server(str(server.socket_path), "grep", {"pattern": "Visible"})["ok"]
        assert server.errors == [reply["text"]]


def test_grep_manual_is_bounded_too(tmp_path: Path) -> None:
    from gauntlet.accel import tools as accel_tools
    from gauntlet.task import load_task

    relu = load_task(Path(__file__).resolve().parents[2] / "tasks" / "accel" / "npu" / "relu")
    box = Toolbox(
        relu, build_workspace(relu, tmp_path / "ws", device="sim:npu", budget=Budget()).path
    )
    nested = box.call("grep_manual", {"pattern": NESTED}, caller="t")
    assert not nested.ok and "above the limit of 1000" in nested.text
    started = time.monotonic()
    slow = box.call("grep_manual", {"pattern": r"^([a-z ]+)*[A-Z]$"}, caller="t")
    assert not slow.ok and "ran longer than 1.5 s" in slow.text
    assert time.monotonic() - started < 5  # the import of gauntlet.accel comes first
    started = time.monotonic()
    with pytest.raises(PatternError, match="ran longer than"):
        accel_tools.grep_manual(relu, SLOW_ON_THE_BRIEF)
    assert time.monotonic() - started < 5  # the import of gauntlet.accel comes first
    assert "vredsum" in box.call("grep_manual", {"pattern": "vredsum"}, caller="t").text


# Point 5: what the tools return never quotes the task's unseen files.

LEAKY_KERNEL = """\
import torch

task = {task!r}
raise RuntimeError(
    "".join(open(task + name).read() for name in ("/expert/kernel.py", "/task.toml", "/inputs.py"))
    + repr(open(task + "/expert/kernel.py").read())
)


def kernel(x: torch.Tensor) -> torch.Tensor:
    return x
"""

FAILING_KERNEL = """\
import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    return helper(x)


def helper(x: torch.Tensor) -> torch.Tensor:
    raise ValueError("my own failure")
"""


def test_test_output_never_quotes_the_task_through_a_crash(
    scale_task: Task, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gauntlet.judge.python_backend import PythonBackend

    # As if the kernel got past the static guards (the red team's way in): it reads the
    # task's files when imported in the judge's worker and raises with their text.
    monkeypatch.setattr(PythonBackend, "guard", lambda self, task, submission: None)
    (ws.path / "kernel.py").write_text(LEAKY_KERNEL.format(task=str(scale_task.root)))
    box = Toolbox(scale_task, ws.path)
    result = box.call("test", {}, caller="t")
    assert not result.ok and "status: build_error" in result.text
    assert_nothing_unseen(result.text, scale_task)
    if "No such file or directory" not in result.text:  # a judge that hides the task folder
        assert tools_module.WITHHELD in result.text
    assert "worker.py" not in result.text and "gauntlet-judge-" not in result.text
    log = tool_log_path(ws.path).read_text().splitlines()
    logged = [json.loads(line)["output"] for line in log]
    assert_nothing_unseen("\n".join(logged), scale_task)


def test_answers_withhold_a_task_file_quoted_by_a_crashing_process(
    scale_task: Task, ws: Workspace
) -> None:
    # Whatever the judge lets through: here a real process that read the task's files and
    # died with them in its traceback, as the judge's reason.
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; root = sys.argv[1]; raise RuntimeError("
            "''.join(open(root + n).read() for n in ('/expert/kernel.py', '/task.toml', "
            "'/inputs.py')) + repr(open(root + '/expert/kernel.py').read()))",
            str(scale_task.root),
        ],
        capture_output=True,
        text=True,
    )
    assert "BLOCK=1024" in crashed.stderr and "7777" in crashed.stderr

    def leaking_judge(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        verdict = judge(*args, **kwargs)
        return verdict.model_copy(update={"status": "crash", "reason": crashed.stderr})

    box = Toolbox(scale_task, ws.path, judge=leaking_judge)
    for tool, args in (("test", {}), ("bench", {}), ("view", {"config": "C1"})):
        result = box.call(tool, args, caller="t")
        assert_nothing_unseen(result.text, scale_task)
        if tool != "view":
            assert tools_module.WITHHELD in result.text and "RuntimeError" in result.text
    assert_nothing_unseen(tool_log_path(ws.path).read_text(), scale_task)


def test_tracebacks_keep_the_submissions_frames_only(scale_task: Task, ws: Workspace) -> None:
    (ws.path / "kernel.py").write_text(FAILING_KERNEL)
    result = Toolbox(scale_task, ws.path).call("test", {}, caller="t")
    assert not result.ok and "status: crash" in result.text
    assert 'File "kernel.py", line 5, in kernel' in result.text
    assert 'File "kernel.py", line 9, in helper' in result.text
    assert "ValueError: my own failure" in result.text
    assert "frame(s) outside the submission" in result.text
    assert "worker.py" not in result.text and "/gauntlet/" not in result.text


def test_an_agents_own_line_is_never_withheld(scale_task: Task, ws: Workspace) -> None:
    expert = scale_task.path("expert/kernel.py").read_text()
    (ws.path / "kernel.py").write_text(expert)
    box = Toolbox(scale_task, ws.path)
    assert box.call("read_file", {"path": "kernel.py"}, caller="t").text.count("BLOCK=1024") == 1
    (ws.path / "copied.py").write_text(expert)
    (ws.path / "kernel.py").write_text(scale_task.path("baseline.py").read_text())
    copied = box.call("read_file", {"path": "copied.py"}, caller="t")
    assert "BLOCK=1024" not in copied.text and tools_module.WITHHELD in copied.text


# Point 3: the tamper digest is bounded.


def test_digest_of_a_sparse_20_gib_file_fifo_and_links(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    sparse(ws.path / "sparse.bin")
    os.mkfifo(ws.path / "pipe")
    (ws.path / "dir-link").symlink_to(outside)
    started = time.monotonic()
    found = digest(ws.path)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, elapsed
    assert found["sparse.bin"].startswith("partial:size=21474836480:allocated=")
    assert "sha256_first_1048576=" in found["sparse.bin"]
    assert found["pipe"] == "special:a FIFO"
    assert found["dir-link"] == f"symlink:{outside}"
    assert not any(key.startswith("dir-link/") for key in found)
    from gauntlet.workspace import workspace_changes

    assert workspace_changes(ws) == {"dir-link": "added", "pipe": "added", "sparse.bin": "added"}
    with (ws.path / "sparse.bin").open("r+b") as handle:
        handle.write(b"changed")
    assert workspace_changes(ws)["sparse.bin"] == "added"
    assert digest(ws.path)["sparse.bin"] != found["sparse.bin"]


def test_digest_walk_and_reads_are_capped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    from gauntlet import workspace

    monkeypatch.setattr(workspace, "DIGEST_MAX_ENTRIES", 20)
    monkeypatch.setattr(workspace, "DIGEST_TOTAL_BYTES", 3 << 20)
    for index in range(10):
        (ws.path / f"f{index}.bin").write_bytes(b"x" * (1 << 20))
    deep = ws.path
    for index in range(40):
        deep = deep / f"d{index}"
    deep.mkdir(parents=True)
    found = workspace.digest(ws.path)
    assert "the digest stopped after 20 entries" in found[workspace.DIGEST_CUT_KEY]
    unread = [v for v in found.values() if v.startswith("unread:size=1048576")]
    assert unread  # past the total, files are recorded by size and time only
