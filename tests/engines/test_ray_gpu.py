"""The Ray engine on a real GPU: judgments holding fractions of one GPU stay correct and take
that GPU's device lock (the host's lock, by physical GPU), so timings never overlap.

    pytest --gpu -m gpu -n 0 tests/engines/test_ray_gpu.py
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from gauntlet import devices, settings
from gauntlet.judge import devicelock
from gauntlet.runner import RunConfig, start_run
from gauntlet.store import RunStore
from tests.support.fixtures import TASKS

pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("ray")]

#: Seconds this test holds every GPU's lock after the run starts: longer than an agent stage
#: and a judge's imports, so each judgment is seen waiting for the lock held here.
HOLD_S = 25.0


def test_half_gpu_judgments_on_ray_wait_for_the_gpus_lock_and_pass(
    ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    monkeypatch.setattr(settings, "TASKS_DIR", TASKS)
    assert ray.cluster_resources().get("GPU", 0) >= 1, "the session's Ray sees no GPU"
    gpus = [d.name for d in devices.list_devices() if d.kind == "cuda"]
    options = dict(
        agents=["expert"], attempts=2, seed=4, pattern="triton2triton/scale_add", device="cuda:0"
    )
    config = RunConfig(engine="ray", gpus_per_judgment=0.5, **options)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            start_run(config, tmp_path / "ray")
        except BaseException as err:  # noqa: BLE001 - reported below
            failures.append(err)

    with ExitStack() as held:
        for gpu in gpus:
            held.enter_context(devicelock.exclusive(gpu))
        driver = threading.Thread(target=run)
        driver.start()
        time.sleep(HOLD_S)
    driver.join(timeout=600)
    assert not driver.is_alive() and not failures, failures
    records = RunStore(tmp_path / "ray").attempts()
    assert [r.status for r in records] == ["pass", "pass"], [r.reason for r in records]
    waits = sorted(r.verdict.phases_s.get("device_wait", 0.0) for r in records if r.verdict)
    # Both judgments waited for the lock this process held (then shared the GPU, each timing
    # it alone: `device_wait_exclusive`).
    assert waits[0] > 5.0, waits
    assert all(r.verdict and "device_wait_exclusive" in r.verdict.phases_s for r in records)
    placed = {r.placement.judge_gpu for r in records if r.placement}
    assert placed <= {str(i) for i in range(len(gpus))} and None not in placed, placed

    local = start_run(RunConfig(parallel=2, **options), tmp_path / "local").attempts()
    verdicts = {r.attempt_id: r.verdict for r in records}
    for record in local:
        theirs = verdicts[record.attempt_id]
        assert record.verdict is not None and theirs is not None
        assert record.status == "pass"
        assert [(c.config.name, c.correct) for c in record.verdict.configs] == [
            (c.config.name, c.correct) for c in theirs.configs
        ]
