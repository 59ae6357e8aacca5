"""The timing protocol's pure parts (the GPU loop itself runs under `-m gpu`)."""

from __future__ import annotations

import pytest
import torch

from gauntlet.judge import timing


def test_escaped_work_is_judged_against_the_baselines_excess_of_the_moment() -> None:
    # The false rejection seen on an H100 whose CPUs were busy: a correct 4.5 us kernel took
    # 664 us on the host clock, and so did the baseline next to it.
    assert timing.escaped_work(664.5, 4.5, 30.0, baseline_excess_us=650.0) == ""
    # The same host time while the baseline's host clock stays close to its events: work
    # the events did not see.
    problem = timing.escaped_work(664.5, 4.5, 30.0, baseline_excess_us=25.0)
    assert "escapes the timed stream" in problem and "664.5" in problem


@pytest.mark.parametrize(
    ("host_us", "event_us", "escaped"),
    [(140.0, 10.0, False), (160.0, 10.0, True), (2000.0, 1000.0, False), (2200.0, 1000.0, True)],
)
def test_escaped_work_allows_launch_cost_slack_and_the_calls_own_time(
    host_us: float, event_us: float, escaped: bool
) -> None:
    # allowance: the larger of launch and baseline excess (30), 100 us, and the event time
    assert bool(timing.escaped_work(host_us, event_us, 30.0, 5.0)) is escaped


def test_median_ci_narrows_with_more_samples_and_contains_the_median() -> None:
    values = [1.0 + 0.01 * ((i * 37) % 11) for i in range(200)]
    low, high = timing.median_ci(values)
    few_low, few_high = timing.median_ci(values[:20])
    assert low <= sorted(values)[100] <= high
    assert high - low <= few_high - few_low
    assert timing.ci_width([2.0] * 50) == 0.0


def test_scaled_inputs_scale_floats_only() -> None:
    base = {"x": torch.ones(3), "index": torch.arange(3)}
    scaled = timing.scaled_inputs(base, 1.5)
    assert torch.equal(scaled["x"], torch.full((3,), 1.5))
    assert scaled["index"] is base["index"]
