"""Agents driven through a whole run cannot reach what they must not, under the default sandbox.

A generic shell agent (a probe script) and the function-calling agent (against a scripted
loopback model server) run through `start_run` on a private copy of a fixture task, with canary
secrets in the harness's environment and a marker line in the task's expert and hidden configs.
What they tried and what came of it is checked from outside: the probe's own report in its
transcript, the run directory, the task folder's bytes, the processes left, the verdicts.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import uuid
from pathlib import Path

import psutil
import pytest

import gauntlet
from gauntlet import confine, sandbox, settings
from gauntlet.agents.base import Budget, ModelSettings
from gauntlet.report import leaderboard, write_report
from gauntlet.runner import RunConfig, start_run
from gauntlet.store import AttemptRecord
from tests.support.fake_openai import FakeOpenAI, tool_call
from tests.support.fixtures import TASKS

TASK_ID = "triton2triton/scale_add"
#: Planted in the harness's environment: no agent is given these keys.
CANARY = f"canary-run-{uuid.uuid4().hex}"
CANARY_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY")
#: Planted in the task's expert and in its task.toml (the hidden configs' file).
EXPERT_MARKER = f"EXPERT_MARKER = 'expert-line-{uuid.uuid4().hex}'"

PROBE = r"""
import json, os, sys, time

plan = json.load(open(sys.argv[1]))
results = {}
for label, path in plan["reads"].items():
    try:
        with open(path, "rb") as handle:
            handle.read()
        results["read " + label] = "read"
    except OSError as err:
        results["read " + label] = type(err).__name__
for label, path in plan["lists"].items():
    try:
        os.listdir(path)
        results["list " + label] = "listed"
    except OSError as err:
        results["list " + label] = type(err).__name__
for label, path in plan["writes"].items():
    try:
        with open(path, "a") as handle:
            handle.write("{}\n")
        results["write " + label] = "written"
    except OSError as err:
        results["write " + label] = type(err).__name__
prefix = plan["canary_prefix"]
results["canary in own environment"] = any(prefix in v for v in os.environ.values())
found = 0
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            found += prefix.encode() in open(f"/proc/{entry}/environ", "rb").read()
        except OSError:
            pass
results["canary in /proc"] = found
if plan["daemon"]:
    # A double fork into a session of its own: it must not outlive the attempt.
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            sleeper = [sys.executable, "-c", "import time; time.sleep(600)", plan["daemon"]]
            os.execv(sys.executable, sleeper)
        os._exit(0)
    os.waitpid(pid, 0)
print(json.dumps({"type": "probe", "results": results}), flush=True)
"""


def contained_kind() -> str:
    kind, note = sandbox.resolve("auto")
    if kind == "none":
        pytest.skip(f"no sandbox works on this machine: {note}")
    return kind


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def alive(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in (proc.info["cmdline"] or []) and proc.info["status"] != "zombie":
            found.append(proc)
    return found


@pytest.fixture
def tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the fixture tasks, with markers planted where agents must not look."""
    root = tmp_path / "tasks"
    shutil.copytree(TASKS, root)
    task = root / TASK_ID
    with (task / "expert" / "kernel.py").open("a") as handle:
        handle.write(f"\n{EXPERT_MARKER}\n")
    with (task / "task.toml").open("a") as handle:
        handle.write(f"\n# {EXPERT_MARKER}\n")
    monkeypatch.setattr(settings, "TASKS_DIR", root)
    for key in CANARY_KEYS:
        monkeypatch.setenv(key, CANARY)
    monkeypatch.delenv(settings.SANDBOX_ENV, raising=False)
    return root


def probe_results(run_dir: Path, record: AttemptRecord) -> dict[str, object]:
    transcript = run_dir / "attempts" / record.attempt_id / "transcript.jsonl"
    for line in transcript.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "probe":
            return dict(event["results"])
    raise AssertionError(f"no probe report in {transcript.read_text()[:2000]}")


def assert_no_canary(run_dir: Path) -> None:
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path


