"""The judge on a real GPU: timing, the same verdicts as on the CPU device, exploit defenses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gauntlet import confine, settings
from gauntlet.judge import judge, kernel_cache
from gauntlet.judge.pipeline import digest
from tests.support.fixtures import SCALE_ADD

CORPUS = Path(__file__).parents[1] / "judge" / "corpus"

pytestmark = pytest.mark.gpu


def test_expert_is_timed_on_the_gpu(tmp_path: Path) -> None:
    task = SCALE_ADD()
    verdict = judge(task, task.root / "expert", device="cuda:0", seed=3)
    assert verdict.status == "pass", verdict.reason
    assert verdict.timed
    for result in verdict.configs:
        timing = result.timing
        assert timing is not None and timing.unit == "us"
        assert timing.count >= 20
        assert timing.speedup_ci is not None
        assert timing.speedup_ci[0] <= timing.speedup <= timing.speedup_ci[1]
        assert timing.sol is not None and timing.sol_fraction is not None
        assert 0 < timing.sol_fraction <= 1.1
    assert verdict.speedup is not None


@pytest.mark.parametrize(
    "case", ["correct", "wrong_result", "nan_output", "mutates_input", "overfit", "segfault"]
)
def test_gpu_verdict_equals_cpu_verdict(case: str, tmp_path: Path) -> None:
    task = SCALE_ADD()
    shutil.copyfile(CORPUS / f"{case}.py", tmp_path / "kernel.py")
    on_cpu = judge(task, tmp_path, device="cpu", seed=5)
    on_gpu = judge(task, tmp_path, device="cuda:0", seed=5)
    assert on_gpu.status == on_cpu.status, (on_cpu.reason, on_gpu.reason)


def test_a_submissions_compiled_kernels_are_kept_for_its_next_judgment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if confine.available() is not None:
        pytest.skip(f"unconfined candidates use the shared cache: {confine.available()}")
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path / "cache")
    seeded: list[int] = []
    seed = kernel_cache.seed
    monkeypatch.setattr(
        kernel_cache, "seed", lambda entry, target: seeded.append(seed(entry, target)) or 0
    )
    task = SCALE_ADD()
    expert = task.root / "expert"
    first = judge(task, expert, device="cuda:0", seed=3, mode="feedback")
    assert first.status == "pass", first.reason
    files = {name: (expert / name).read_text() for name in task.spec.submission.files}
    kept = kernel_cache.root() / kernel_cache.key(task.task_id, digest(files))
    assert list(kept.glob("*/*")), "nothing kept of what the candidate compiled"
    second = judge(task, expert, device="cuda:0", seed=4, mode="feedback")
    assert second.status == "pass", second.reason
    # The second candidate started with the first one's kernels in its private cache.
    assert seeded[0] == 0 and seeded[1] > 0
