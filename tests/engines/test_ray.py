"""The Ray engine on a real local Ray (2 CPUs): the local engine's verdicts, a Ray worker killed
mid-attempt without a lost or doubled attempt, a killed driver resumed.

Every test here shares the session's Ray (`ray_address`); `xdist_group` keeps them on one
pytest worker so `make test` (`--dist loadgroup`) starts one Ray.
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

from gauntlet.errors import ConfigError
from gauntlet.runner import RunConfig, start_run
from gauntlet.store import AttemptRecord, RunStore

pytestmark = pytest.mark.xdist_group("ray")

#: Fields that say how long and where, not what: they differ between any two runs (a
#: submission's stderr holds the PyTorch profiler's time stamps).
VOLATILE = {"duration_s", "phases_s", "environment", "stderr"}


def without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return value


def judged(records: list[AttemptRecord]) -> dict[str, tuple[str, str, Any]]:
    """Each attempt's status, reason and verdict, without its times and places."""
    return {
        r.attempt_id: (
            r.status,
            r.reason,
            without_volatile(r.verdict.model_dump(mode="json")) if r.verdict else None,
        )
        for r in records
    }


def run_both(tmp_path: Path, **options: Any) -> tuple[RunStore, RunStore]:
    local = start_run(RunConfig(seed=11, parallel=2, **options), tmp_path / "local")
    ray = start_run(RunConfig(seed=11, engine="ray", **options), tmp_path / "ray")
    return local, ray


def test_ray_gives_the_local_verdicts_on_an_accelerator_task(
    ray_address: str, tmp_path: Path
) -> None:
    local, ray = run_both(tmp_path, agents=["expert"], pattern="accel/npu/relu")
    assert judged(ray.attempts()) == judged(local.attempts())
    assert [r.status for r in ray.attempts()] == ["pass"]
    assert ray.info().engines == ["ray"] and local.info().engines == ["local"]
    for record in ray.attempts():
        assert record.placement is not None and record.placement.engine == "ray"
        folder = ray.attempt_dir(record.attempt_id)
        assert (folder / "submission" / "kernel.asm").is_file()
        assert (folder / "transcript.jsonl").is_file()


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("suite", ["smoke", "accel-rvv"])
def test_ray_gives_the_local_verdicts_on_a_whole_suite(
    ray_address: str, tmp_path: Path, suite: str
) -> None:
    local, ray = run_both(tmp_path, agents=["baseline", "expert"], suite=suite)
    assert judged(ray.attempts()) == judged(local.attempts())
    assert len(ray.attempts()) == len(local.attempts()) >= 12


def slow_agent(tmp_path: Path) -> tuple[str, Path, Path]:
    """A generic agent that notes each start and works while `flag` exists."""
    starts = tmp_path / "starts"
    flag = tmp_path / "flag"
    flag.touch()
    script = tmp_path / "agent.sh"
    script.write_text(
        f'#!/bin/sh\necho start >> "{starts}"\nwhile [ -f "{flag}" ]; do sleep 0.1; done\n'
    )
    script.chmod(0o755)
    return f"generic:sandbox=none:{script}", starts, flag


