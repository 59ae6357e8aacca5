"""The comparison of outputs with references (judge/correctness.py)."""

from __future__ import annotations

import math

import torch

from gauntlet.judge import correctness


def test_any_finite_holds_only_to_the_l2_bound_and_the_special_values() -> None:
    # Zeros in the reference once made inf x |0| = NaN and failed every zero element (found on
    # an H100: the checks of timed calls rejected a correct kernel).
    ref = torch.tensor([0.0, 1.0, -2.0, 0.0, 3.0], dtype=torch.float64)
    near = (ref + 1e-4).to(torch.float32)
    assert correctness.compare(near, ref, correctness.ANY_FINITE, 1e-3, "out").ok
    far = (ref * 1.5).to(torch.float32)
    worse = correctness.compare(far, ref, correctness.ANY_FINITE, 1e-3, "out")
    assert not worse.ok and worse.rel_l2_err > 1e-3
    with_nan = near.clone()
    with_nan[1] = math.nan
    assert not correctness.compare(with_nan, ref, correctness.ANY_FINITE, 1.0, "out").ok


def test_reference_specials_must_be_matched() -> None:
    ref = torch.tensor([math.inf, 1.0, math.nan], dtype=torch.float64)
    same = ref.to(torch.float32)
    assert correctness.compare(same, ref, correctness.ANY_FINITE, 1e-3, "out").ok
    other = torch.tensor([1.0, 1.0, math.nan])
    assert not correctness.compare(other, ref, correctness.ANY_FINITE, 1e-3, "out").ok
