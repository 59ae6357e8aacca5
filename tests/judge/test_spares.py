"""Spare workers and the warm `Judge`: fresh processes started ahead, the same verdicts."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from gauntlet.errors import ConfigError
from gauntlet.judge import judge, protocol, python_backend, spares
from gauntlet.judge.service import Judge
from gauntlet.runner import _warm_judge
from gauntlet.task import Task, load_task
from tests.support.fixtures import SCALE_ADD


def _pool(tmp_path: Path) -> spares.SparePool:
    pool = spares.SparePool(tmp_path / "spares")
    pool.warm("cpu")
    assert pool.wait_started("cpu", 60)
    return pool


def test_closing_the_pool_leaves_no_process_and_no_slot(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    pids = [s.handle.child.pid for s in pool._spares]
    assert len(pids) == 2
    pool.close()
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not pool.root.exists()


def test_only_a_candidate_spare_warms_its_watch_ahead(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    try:
        for spare in pool._spares:
            # (Not /proc's cmdline: it reads empty while the launcher is between exec steps.)
            argv = spare.handle.child.argv
            # A confined spare's command line is confine's, with the worker's at its end.
            assert (argv[-1] == "ahead") == (spare.role == "candidate"), argv
    finally:
        pool.close()


def test_a_spare_that_died_waiting_is_not_given_out_and_is_replaced(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    try:
        dead = next(s for s in pool._spares if s.role == "reference")
        os.killpg(dead.handle.child.pid, signal.SIGKILL)
        while dead.handle.child.poll() is None:
            time.sleep(0.05)
        taken = pool.take("reference", "cpu", tmp_path)
        assert taken is None or taken is not dead
        deadline = time.monotonic() + 60
        while pool.count("reference", "cpu") < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.count("reference", "cpu") == 1
        assert all(s is not dead for s in pool._spares)
    finally:
        pool.close()


def test_a_candidate_spare_that_could_see_the_task_is_not_used_for_it(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    try:
        spare = next(s for s in pool._spares if s.role == "candidate")
        if spare.confined is None:
            pytest.skip("this machine cannot confine: a spare shows everything")
        inside = spare.task_dir / "a-task-folder"
        assert spare.shows(inside) and not spare.shows(tmp_path / "elsewhere")
        assert pool.take("candidate", "cpu", inside) is None
        assert pool.take("candidate", "cpu", tmp_path / "elsewhere") is spare
        spare.discard()
    finally:
        pool.close()


def test_a_warm_judge_gives_the_cold_judges_verdict(tmp_path: Path) -> None:
    task = SCALE_ADD()
    cold = judge(task, task.root / "expert", device="cpu", seed=5)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        verdict = warm.eval(task, task.root / "expert", seed=5)
        # The references of seed 5 were kept from the cold judgment: only a candidate taken.
        assert warm.spares_taken == 1
        warm.warm("cpu", wait_s=60)
        other = warm.eval(task, task.root / "expert", seed=6)
        assert warm.spares_taken == 3
    assert verdict.status == cold.status == other.status == "pass", verdict.reason
    assert [(c.config.name, c.correct, c.max_abs_err) for c in verdict.configs] == [
        (c.config.name, c.correct, c.max_abs_err) for c in cold.configs
    ]
    assert verdict.environment.get("containment") == cold.environment.get("containment")
    assert spares.active() is None


def test_a_warm_judge_names_a_task_it_cannot_run(tmp_path: Path) -> None:
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        with pytest.raises(ConfigError, match="runs on"):
            warm.eval("accel/npu/relu", tmp_path, seed=1)


def test_a_run_keeps_spares_only_where_they_can_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _warm_judge([], parallel=2) is None
    monkeypatch.setenv("GAUNTLET_SPARE_WORKERS", "many")
    with pytest.raises(ConfigError, match="GAUNTLET_SPARE_WORKERS"):
        _warm_judge([], parallel=2)


def _reference_pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process of each judgment's reference worker, as it computes the references."""
    pids: list[int] = []
    real = python_backend._Evaluation._open_feed

    def collect(self: Any, worker: Any) -> None:
        pids.append(worker.child.pid)
        return real(self, worker)

    monkeypatch.setattr(python_backend._Evaluation, "_open_feed", collect)
    return pids


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def _kept_reference(pool: spares.SparePool | None) -> spares.Spare:
    """The pool's one reference worker, once back from its reset (in the background)."""
    assert pool is not None
    deadline = time.monotonic() + 60
    while pool._resets and time.monotonic() < deadline:
        time.sleep(0.05)
    (kept,) = [s for s in pool._spares if s.role == "reference"]
    return kept


def _needs_confinement() -> None:
    """A reference worker is kept only where candidates are confined."""
    if (why := spares.confine.available()) is not None:
        pytest.skip(f"this machine cannot confine, so keeps no reference worker: {why}")