def wait_for(check: Any, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_ray_worker_killed_mid_attempt_is_retried_and_recorded_once(
    ray_address: str, tmp_path: Path
) -> None:
    agent, starts, flag = slow_agent(tmp_path)
    config = RunConfig(agents=[agent], pattern="accel/npu/relu", seed=2, engine="ray")
    out = tmp_path / "run"
    failures: list[BaseException] = []

    def run() -> None:
        try:
            start_run(config, out)
        except BaseException as err:  # noqa: BLE001 - reported by the assertion below
            failures.append(err)

    driver = threading.Thread(target=run)
    driver.start()
    wait_for(lambda: starts.exists(), "the agent to start")
    running = [
        p
        for p in psutil.process_iter(["cmdline", "ppid"])
        if str(starts.parent / "agent.sh") in " ".join(p.info["cmdline"] or [])
    ]
    # The script's shell forks for each `sleep`: a fork not yet exec'd shows the same command.
    (agent_process,) = [p for p in running if p.info["ppid"] not in {q.pid for q in running}]
    ray_worker = next(p for p in agent_process.parents() if p.name().startswith("ray::"))
    ray_worker.kill()  # SIGKILL: no cleanup of its own
    flag.unlink()  # the orphaned first try ends; the retry finds no flag and ends at once
    driver.join(timeout=180)
    assert not driver.is_alive() and not failures, failures
    lines = (out / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == 1  # neither lost nor recorded twice
    assert starts.read_text().count("start") == 2  # the killed try and Ray's retry
    (record,) = RunStore(out).attempts()
    assert record.status == "pass", record.reason  # the untouched template: the baseline
    assert RunStore(out).info().state == "finished"


@pytest.mark.slow
def test_a_killed_ray_driver_resumes_each_attempt_once(ray_address: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "gauntlet", "run", "--out", str(out), "--engine", "ray"]
    argv += ["--ray-address", ray_address, "--tasks", "accel/npu/relu", "--attempts", "2"]
    argv += ["--agent", "baseline", "--agent", "expert", "--seed", "5"]
    driver = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: TID251
    attempts = out / "attempts.jsonl"
    wait_for(
        lambda: (
            driver.poll() is not None
            or (attempts.exists() and attempts.read_text().count("\n") >= 1)
        ),
        "a first attempt",
        timeout_s=240,
    )
    assert driver.poll() is None, driver.stderr.read().decode() if driver.stderr else ""
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    assert 1 <= attempts.read_text().count("\n") < 4
    resumed = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", "run", "--resume", str(out)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert resumed.returncode == 0, resumed.stderr
    ids = [json.loads(line)["attempt_id"] for line in attempts.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 4
    assert {json.loads(line)["status"] for line in attempts.read_text().splitlines()} == {"pass"}
    assert RunStore(out).info().engines == ["ray"]


@pytest.mark.slow
def test_one_ctrl_c_stops_a_ray_run_kills_its_agents_and_it_resumes(
    ray_address: str, tmp_path: Path
) -> None:
    agent, starts, flag = slow_agent(tmp_path)
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "gauntlet", "run", "--out", str(out), "--engine", "ray"]
    argv += ["--ray-address", ray_address, "--tasks", "accel/npu/relu", "--attempts", "2"]
    argv += ["--agent", agent, "--seed", "3"]
    driver = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: TID251

    def agents_alive() -> list[psutil.Process]:
        script = str(tmp_path / "agent.sh")
        return [
            p
            for p in psutil.process_iter(["cmdline"])
            if script in " ".join(p.info["cmdline"] or [])
        ]

    wait_for(lambda: len(agents_alive()) >= 2 or driver.poll() is not None, "two agents")
    assert driver.poll() is None, driver.stderr.read().decode() if driver.stderr else ""
    driver.send_signal(signal.SIGINT)
    _, stderr = driver.communicate(timeout=90)
    assert driver.returncode == 130, stderr.decode()
    assert f"gauntlet run --resume {out}" in stderr.decode()
    wait_for(lambda: not agents_alive(), "the agents to be killed", timeout_s=30)
    assert (out / "attempts.jsonl").read_text() == ""
    assert RunStore(out).info().state == "interrupted"
    flag.unlink()
    resumed = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", "run", "--resume", str(out)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(RunStore(out).attempts()) == 2


def test_the_ray_engine_without_ray_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gauntlet.engines.ray import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"kernel-gauntlet\[ray\]"):
        RayExecutor()


def test_ray_options_without_the_ray_engine_are_a_usage_error() -> None:
    import typer
    from typer.testing import CliRunner

    from gauntlet._cli import run

    app = typer.Typer()
    run.register(app)  # alone: the app is the `run` command
    for args in (["--ray-address", "auto"], ["--gpus-per-judgment", "0.5"], ["--engine", "spark"]):
        result = CliRunner().invoke(app, ["--dry-run", *args])
        assert isinstance(result.exception, ConfigError), result.output
        assert "--engine" in str(result.exception)
