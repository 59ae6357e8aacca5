"""Runs: records per attempt, resume, and a run killed with SIGKILL that resumes losslessly."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gauntlet import settings
from gauntlet.agents.base import Budget, ModelSettings
from gauntlet.errors import ConfigError, RecordError, UnknownNameError
from gauntlet.judge import spares
from gauntlet.runner import (
    BLOCK_TASKS_PER_SLOT,
    Job,
    RunConfig,
    execution_order,
    plan_jobs,
    plan_run,
    resume_run,
    start_run,
)
from gauntlet.store import MAX_ATTEMPT_ID, RunStore, attempt_id_for
from tests.support.fixtures import SCALE_ADD, TASKS, with_spec


@pytest.fixture
def fixture_tasks(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(settings, "TASKS_DIR", TASKS)
    return TASKS


#: The run `finished_run` copies: one baseline attempt on the fixture tasks.
FINISHED = RunConfig(agents=["baseline"], seed=1, device="cpu", budget=Budget(wall_s=90))


@pytest.fixture(scope="module")
def _finished_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settings, "TASKS_DIR", TASKS)
        start_run(FINISHED, out)
    return out


@pytest.fixture
def finished_run(fixture_tasks: Path, _finished_once: Path, tmp_path: Path) -> Path:
    """A copy of one finished run (a run's folder holds no path of its own): the tests that
    only need some finished run share one judgment, CI's minutes."""
    out = tmp_path / "run"
    shutil.copytree(_finished_once, out)
    return out


def test_run_records_every_task_and_agent(
    fixture_tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(settings.SPARE_WORKERS_ENV, "1")  # whatever the cores here
    out = tmp_path / "run"
    config = RunConfig(agents=["baseline", "expert"], seed=3, device="cpu", parallel=2)
    store = start_run(config, out)
    records = store.attempts()
    assert sorted((r.task_id, r.agent) for r in records) == [
        ("triton2triton/scale_add", "baseline"),
        ("triton2triton/scale_add", "expert"),
    ]
    assert all(r.status == "pass" for r in records), [r.reason for r in records]
    info = store.info()
    assert info.state == "finished"
    assert len(info.seed_hash) == 64 and (out / "secret-seed").read_text() == "3"
    assert "torch" in info.environment
    for record in records:
        folder = store.attempt_dir(record.attempt_id)
        assert (folder / "submission" / "kernel.py").is_file()
        assert (folder / "transcript.jsonl").is_file()
        assert record.verdict is not None and record.verdict.task_id == record.task_id
        # The template is the baseline, so only the expert changes the workspace.
        expected = {} if record.agent == "baseline" else {"kernel.py": "modified"}
        assert record.workspace_changes == expected
    lines = (out / "attempts.jsonl").read_text().splitlines()
    assert all(json.loads(line)["schema_version"] == 1 for line in lines)
    # The run's warm judge (two attempts: spare workers) is closed with nothing left running.
    assert spares.active() is None
    workers = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.name() == "worker" or p.cmdline()[1:3] == ["-m", "gauntlet.judge.worker"]
    ]
    assert not workers


def test_unknown_agent_fails_before_anything_runs(fixture_tasks: Path, tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="unknown agent 'nobody'"):
        start_run(RunConfig(agents=["nobody"]), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_resume_skips_recorded_attempts(finished_run: Path) -> None:
    out = finished_run
    before = (out / "attempts.jsonl").read_text()
    store = resume_run(out)
    assert (out / "attempts.jsonl").read_text() == before
    assert len(store.attempts()) == 1


def test_redo_makes_matching_attempts_again_keeping_the_old_record_aside(
    finished_run: Path,
) -> None:
    out = finished_run
    first = RunStore(out).attempts()
    store = resume_run(out, redo=["triton2triton/*"])
    (old,) = (out / "superseded.jsonl").read_text().splitlines()
    assert json.loads(old)["started_at"] == first[0].model_dump(mode="json")["started_at"]
    (record,) = store.attempts()
    assert record.attempt_id == first[0].attempt_id
    assert record.started_at > first[0].started_at
    assert record.status == "pass", record.reason


def test_redo_matching_no_task_of_the_run_is_an_error(finished_run: Path) -> None:
    with pytest.raises(ConfigError, match="--redo 'cuda2cuda/\\*' matches no task"):
        resume_run(finished_run, redo=["triton2triton/*", "cuda2cuda/*"])


def test_refuses_to_overwrite_a_run(finished_run: Path) -> None:
    with pytest.raises(RecordError, match="--resume"):
        start_run(FINISHED, finished_run)


def test_torn_last_line_is_skipped(finished_run: Path) -> None:
    out = finished_run
    with (out / "attempts.jsonl").open("a") as handle:
        handle.write('{"kind": "attempt", "schema_ver')
    assert len(RunStore(out).attempts()) == 1


def test_sigkill_mid_run_then_resume_records_each_attempt_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "GAUNTLET_TASKS_DIR": str(TASKS)}
    argv = [
        sys.executable,
        "-m",
        "gauntlet",
        "run",
        "--out",
        str(out),
        "--device",
        "cpu",
        "--agent",
        "baseline",
        "--agent",
        "expert",
        "--attempts",
        "2",
        "--seed",
        "5",
    ]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: TID251
    attempts = out / "attempts.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if attempts.exists() and attempts.read_text().count("\n") >= 1:
            break
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = attempts.read_text().count("\n")
    assert 1 <= done_before < 4
    resumed = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", "run", "--resume", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert resumed.returncode == 0, resumed.stderr
    ids = [json.loads(line)["attempt_id"] for line in attempts.read_text().splitlines()]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 4
    assert all(json.loads(line)["status"] == "pass" for line in attempts.read_text().splitlines())


def test_budget_is_recorded(finished_run: Path) -> None:
    assert RunStore(finished_run).info().budget.wall_s == 90


def test_a_runaway_agent_ends_at_its_budget_and_is_judged(
    fixture_tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A generic command agent that ignores its budget: the runner's child process and all it
    # started are killed at the budget plus the grace period, and the attempt is still judged.
    from gauntlet.agents import child

    monkeypatch.setattr(child, "GRACE_S", 1.0)
    started = time.monotonic()
    store = start_run(
        RunConfig(agents=["generic:sleep 600"], seed=1, device="cpu", budget=Budget(wall_s=2)),
        tmp_path / "run",
    )
    (record,) = store.attempts()
    assert time.monotonic() - started < 120
    assert record.agent_status in ("timeout", "budget_exhausted")
    # It wrote nothing: the template would be judged as the baseline, so it is not judged.
    assert record.status == "agent_error" and record.verdict is None
    assert "without changing its submission" in record.reason


def test_judge_options_reach_the_judge_and_the_record(
    fixture_tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gauntlet.engines.attempt

    seen: list[dict[str, object]] = []
    real = gauntlet.engines.attempt.judge

    def recording_judge(*args: object, **kwargs: object) -> object:
        seen.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gauntlet.engines.attempt, "judge", recording_judge)
    config = RunConfig(
        agents=["expert"], seed=5, device="cpu", time_cap_s=2.5, compile_reference=False
    )
    store = start_run(config, tmp_path / "run")
    assert [r.status for r in store.attempts()] == ["pass"]
    assert [(k["time_cap_s"], k["compile_reference"]) for k in seen] == [(2.5, False)]
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "2.5" in json.dumps(recorded) and '"compile_reference": false' in json.dumps(recorded)


def test_an_agent_that_never_ran_is_never_a_pass(fixture_tasks: Path, tmp_path: Path) -> None:
    # `false` exits at once: the workspace keeps the template, which is the baseline and
    # would pass at 1.00x if it were judged.
    store = start_run(
        RunConfig(agents=["generic:sandbox=none:false"], seed=1, device="cpu"), tmp_path / "run"
    )
    (record,) = store.attempts()
    assert record.agent_status == "error"
    assert record.status == "agent_error" and record.verdict is None
    from gauntlet.score import score_run

    scores = score_run(tmp_path / "run")
    (group,) = scores.groups
    assert group.metrics["pass_rate"].value == 0.0


def test_an_agent_that_failed_after_writing_is_judged_on_what_it_wrote(
    fixture_tasks: Path, tmp_path: Path
) -> None:
    expert = fixture_tasks / "triton2triton" / "scale_add" / "expert" / "kernel.py"
    agent = f"generic:sandbox=none:sh -c 'cp {expert} kernel.py; exit 3'"
    store = start_run(RunConfig(agents=[agent], seed=1, device="cpu"), tmp_path / "run")
    (record,) = store.attempts()
    assert record.agent_status == "error"
    assert record.verdict is not None and record.status == "pass", record.reason


def test_a_toolcall_run_without_a_model_fails_before_anything_runs(
    fixture_tasks: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="needs a model: pass '--model NAME'"):
        start_run(RunConfig(agents=["toolcall"], device="cpu"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_toolcall_run_against_a_dead_endpoint_fails_before_anything_runs(
    fixture_tasks: Path, tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    model = ModelSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="cannot reach its model: the endpoint .* does not"):
        start_run(RunConfig(agents=["toolcall"], device="cpu", model=model), tmp_path / "run")
    assert time.monotonic() - started < 30
    assert not (tmp_path / "run").exists()


def test_a_toolcall_preflight_accepts_an_endpoint_that_answers() -> None:
    from gauntlet.agents import make_agent
    from tests.support.fake_openai import FakeOpenAI

    with FakeOpenAI([]) as server:
        made = make_agent("toolcall")
        made.preflight(ModelSettings(model="m", base_url=server.base_url))  # type: ignore[attr-defined]


def test_a_torn_last_line_is_set_aside_and_its_attempt_made_again(
    fixture_tasks: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    start_run(RunConfig(agents=["baseline"], attempts=2, seed=1, device="cpu"), out)
    log = out / "attempts.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    torn = lines[1][: len(lines[1]) // 2]  # killed in the middle of writing the second line
    log.write_text(lines[0] + torn)
    resume_run(out)
    assert (out / "torn.jsonl").read_text() == torn + "\n"
    ids = [json.loads(line)["attempt_id"] for line in log.read_text().splitlines()]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 2
    resume_run(out)  # and the log stays whole for the next resume
    assert len(RunStore(out).attempts()) == 2


def test_a_run_directory_is_held_by_one_process(finished_run: Path) -> None:
    out = finished_run
    store = RunStore(out)
    with store.lock():
        with pytest.raises(ConfigError, match=r"in use by another gauntlet process \(pid \d+\)"):
            resume_run(out)
    resume_run(out)  # released


def test_one_ctrl_c_stops_the_run_kills_everything_and_it_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    slow = tmp_path / "slow"
    slow.write_text("")
    # An agent that works for ten minutes while `slow` exists, and ends at once without it.
    script = tmp_path / "agent.sh"
    script.write_text(f'#!/bin/sh\nif [ -f "{slow}" ]; then sleep 600; fi\n')
    script.chmod(0o755)
    agent = f"generic:sandbox=none:{script}"
    # With the warm judge's spare workers, which the stop must take down too.
    env = {**os.environ, "GAUNTLET_TASKS_DIR": str(TASKS), "GAUNTLET_SPARE_WORKERS": "1"}
    argv = [sys.executable, "-m", "gauntlet", "run", "--out", str(out), "--device", "cpu"]
    argv += ["--agent", agent, "--attempts", "3", "--parallel", "2", "--seed", "5"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: TID251

    def agents_alive() -> list[psutil.Process]:
        found = []
        for p in psutil.process_iter(["cmdline"]):
            if str(script) in " ".join(p.info["cmdline"] or []):
                found.append(p)
        return found

    # A bound, not a speed: under `make test`'s load on two cores the second attempt's agent
    # once took over 120 s to start (its workspace, the judge's spares importing PyTorch).
    deadline = time.monotonic() + 300
    while len(agents_alive()) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.2)
    assert len(agents_alive()) >= 2
    tree = psutil.Process(proc.pid).children(recursive=True)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 130, stderr.decode()
    assert f"gauntlet run --resume {out}" in stderr.decode()
    assert "Traceback" not in stderr.decode()
    # The agents the stop killed are not reported as failures of their own.
    assert "failed on" not in stderr.decode(), stderr.decode()
    assert agents_alive() == []
    # Nothing it started is left: agents, spare judge workers, their confinements.
    left = [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert left == [], [p.cmdline() for p in left]
    assert (out / "attempts.jsonl").read_text() == ""  # nothing half made was recorded
    assert RunStore(out).info().state == "interrupted"
    slow.unlink()
    resumed = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", "run", "--resume", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(RunStore(out).attempts()) == 3
    assert RunStore(out).info().state == "finished"


def test_a_cli_agent_run_against_a_dead_base_url_fails_before_anything_runs(
    fixture_tasks: Path, tmp_path: Path
) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = ModelSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1")
    config = RunConfig(agents=["generic:sandbox=none:true"], device="cpu", model=dead)
    with pytest.raises(ConfigError, match="agent 'generic' cannot reach its model: the endpoint"):
        start_run(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()

    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's name in http.server
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        alive = ModelSettings(model="m", base_url=f"http://127.0.0.1:{server.server_port}/v1")
        jobs, _ = plan_run(config.model_copy(update={"model": alive}))  # a 404 is an answer
        assert jobs
    finally:
        server.shutdown()


def test_a_long_generic_command_still_makes_a_folder_name() -> None:
    # A generic agent's spec holds its command line, paths included (a checkout 140 characters
    # deep made attempt folders past the 255-byte name limit).
    command = "generic:sandbox=none:sh -c 'cp " + "/very/long/checkout" * 20 + "/kernel.py .'"
    first = attempt_id_for("triton2triton/scale_add", command, 0)
    other = attempt_id_for("triton2triton/scale_add", command.replace(".'", "x'"), 0)
    assert len(first) <= MAX_ATTEMPT_ID and first != other
    assert first.startswith("triton2triton__scale_add--generic_sandbox_none_sh")
    assert first.endswith("--0")
    assert attempt_id_for("triton2triton/scale_add", "expert", 2) == (
        "triton2triton__scale_add--expert--2"
    )


def test_attempts_of_one_task_are_started_apart_in_blocks_of_tasks() -> None:
    tasks = [with_spec(SCALE_ADD(), id=f"t/{n:02d}") for n in range(10)]
    jobs, _ = plan_jobs(tasks, ["baseline", "expert", "autotune"], 2, "cpu")
    ordered = execution_order(jobs, parallel=2)
    assert sorted(j.attempt_id for j in ordered) == sorted(j.attempt_id for j in jobs)
    width = BLOCK_TASKS_PER_SLOT * 2  # 8 tasks a block: then the last 2
    first, last = ordered[: width * 6], ordered[width * 6 :]
    rounds = [first[r * width : (r + 1) * width] for r in range(6)]
    for step, chosen in enumerate(rounds):
        assert [j.task.task_id for j in chosen] == [f"t/{n:02d}" for n in range(width)]
        assert {(j.agent, j.index) for j in chosen} == {
            (["baseline", "expert", "autotune"][step // 2], step % 2)
        }
    assert [j.task.task_id for j in last] == ["t/08", "t/09"] * 6

    def gap(ordered: list[Job]) -> int:
        at: dict[str, list[int]] = {}
        for i, job in enumerate(ordered):
            at.setdefault(job.task.task_id, []).append(i)
        return min(b - a for spots in at.values() for a, b in itertools.pairwise(spots))

    assert gap(jobs) == 1 and gap(ordered) >= 2  # never two of one task started in a row
    assert execution_order(jobs, parallel=1)[:4] == [jobs[n * 6] for n in range(4)]