def test_one_reference_worker_serves_a_judges_judgments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_confinement()
    task = SCALE_ADD()
    pids = _reference_pids(monkeypatch)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        verdicts = [warm.eval(task, task.root / "expert", seed=s) for s in (7101, 7102)]
        kept = _kept_reference(warm._pool)
        assert kept.served == 2 and kept.handle.child.pid == pids[0]
    assert [v.status for v in verdicts] == ["pass", "pass"], [v.reason for v in verdicts]
    assert len(pids) == 2 and pids[0] == pids[1]
    # The judge's end leaves no process behind.
    assert _gone(pids[0])


def test_no_reference_worker_is_kept_where_candidates_run_unconfined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unconfined candidate runs as the judge's user beside the reference worker: a kept one
    # would carry whatever it did to it into other submissions' judgments.
    monkeypatch.setattr(spares.confine, "available", lambda: "no user namespaces (test)")
    task = SCALE_ADD()
    pids = _reference_pids(monkeypatch)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        verdicts = [warm.eval(task, task.root / "expert", seed=s) for s in (7111, 7112)]
    assert [v.status for v in verdicts] == ["pass", "pass"], [v.reason for v in verdicts]
    assert len(pids) == 2 and pids[0] != pids[1]


def test_a_reference_worker_killed_between_judgments_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = SCALE_ADD()
    pids = _reference_pids(monkeypatch)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        first = warm.eval(task, task.root / "expert", seed=7103)
        os.killpg(pids[0], signal.SIGKILL)
        while not _gone(pids[0]):
            time.sleep(0.05)
        second = warm.eval(task, task.root / "expert", seed=7104)
    assert [v.status for v in (first, second)] == ["pass"] * 2, second.reason
    assert pids[1] != pids[0]
    assert all(_gone(pid) for pid in pids)


_COUNTING_REFERENCE = """
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import loads  # noqa: E402 - a module of the task's own folder: it lives as long as the process

loads.COUNT += 1


def reference(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = alpha * x + y
    # A fresh worker loads this file once: loaded again in a process that kept the state of
    # an earlier judgment, it answers in another dtype (a wrong verdict for a right kernel).
    return out if loads.COUNT == 1 else out.to(torch.float64)
"""


def _counting_task(folder: Path) -> Task:
    """scale_add whose reference keeps state in a module of its folder across its loads."""
    shutil.copytree(SCALE_ADD().root, folder)
    (folder / "reference.py").write_text(_COUNTING_REFERENCE)
    (folder / "loads.py").write_text("COUNT = 0\n")
    return load_task(folder)


def test_a_tasks_module_state_does_not_reach_the_next_judgment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_confinement()
    first, second = (_counting_task(tmp_path / name) for name in ("first", "second"))
    pids = _reference_pids(monkeypatch)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        verdicts = [
            warm.eval(task, task.root / "expert", seed=seed)
            for task, seed in ((first, 7106), (second, 7107), (first, 7108))
        ]
    assert [v.status for v in verdicts] == ["pass"] * 3, [v.reason for v in verdicts]
    assert len(set(pids)) == 1


def test_a_kept_reference_worker_serves_a_tasks_checker_judgment_after_judgment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_confinement()
    from gauntlet.importers.gpumode import GpuModeOptions, import_gpumode

    fixtures = Path(__file__).parents[1] / "importers/gpumode"
    options = GpuModeOptions(track="torch2triton", id_prefix="gm", sets=["mini"])
    import_gpumode(fixtures, tmp_path / "tasks", options)
    task = load_task(tmp_path / "tasks" / "mini" / "unit_rows")
    submission = tmp_path / "submission"
    submission.mkdir()
    # Every element is wrong, and the problem's checker (a row's sign is free) decides.
    shutil.copy(fixtures / "submissions" / "unit_rows_flipped.py", submission / "submission.py")
    pids = _reference_pids(monkeypatch)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        # (The task names a GPU; judged on the CPU as tests/exploits does, through the pool.)
        verdicts = [judge(task, submission, device="cpu", seed=s) for s in (7109, 7110)]
    assert [v.status for v in verdicts] == ["pass", "pass"], [v.reason for v in verdicts]
    assert len(pids) == 2 and pids[0] == pids[1]


def _imported_pool(tmp_path: Path, size: int) -> spares.SparePool:
    pool = spares.SparePool(tmp_path / "spares", size)
    pool.warm("cpu")
    assert pool.wait_imported("cpu", 120)
    return pool


# Under --runslow (18 s of CI's 15 minutes): which spare is taken is speed, not a verdict.
@pytest.mark.slow
def test_a_judgment_takes_a_spare_whose_imports_are_done_first(tmp_path: Path) -> None:
    pool = _imported_pool(tmp_path, 1)
    # Started and imported outside the pool, to be put behind a spare that still imports.
    ready = spares.start_spare("candidate", "cpu", pool.root)
    taken = [ready]
    try:
        assert _until_imported(ready)
        first = pool.take("candidate", "cpu", tmp_path)
        assert first is not None and first.origin == "spare"
        taken.append(first)
        assert pool.wait_started("cpu", 60)
        with pool._lock:
            # Behind the replacement just started, which imports for seconds.
            pool._spares.append(ready)
        again = pool.take("candidate", "cpu", tmp_path)
        assert again is ready and again.origin == "spare"
    finally:
        for spare in taken:
            spare.discard()
        pool.close()