def test_a_shell_agent_reaches_nothing_under_the_default_sandbox(
    tasks: Path, tmp_path: Path
) -> None:
    kind = contained_kind()
    run_dir = tmp_path / "run"
    task = tasks / TASK_ID
    before = digest(tasks)
    marker = f"gauntlet-run-daemon-{uuid.uuid4().hex}"
    planted = Path(gauntlet.__file__).parent / f".probe-{uuid.uuid4().hex}"
    plan = {
        "reads": {
            "expert": str(task / "expert" / "kernel.py"),
            "hidden configs": str(task / "task.toml"),
            "input generator": str(task / "inputs.py"),
            "run secret seed": str(run_dir / "secret-seed"),
            "run record": str(run_dir / "run.json"),
            "attempt log": str(run_dir / "attempts.jsonl"),
        },
        "lists": {"other attempts": str(run_dir / "attempts"), "task suite": str(tasks)},
        "writes": {
            "attempt log": str(run_dir / "attempts.jsonl"),
            "task inputs": str(task / "inputs.py"),
            "package": str(planted),
            "outside": str(tmp_path / "outside.txt"),
        },
        "canary_prefix": CANARY[:20],
        "daemon": marker,
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "probe.py").write_text(PROBE)
    agent = f"generic:{sys.executable} {tmp_path / 'probe.py'} {tmp_path / 'plan.json'}"
    try:
        store = start_run(
            RunConfig(agents=[agent], attempts=2, parallel=2, seed=7, device="cpu"), run_dir
        )
        left = alive(marker)
    finally:
        for proc in alive(marker):
            proc.kill()
        planted.unlink(missing_ok=True)
    records = store.attempts()
    assert len(records) == 2
    for record in records:
        assert record.sandbox == kind
        results = probe_results(run_dir, record)
        # A write to a path the sandbox does not show lands, at most, in its private /tmp
        # (checked on the host below).
        leaked = {
            k: v
            for k, v in results.items()
            if v in ("read", "listed", "written") and k != "write outside"
        }
        assert not leaked, leaked
        assert results["canary in own environment"] is False
        assert results["canary in /proc"] == 0
        # The untouched template (the baseline) is judged as it is: nothing the agent did
        # changed a verdict.
        assert record.status == "pass", record.reason
    assert not left, f"processes outlived their attempt: {[p.pid for p in left]}"
    assert digest(tasks) == before
    assert not planted.exists() and not (tmp_path / "outside.txt").exists()
    assert len((run_dir / "attempts.jsonl").read_text().splitlines()) == 2
    assert_no_canary(run_dir)


def test_an_unsandboxed_agent_is_recorded_and_flagged(tasks: Path, tmp_path: Path) -> None:
    # The control: asked for `none`, the same probe reads the expert, and the run says so.
    run_dir = tmp_path / "run"
    plan = {
        "reads": {"expert": str(tasks / TASK_ID / "expert" / "kernel.py")},
        "lists": {},
        "writes": {},
        "canary_prefix": CANARY[:20],
        "daemon": "",
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "probe.py").write_text(PROBE)
    agent = (
        f"generic:sandbox=none:{sys.executable} {tmp_path / 'probe.py'} {tmp_path / 'plan.json'}"
    )
    store = start_run(RunConfig(agents=[agent], seed=7, device="cpu"), run_dir)
    (record,) = store.attempts()
    assert record.sandbox == "none"
    assert probe_results(run_dir, record)["read expert"] == "read"
    html = write_report(run_dir).read_text()
    assert "ran unsandboxed" in html and "none (unsandboxed)" in html
    board = leaderboard([run_dir])
    assert board.rows[0].unsandboxed == 1
    assert "[unsandboxed]" in board.to_markdown()
    assert any("unsandboxed" in note for note in board.caveats())


KERNEL_THAT_READS_THE_TASK = """
import os, sys

def _steal():
    found = []
    for root in ("/", os.environ.get("HOME", "/"), os.getcwd()):
        for base, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
            for name in files:
                if name in ("task.toml",) or base.endswith("expert"):
                    try:
                        found.append(open(os.path.join(base, name)).read())
                    except OSError:
                        pass
    secrets = [v for k, v in os.environ.items() if "KEY" in k]
    raise RuntimeError("stolen: " + repr(found)[:20000] + repr(secrets))

_steal()
"""


def test_a_toolcall_agent_gets_nothing_of_the_task_through_its_tools(
    tasks: Path, tmp_path: Path
) -> None:
    if confine.available() is not None:
        pytest.skip(f"the judge cannot confine its workers here: {confine.available()}")
    expert = tasks / TASK_ID / "expert" / "kernel.py"
    script = [
        tool_call("read_file", path=str(expert)),
        tool_call("read_file", path="../../../" + str(expert)),
        tool_call("grep", pattern="expert-line"),
        tool_call("write_file", path="kernel.py", content=KERNEL_THAT_READS_THE_TASK),
        tool_call("test"),
        tool_call("submit"),
    ]
    run_dir = tmp_path / "run"
    with FakeOpenAI(script) as server:
        store = start_run(
            RunConfig(
                agents=["toolcall"],
                seed=7,
                device="cpu",
                budget=Budget(wall_s=300),
                model=ModelSettings(model="fake-model", base_url=server.base_url),
            ),
            run_dir,
        )
        requests = list(server.requests)
    (record,) = store.attempts()
    assert record.agent_status == "finished", record.agent_message
    # What the model was told over the whole attempt holds no line of the expert or the
    # hidden configs and no key of the harness's.
    told = json.dumps(requests)
    assert EXPERT_MARKER.split("'")[1] not in told
    assert "expert-line" in told  # the grep pattern itself went out, so the check is live
    assert CANARY not in told
    assert "stolen" in told  # the kernel ran, confined, and found nothing to steal
    assert record.status != "pass"
    assert_no_canary(run_dir)
