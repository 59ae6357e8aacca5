"""The verdict corpus: known kernels for the `scale_add` fixture task and their expected verdicts.

Each file in `corpus/` starts with `# expect: STATUS` and optionally `# reason: TEXT`, a part of
the verdict's reason. A refactor of the judge may change none of these verdicts.
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import pytest

from gauntlet import settings
from gauntlet.judge import judge
from gauntlet.judge.verdict import PHASES
from gauntlet.task import Task, load_task
from tests.support.fixtures import SCALE_ADD, with_spec

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(CORPUS.glob("*.py"))


def expectation(path: Path) -> tuple[str, str]:
    text = path.read_text()
    status = re.search(r"^# expect: (\w+)$", text, re.M)
    reason = re.search(r"^# reason: (.+)$", text, re.M)
    assert status, f"{path.name} has no '# expect:' line"
    return status.group(1), reason.group(1) if reason else ""


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_corpus_verdict(case: Path, tmp_path: Path) -> None:
    status, reason = expectation(case)
    task: Task = SCALE_ADD()
    if case.stem == "hangs":
        task = with_spec(task, timeout_s=4)
    shutil.copyfile(case, tmp_path / "kernel.py")
    verdict = judge(task, tmp_path, device="cpu", seed=7)
    assert verdict.status == status, verdict.reason
    assert reason in verdict.reason
    if status == "pass":
        assert not verdict.timed and "not timed" in verdict.timing_note
        assert all(c.correct for c in verdict.configs)
        assert any(c.config.hidden for c in verdict.configs)


def test_missing_file_is_no_submission(tmp_path: Path) -> None:
    verdict = judge(SCALE_ADD(), tmp_path, device="cpu")
    assert verdict.status == "no_submission"
    assert "'kernel.py' is missing" in verdict.reason
    assert [g.state for g in verdict.gates][:1] == ["failed"]


def test_feedback_mode_checks_visible_configs_only(tmp_path: Path) -> None:
    shutil.copyfile(CORPUS / "overfit.py", tmp_path / "kernel.py")
    verdict = judge(SCALE_ADD(), tmp_path, device="cpu", mode="feedback")
    assert verdict.status == "pass"
    assert verdict.configs and not any(c.config.hidden for c in verdict.configs)


def test_verdict_records_where_its_time_went(tmp_path: Path) -> None:
    shutil.copyfile(CORPUS / "correct.py", tmp_path / "kernel.py")
    # A seed no other test uses, so the reference is computed here rather than cached.
    verdict = judge(SCALE_ADD(), tmp_path, device="cpu", seed=424242)
    assert verdict.status == "pass", verdict.reason
    phases = verdict.phases_s
    expected = ("build", "imports", "reference", "correctness", "compare", "reference.reference")
    for name in (*expected, "reference.send"):
        assert name in phases and phases[name] >= 0.0, phases
    # The top-level phases add up within the judgment's wall, none counted twice: the judge's
    # reading of the references is `reference` (the worker's own steps, `reference.*`, overlap
    # the judge's comparisons), and every other phase leaves it out.
    top = sum(phases[k] for k in PHASES if k in phases)
    assert top <= verdict.duration_s + 0.05, (top, verdict.duration_s, phases)
    assert all(phases[k] >= 0.0 for k in PHASES if k in phases), phases
    # Of the judge's comparisons, the moves of outputs and references (a GPU's copies).
    assert 0.0 < phases["compare.moved"] <= phases["compare"], phases
    # A device without a lock (the CPU) records no wait for one.
    assert "device_wait" not in phases and "device_wait_exclusive" not in phases, phases


def test_verdict_records_the_wait_for_the_devices_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gauntlet.judge import devicelock, python_backend

    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(settings, "LOCK_DIR", tmp_path / "locks")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:  # another judgment timing on the GPU
        with devicelock.exclusive("cuda:7"):
            holding.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(timeout=10)

    def device_hold(*args: object) -> devicelock.Hold:
        threading.Timer(0.5, release.set).start()  # the holder finishes 0.5 s after we ask
        return devicelock.Hold("cuda:7")

    monkeypatch.setattr(python_backend, "_device_hold", device_hold)
    shutil.copyfile(CORPUS / "correct.py", tmp_path / "kernel.py")
    verdict = judge(SCALE_ADD(), tmp_path, device="cpu")
    holder.join(timeout=10)
    assert verdict.status == "pass", verdict.reason
    assert verdict.phases_s["device_wait"] >= 0.4, verdict.phases_s
    # Untimed (the CPU is never timed): the judgment never asked for the GPU alone.
    assert "device_wait_exclusive" not in verdict.phases_s


def _missing_element_7(baseline: str, by: str) -> str:
    line = "tl.store(out_ptr + offs, alpha * x + y, mask=mask)"
    assert line in baseline
    return baseline.replace(
        line, f"tl.store(out_ptr + offs, alpha * x + y + tl.where(offs == 7, {by}, 0.0), mask=mask)"
    )


@pytest.mark.parametrize(("miss", "status"), [("1e-4", "pass"), ("1e-3", "incorrect")])
def test_an_element_may_miss_by_twice_what_the_trusted_baseline_misses(
    miss: str, status: str, tmp_path: Path
) -> None:
    # The task's baseline misses element 7 by 1e-4, ten times float32's atol, as a float32
    # reduction under cancelling inputs does: a candidate doing the same passes, ten times worse
    # does not.
    task = tmp_path / "task"
    shutil.copytree(SCALE_ADD().root, task)
    original = (task / "baseline.py").read_text()
    (task / "baseline.py").write_text(_missing_element_7(original, "1e-4"))
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "kernel.py").write_text("# a candidate\n" + _missing_element_7(original, miss))
    verdict = judge(load_task(task), submission, device="cpu", seed=5)
    assert verdict.status == status, verdict.reason
    if status != "pass":
        assert "mismatch at index [7]" in verdict.reason and "slack 0.0002" in verdict.reason
