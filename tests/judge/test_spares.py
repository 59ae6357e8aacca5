"""Spare workers and the warm `Judge`: fresh processes started ahead, the same verdicts."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from gauntlet.errors import ConfigError
from gauntlet.judge import judge, spares
from gauntlet.judge.service import Judge
from gauntlet.runner import _warm_judge
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
