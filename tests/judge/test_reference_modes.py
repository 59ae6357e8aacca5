"""`[reference] mode`: the expected values in float64 (ground truth) or in the reference's dtype.

The fixture task's Triton baseline computes `alpha * x + y` in float32 as PyTorch does, so held
to the native reference it misses no element at all, while against float64 it misses each by
float32's rounding: the mode decides what the candidate is compared with.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.judge import judge
from tests.support.fixtures import SCALE_ADD, with_spec


@pytest.mark.parametrize("mode", ["float64", "native"])
def test_the_mode_sets_what_the_candidate_is_compared_with(mode: str, tmp_path: Path) -> None:
    task = SCALE_ADD()
    reference = task.spec.reference.model_copy(update={"mode": mode})
    task = with_spec(task, reference=reference)
    submission = tmp_path / "submission"
    submission.mkdir()
    for name, text in task.baseline_files().items():
        # Renamed, so it is judged as a candidate, not recognised as the baseline.
        (submission / name).write_text(text + "\n# a candidate\n", encoding="utf-8")
    verdict = judge(task, submission, device="cpu", seed=2, configs="visible", workdir=tmp_path)
    assert verdict.status == "pass", verdict.reason
    float32 = next(r for r in verdict.configs if r.config.dtype == "float32")
    if mode == "native":
        assert float32.max_abs_err == 0.0
    else:
        assert float32.max_abs_err > 0.0
