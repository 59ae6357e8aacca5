"""The timing protocol's pure parts (the GPU loop itself runs under `-m gpu`)."""

from __future__ import annotations

import random
import statistics

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


def test_perturbed_inputs_change_every_float_element_and_nothing_else() -> None:
    base = {"x": torch.ones(1000), "index": torch.arange(3), "zero": torch.zeros(4)}
    first = timing.perturbed_inputs(base, 7)
    again = timing.perturbed_inputs(base, 7)
    other = timing.perturbed_inputs(base, 8)
    # The reference worker rebuilds a timed call's inputs bit for bit from its seed.
    assert torch.equal(first["x"], again["x"])
    factors = first["x"] / other["x"]
    # Per-element factors: no single scale maps one call's inputs onto another's, so no
    # output cached from an earlier call can be rescaled into this one's.
    assert float(factors.std()) > 0.2
    assert 0.5 <= float(first["x"].min()) and float(first["x"].max()) <= 2.0
    assert first["index"] is base["index"] and torch.equal(first["zero"], base["zero"])


def test_the_timing_loop_and_the_reference_make_the_same_inputs() -> None:
    base = {"x": torch.randn(64, dtype=torch.bfloat16), "w": torch.randn(8)}
    prepared = timing._Inputs(base, []).prepare(1234)
    rebuilt = timing.perturbed_inputs(base, 1234)
    assert all(torch.equal(a, b) for a, b in zip(prepared, rebuilt.values(), strict=True))


def _walls(times: list[float], overhead: float) -> dict[int, float]:
    return {k: t + overhead + (k % 3) * 4.0 for k, t in enumerate(times)}


def test_the_judges_clock_agrees_with_honest_events() -> None:
    baseline = [200.0 + (k % 5) for k in range(40)]
    candidate = [50.0 + (k % 7) for k in range(40)]
    assert (
        timing.clock_disagreement(
            baseline, candidate, _walls(baseline, 300.0), _walls(candidate, 300.0)
        )
        == ""
    )


def test_a_heavier_host_wrapper_is_not_taken_for_patched_events() -> None:
    # A tiny config: the candidate's kernels are faster, but its Python wrapper (an autograd
    # function launching three kernels) costs the host 28 us more a call than the baseline's.
    baseline = [5.0 + (k % 3) * 0.1 for k in range(40)]
    candidate = [1.7 + (k % 3) * 0.1 for k in range(40)]
    walls_b = _walls(baseline, 60.0)
    walls_c = _walls(candidate, 60.0 + 28.0)
    assert timing.clock_disagreement(baseline, candidate, walls_b, walls_c) == ""


def _busy_host_walls(times: list[float], overhead: float, seed: int) -> dict[int, float]:
    """The judge's clock on a host busy with other work: most calls on time, a third of them
    late by 40-200 us."""
    rng = random.Random(seed)
    return {
        k: t + overhead + (rng.uniform(40.0, 200.0) if rng.random() < 0.35 else rng.uniform(0, 8))
        for k, t in enumerate(times)
    }


def test_a_busy_host_clock_is_not_taken_for_patched_events() -> None:
    # 20 pairs (a 0.1 s time cap) of a 1 x 3 config, correct CUDA expert slower than PyTorch's
    # eager kernel by 2 us: on a busy host the candidate's calls drew more of the late ones.
    baseline = [9.4 + (k % 3) * 0.1 for k in range(20)]
    candidate = [11.1 + (k % 3) * 0.1 for k in range(20)]
    walls_b = _busy_host_walls(baseline, 300.0, seed=0)
    walls_c = _busy_host_walls(candidate, 300.0, seed=28)
    events = statistics.median(b - c for b, c in zip(baseline, candidate, strict=True))
    walls = statistics.median(walls_b[k] - walls_c[k] for k in range(20))
    # The fixed slack alone would reject it (as it did 70 of 3,200 such draws; 2 with the noise)
    assert events - walls > timing.CLOCK_SLACK_US + timing.CLOCK_SLACK_FRACTION * 9.5
    assert timing.clock_disagreement(baseline, candidate, walls_b, walls_c) == ""


def test_patched_events_are_caught_on_a_busy_host_too() -> None:
    # What really ran: baseline 400 us, candidate 300 us; the events report the candidate at
    # 40 us ("10x"), on the same busy host as above.
    baseline, real = [400.0] * 40, [300.0] * 40
    walls_b = _busy_host_walls(baseline, 300.0, seed=1)
    walls_c = _busy_host_walls(real, 300.0, seed=7)
    assert "tampered" in timing.clock_disagreement(baseline, [40.0] * 40, walls_b, walls_c)


@pytest.mark.parametrize("lie", ["faster_candidate", "slower_baseline"])
def test_the_judges_clock_catches_patched_events(lie: str) -> None:
    # What really ran: baseline 200 us, candidate 150 us a call.
    baseline = [200.0] * 40
    candidate = [150.0] * 40
    walls_b, walls_c = _walls(baseline, 300.0), _walls(candidate, 300.0)
    if lie == "faster_candidate":
        reported_b, reported_c = baseline, [15.0] * 40  # "10x"
    else:
        reported_b, reported_c = [1500.0] * 40, candidate
    problem = timing.clock_disagreement(reported_b, reported_c, walls_b, walls_c)
    assert "tampered" in problem


@pytest.mark.parametrize(
    ("name", "library"),
    [
        ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", True),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", True),
        ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4>", True),
        ("cudnn::bn_fw_tr_1C11_kernel_NCHW", True),
        ("ampere_sgemm_128x64_nn", True),
        ("cupy_add__float32_float32_float32", True),
        ("cupy_sum", True),
        ("sgemm_tiled(float const*, float const*, float*, int)", False),
        ("_scale_add", False),
        ("matmul_kernel", False),
        ("my_cupy_like_kernel", False),
    ],
)
def test_library_kernels_are_told_from_a_submissions_own(name: str, library: bool) -> None:
    assert bool(timing.LIBRARY_KERNELS.match(name)) is library
