"""What precision the reference worker sends its float64 results in (judge/worker.py)."""

from __future__ import annotations

import math

import pytest
import torch

from gauntlet.judge.worker import _for_judge


def test_half_precision_outputs_get_float32_references() -> None:
    exact = torch.tensor([1.0 / 3.0, 2.0**-20, 1e4 + 1.0 / 7.0], dtype=torch.float64)
    for half in (torch.float16, torch.bfloat16):
        sent = _for_judge(exact, torch.zeros(3, dtype=half))
        assert sent.dtype == torch.float32
        # Far below any half-precision tolerance (fp16 rounds at 5e-4 relative).
        assert torch.allclose(sent.double(), exact, rtol=1e-7, atol=0.0)


def test_float32_outputs_keep_float64_references() -> None:
    exact = torch.tensor([1.0 / 3.0], dtype=torch.float64)
    assert _for_judge(exact, torch.zeros(1, dtype=torch.float32)).dtype == torch.float64
    assert _for_judge(exact, None).dtype == torch.float64


def test_the_baselines_errors_skip_values_past_its_dtypes_range() -> None:
    from gauntlet.judge.worker import _errors

    exact = torch.tensor([-66162.9, 1.0, 2.0], dtype=torch.float64)
    base = torch.tensor([-math.inf, 1.0, 2.001953125], dtype=torch.float16)
    rel_l2, max_abs = _errors(base, exact)
    assert rel_l2 == pytest.approx(0.001953125 / math.hypot(1.0, 2.0))
    assert max_abs == pytest.approx(0.001953125)
    # A NaN where the exact value fits: no bound from this baseline, and no element slack.
    rel_l2, max_abs = _errors(torch.tensor([math.nan, 1.0, 2.0]), exact.float().double())
    assert rel_l2 == math.inf and max_abs == 0.0