def _until_imported(spare: spares.Spare, timeout_s: float = 120) -> bool:
    deadline = time.monotonic() + timeout_s
    while not spare.imported():
        if time.monotonic() > deadline or spare.handle.child.poll() is not None:
            return False
        time.sleep(0.05)
    return True


def test_judgments_that_outrun_the_spares_imports_get_more_spares_ahead(tmp_path: Path) -> None:
    pool = _imported_pool(tmp_path, 1)
    pool.most_ahead = 4
    taken: list[spares.Spare] = []
    try:
        first = pool.take("candidate", "cpu", tmp_path)
        assert first is not None and first.origin == "spare"
        taken.append(first)
        assert pool.wait_started("cpu", 60)
        # Its replacement, just started, imports for seconds: the next judgment outran it.
        second = pool.take("candidate", "cpu", tmp_path)
        assert second is not None and second.origin == "spare importing"
        taken.append(second)
        deadline = time.monotonic() + 60
        while pool.count("candidate", "cpu") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool.count("candidate", "cpu") == 2
        # A reference worker is kept, not taken per judgment: its kind keeps its size.
        assert pool.count("reference", "cpu") == 1
    finally:
        for spare in taken:
            spare.discard()
        pool.close()


# Under --runslow (10-28 s of CI's 15 minutes): the pool's growth is speed, not a verdict.
@pytest.mark.slow
def test_back_to_back_judgments_through_a_warm_judge_wait_for_no_imports(tmp_path: Path) -> None:
    task = SCALE_ADD()
    with Judge(device="cpu", workdir=tmp_path / "spares", spare_workers=2) as warm:
        assert warm.warm("cpu", wait_s=120, imported=True)
        verdicts = [
            warm.eval(task, task.root / "expert", seed=seed, mode="feedback")
            for seed in (7121, 7122)
        ]
    assert [v.status for v in verdicts] == ["pass", "pass"], [v.reason for v in verdicts]
    # Each candidate came from a spare that had reported its imports done when taken.
    assert [v.environment["candidate_worker"] for v in verdicts] == ["spare", "spare"]
    assert all(float(v.environment["candidate_imports_s"]) > 0 for v in verdicts)
    assert verdicts[0].environment["reference_worker"] == "spare"
    if spares.confine.available() is None:
        assert verdicts[1].environment["reference_worker"] == "kept"
    # The wait for the workers' 'ready' is then no import (seconds): a generous bound.
    assert all(v.phases_s["imports"] < 5.0 for v in verdicts), [v.phases_s for v in verdicts]


def test_a_judgment_waits_for_a_kept_reference_worker_still_resetting(tmp_path: Path) -> None:
    _needs_confinement()
    pool = _pool(tmp_path)
    taken: list[spares.Spare] = []
    try:
        kept = pool.take("reference", "cpu", tmp_path)
        assert kept is not None
        pool.resetting(kept)
        # Not asked to wait: a fresh spare (or none), never the one resetting.
        other = pool.take("reference", "cpu", tmp_path)
        assert other is not kept
        taken += [s for s in (other,) if s is not None]
        idle = protocol.Idle(event="idle", host_bytes=1 << 30, device_bytes=0)
        threading.Timer(0.5, pool.give_back, (kept, idle)).start()
        started = time.monotonic()
        again = pool.take("reference", "cpu", tmp_path, wait_s=60)
        # It waited for the reset to end, and got the worker that served before.
        assert again is kept and again.origin == "kept"
        assert time.monotonic() - started >= 0.4
        taken.append(kept)
    finally:
        for spare in taken:
            spare.discard()
        pool.close()


def test_a_judgment_goes_on_while_its_reference_worker_resets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reset (0.2 s here, seconds after a fresh worker's first judgment on a GPU host) is
    # no part of the judgment's wall: it ends before the reset may begin. The next judgment
    # waits for the worker and gets it back.
    _needs_confinement()
    task = SCALE_ADD()
    judged = threading.Event()
    began: list[bool] = []
    reset = python_backend._reset

    def after_the_judgment(worker: Any, pool: Any, spare: Any, task_id: str) -> None:
        began.append(judged.wait(20))
        reset(worker, pool, spare, task_id)

    monkeypatch.setattr(python_backend, "_reset", after_the_judgment)
    with Judge(device="cpu", workdir=tmp_path / "spares") as warm:
        warm.warm("cpu", wait_s=60)
        first = warm.eval(task, task.root / "expert", seed=7131, mode="feedback")
        judged.set()
        second = warm.eval(task, task.root / "expert", seed=7132, mode="feedback")
    assert [v.status for v in (first, second)] == ["pass", "pass"], second.reason
    assert began[0] is True
    assert first.environment["reference_worker"] != "kept"
    assert second.environment["reference_worker"] == "kept"
    # How long the reset it waited for took, measured by the worker.
    assert "reference_reset_s" not in first.environment
    assert float(second.environment["reference_reset_s"]) >= 0.0
