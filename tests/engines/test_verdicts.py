"""The task's own files are judged once per run where a verdict cannot vary, and reused, marked."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gauntlet.agents.base import AgentResult, Budget, ModelSettings
from gauntlet.engines import attempt
from gauntlet.engines.attempt import AgentOutcome, AttemptSpec, JudgeSettings, SubmittedFile
from gauntlet.engines.verdicts import (
    REUSED_FROM,
    TrustedVerdicts,
    deterministic,
    reuse_key,
    trusted_role,
)
from gauntlet.judge.verdict import Verdict
from gauntlet.store import now
from gauntlet.task import Task
from tests.support.fixtures import SCALE_ADD


def _bytes(files: dict[str, str] | None) -> dict[str, bytes]:
    assert files is not None
    return {name: text.encode() for name, text in files.items()}


def _key(task: Task, files: dict[str, bytes] | None, **changes: object) -> str | None:
    given: dict[str, object] = {
        "device": "cpu",
        "seed": 7,
        "time_cap_s": 10.0,
        "compile_reference": True,
        **changes,
    }
    return reuse_key(task, files, **given)  # type: ignore[arg-type]


def _verdict(status: str = "pass", seconds: float = 3.0) -> Verdict:
    return Verdict(
        task_id="triton2triton/scale_add",
        device="cpu",
        status=status,  # type: ignore[arg-type]
        duration_s=seconds,
        phases_s={"correctness": seconds},
        environment={"containment": "namespaces"},
    )


def test_devices_whose_verdicts_cannot_vary() -> None:
    assert deterministic("cpu") and deterministic("sim:npu") and deterministic("sim:tile")
    assert not deterministic("cuda:0") and not deterministic("rocm:0")


def test_only_the_tasks_own_files_byte_for_byte_are_trusted() -> None:
    task = SCALE_ADD()
    assert trusted_role(task, _bytes(task.baseline_files())) == "baseline"
    assert trusted_role(task, _bytes(task.expert_files())) == "expert"
    edited = {n: t + "\n# mine\n" for n, t in (task.expert_files() or {}).items()}
    assert trusted_role(task, _bytes(edited)) is None
    assert trusted_role(task, {"kernel.py": b"\xff\xfe"}) is None
    assert trusted_role(task, {}) is None


def test_a_key_only_for_trusted_plain_files_on_a_deterministic_device() -> None:
    task = SCALE_ADD()
    baseline, expert = _bytes(task.baseline_files()), _bytes(task.expert_files())
    key = _key(task, baseline)
    assert key is not None and key == _key(task, dict(baseline))
    assert _key(task, expert) not in (None, key)
    assert _key(task, baseline, device="cuda:0") is None
    assert _key(task, None) is None  # a link, a folder or a missing file among them
    assert _key(task, {"kernel.py": b"x = 1\n"}) is None
    for change in ({"seed": 8}, {"device": "sim:npu"}, {"time_cap_s": 2.0}):
        assert _key(task, baseline, **change) != key


def test_a_passing_verdict_is_judged_once_and_reused_marked() -> None:
    kept = TrustedVerdicts()
    calls: list[int] = []

    def judge() -> Verdict:
        calls.append(1)
        return _verdict()

    first = kept.judged("k", "a--baseline--0", judge)
    again = kept.judged("k", "a--autotune--0", judge)
    assert len(calls) == 1
    assert first.duration_s == 3.0 and REUSED_FROM not in first.environment
    assert again.status == "pass" and again.duration_s == 0.0 and again.phases_s == {}
    assert again.environment == {"containment": "namespaces", REUSED_FROM: "a--baseline--0"}
    assert again.model_dump(exclude={"duration_s", "phases_s", "environment"}) == first.model_dump(
        exclude={"duration_s", "phases_s", "environment"}
    )
    kept.judged(None, "b", judge)
    kept.judged(None, "c", judge)
    assert len(calls) == 3  # no key: always judged


def test_failures_and_errors_are_never_reused() -> None:
    kept = TrustedVerdicts()
    statuses = iter(["crash", "pass"])
    assert kept.judged("k", "a", lambda: _verdict(next(statuses))).status == "crash"
    assert REUSED_FROM not in kept.judged("k", "b", lambda: _verdict(next(statuses))).environment

    def broken() -> Verdict:
        raise RuntimeError("the judge broke")

    with pytest.raises(RuntimeError):
        kept.judged("other", "c", broken)
    assert REUSED_FROM not in kept.judged("other", "d", _verdict).environment


def test_an_attempt_waits_for_the_same_files_judged_beside_it() -> None:
    kept = TrustedVerdicts()
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow() -> Verdict:
        calls.append("slow")
        entered.set()
        assert release.wait(10)
        return _verdict()

    results: dict[str, Verdict] = {}
    first = threading.Thread(target=lambda: results.update(a=kept.judged("k", "a", slow)))
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=lambda: results.update(b=kept.judged("k", "b", slow)))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting on the first judgment, not judging beside it
    release.set()
    first.join(10)
    second.join(10)
    assert calls == ["slow"]
    assert results["b"].environment[REUSED_FROM] == "a"


def _outcome(files: dict[str, str]) -> AgentOutcome:
    return AgentOutcome(
        started_at=now(),
        result=AgentResult(status="finished"),
        changes={},
        submission=[SubmittedFile(name=n, kind="file", data=t.encode()) for n, t in files.items()],
        kept=list(files),
        files=None,
        host="here",
    )


def _spec(agent: str, device: str) -> AttemptSpec:
    return AttemptSpec(
        run_id="run",
        attempt_id=f"triton2triton__scale_add--{agent}--0",
        agent=agent,
        index=0,
        device=device,
        model=ModelSettings(),
        budget=Budget(),
    )


@pytest.mark.parametrize("device", ["cpu", "sim:npu", "cuda:0"])
def test_the_judge_stage_judges_the_tasks_own_files_once_per_run(
    monkeypatch: pytest.MonkeyPatch, device: str
) -> None:
    task = SCALE_ADD()
    judged: list[Path] = []

    def fake_judge(task: Task, folder: Path, **_: object) -> Verdict:
        judged.append(folder)
        return _verdict()

    monkeypatch.setattr(attempt, "judge", fake_judge)

    run = TrustedVerdicts()

    def stage(
        agent: str, files: dict[str, str], seed: int, kept: TrustedVerdicts | None = run
    ) -> Verdict | None:
        settings = JudgeSettings(seed=seed, time_cap_s=10.0, compile_reference=True)
        outcome = _outcome(files)
        done = attempt.judge_stage(task, _spec(agent, device), settings, outcome, verdicts=kept)
        return done.record.verdict

    baseline = task.baseline_files()
    first = stage("baseline", baseline, 1)
    again = stage("autotune", baseline, 1)
    assert first is not None and again is not None
    if device == "cuda:0":
        assert len(judged) == 2 and REUSED_FROM not in again.environment
        return
    assert len(judged) == 1
    assert again.environment[REUSED_FROM] == "triton2triton__scale_add--baseline--0"
    stage("seed", baseline, 2)  # another secret seed: judged
    stage("mine", {"kernel.py": baseline["kernel.py"] + "\n"}, 1)  # not the task's bytes
    stage("ray", baseline, 1, None)  # an engine that keeps nothing (Ray's workers)
    stage("next-run", baseline, 1, TrustedVerdicts())  # each run judges them once
    assert len(judged) == 5
