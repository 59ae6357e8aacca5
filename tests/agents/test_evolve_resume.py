"""The `evolve` agent killed mid-search (SIGKILL, with what it started), then resumed.

Once as a run starts an agent (its own process), once through `gauntlet run` and `--resume`;
both slow (each process imports PyTorch: 30-40 s on 2 busy cores), so `test_evolve.py` also
resumes a search stopped by its budget, in one process. The scripted model server stays up
across the kill, so the resumed search reaches it at the same address. The resumed search must
not judge again what was judged, and must go on from the proposal it was waiting on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from gauntlet import suites
from gauntlet.agents.base import AgentContext, AgentResult, Budget, ModelSettings
from gauntlet.agents.child import run_in_child
from gauntlet.agents.evolve_log import CandidateJudged, SearchLog, SearchStarted
from gauntlet.workspace import build_workspace
from tests.support.fake_openai import Answer, FakeOpenAI, HTTPError, error, say

REPO = Path(__file__).resolve().parents[2]
RELU = REPO / "tasks" / "accel" / "npu" / "relu"


def kernel(text: str) -> Answer:
    return say(f"File: kernel.asm\n```\n{text}```\n")


def wait_recorded(root: Path, candidates: int) -> None:
    """Wait until a search log under `root` records `candidates` candidates.

    The search judges a proposal while it asks the next (judges at once), so the test kills it
    once the proposal before the held one is recorded, whichever thread got there first.
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for path in root.rglob("search/search.jsonl"):
            kinds = [json.loads(line).get("kind") for line in path.read_text().splitlines()]
            if kinds.count("candidate") >= candidates:
                return
        time.sleep(0.05)
    raise AssertionError(f"no search log under '{root}' recorded {candidates} candidates")


def children_of(pid: int) -> list[int]:
    """Process ids whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_a_killed_evolve_agent_resumes_from_its_search_log(tmp_path: Path) -> None:
    # The agent in its own process as a run starts it (`run_in_child`), killed with everything
    # it started while it waits for a proposal; a second process takes the search up.
    baseline = (RELU / "baseline.asm").read_text()
    expert = (RELU / "expert.asm").read_text()
    waiting = threading.Event()
    release = threading.Event()

    def hold(request: dict[str, Any]) -> Answer | HTTPError:
        wait_recorded(tmp_path / "attempt", 2)
        waiting.set()
        release.wait(60)
        return error(400, "the client is gone")

    task = suites.load_by_id("accel/npu/relu")
    budget = Budget(wall_s=300)
    spec = "evolve:generations=1,proposals=3,crossover=0"
    with FakeOpenAI([kernel("; first\n" + baseline), hold]) as server:

        def context(name: str) -> AgentContext:
            workspace = build_workspace(
                task, tmp_path / name / "workspace", device="sim:npu", budget=budget
            )
            return AgentContext(
                task=task,
                workspace=workspace.path,
                brief=workspace.brief,
                budget=budget,
                model=ModelSettings(model="fake-model", base_url=server.base_url),
                device="sim:npu",
                transcript=tmp_path / "attempt" / "transcript.jsonl",
                seed=1,
            )

        results: list[AgentResult] = []
        first = threading.Thread(target=lambda: results.append(run_in_child(spec, context("a"))))
        first.start()
        try:
            assert waiting.wait(120), "the agent never asked for its second proposal"
            (agent,) = [
                p
                for p in psutil.Process().children()
                if "gauntlet.agents.child" in " ".join(p.cmdline())
            ]
            for victim in [agent, *agent.children(recursive=True)]:
                victim.kill()
        finally:
            release.set()
            first.join(60)
        assert results[0].status == "error"  # killed: no result
        server.add(kernel(expert), kernel(expert))
        second = run_in_child(spec, context("b"))
    assert second.status == "finished", second.message
    log = SearchLog(tmp_path / "attempt")
    made = [r for r in log.records() if isinstance(r, CandidateJudged)]
    assert [(c.candidate_id, c.outcome) for c in made] == [
        (0, "judged"),
        (1, "judged"),
        (2, "judged"),
        (3, "duplicate"),
    ]
    assert second.usage.tool_calls == 3  # the seed and the first proposal not judged again
    assert (tmp_path / "b" / "workspace" / "kernel.asm").read_text() == expert


@pytest.mark.slow
def test_a_killed_evolve_run_resumes_where_its_search_stopped(tmp_path: Path) -> None:
    expert = (RELU / "expert.asm").read_text()
    baseline = (RELU / "baseline.asm").read_text()
    waiting = threading.Event()
    release = threading.Event()

    def hold(request: dict[str, Any]) -> Answer | HTTPError:
        # The second proposal: the test kills the run while the agent waits for this answer.
        wait_recorded(out, 2)
        waiting.set()
        release.wait(60)
        return error(400, "the client is gone")

    script = [kernel("; first\n" + baseline), hold]
    out = tmp_path / "run"
    argv = [
        sys.executable, "-m", "gauntlet", "run", "--out", str(out), "--seed", "3",
        "--tasks", "accel/npu/relu", "--model", "fake-model",
        "--agent", "evolve:generations=2,proposals=2,crossover=0",
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    with FakeOpenAI(script) as server:
        argv += ["--base-url", server.base_url]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: TID251 - the CLI as a user runs it, killed
        try:
            deadline = time.monotonic() + 240
            while not waiting.wait(0.2):
                assert proc.poll() is None and time.monotonic() < deadline, (
                    proc.stderr.read().decode() if proc.stderr else ""
                )
            agents = children_of(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            for pid in agents:  # the agent's process group (a session of its own) dies too
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            proc.wait()
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        assert not (out / "attempts.jsonl").read_text().strip()
        (attempt,) = (out / "attempts").iterdir()
        log = SearchLog(attempt)
        before = [r for r in log.records() if isinstance(r, CandidateJudged)]
        assert [(c.candidate_id, c.operation) for c in before] == [(0, "seed"), (1, "mutate")]
        server.add(kernel(expert), kernel("; third\n" + baseline), kernel(expert))
        resumed = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
            [sys.executable, "-m", "gauntlet", "run", "--resume", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert resumed.returncode == 0, resumed.stderr
    assert not server.failures[1:], server.failures  # the first: the held request's own
    records = log.records()
    starts = [r for r in records if isinstance(r, SearchStarted)]
    assert [s.resumed_from for s in starts] == [0, 2]
    made = [r for r in records if isinstance(r, CandidateJudged)]
    assert [(c.candidate_id, c.generation) for c in made] == [
        (0, 0),
        (1, 1),
        (2, 1),
        (3, 2),
        (4, 2),
    ]
    assert made[2].outcome == "judged" and made[2].correct
    assert made[4].outcome == "duplicate"  # the expert again: not judged twice
    assert sum(c.judge_calls for c in made) == 4  # the seed was not judged again
    (line,) = (out / "attempts.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["agent"].startswith("evolve") and record["status"] == "pass", record["reason"]
    assert record["usage"]["tool_calls"] == 4
    assert (attempt / "submission" / "kernel.asm").read_text() == expert
