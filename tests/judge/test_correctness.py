"""The comparison of outputs with references (judge/correctness.py)."""

from __future__ import annotations

import math

import pytest
import torch

from gauntlet.judge import correctness
from gauntlet.task import Tolerance


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


FP16_TOL = correctness.Tolerance(atol=4e-3, rtol=4e-3)


def test_an_exact_value_past_float16s_range_may_come_back_as_its_infinity() -> None:
    # Found on an H100: gemv under `special` inputs, exact -66162.9, correctly rounded -inf.
    ref = torch.tensor([-66162.9, 1.0, 70000.0], dtype=torch.float64)
    rounded = ref.to(torch.float16)
    assert rounded[0] == -math.inf
    check = correctness.compare(rounded, ref, FP16_TOL, 1e-3, "out")
    assert check.ok, check.reason
    assert math.isfinite(check.rel_l2_err)
    wrong_sign = rounded.clone()
    wrong_sign[0] = math.inf
    assert not correctness.compare(wrong_sign, ref, FP16_TOL, 1e-3, "out").ok
    nan = rounded.clone()
    nan[2] = math.nan
    assert not correctness.compare(nan, ref, FP16_TOL, 1e-3, "out").ok


def test_a_finite_float16_value_must_still_be_near_the_exact_one() -> None:
    # 65504 (saturated) is 1 % off 66162.9: within no float16 tolerance.
    ref = torch.tensor([-66162.9], dtype=torch.float64)
    saturated = torch.tensor([-65504.0], dtype=torch.float16)
    assert not correctness.compare(saturated, ref, FP16_TOL, 1e-3, "out").ok


def test_slack_widens_every_element_by_the_baselines_worst_error() -> None:
    ref = torch.tensor([-2.15145, 0.5, 3.0], dtype=torch.float64)
    cand = torch.tensor([-2.16406, 0.5, 3.0], dtype=torch.float16)
    plain = correctness.compare(cand, ref, FP16_TOL, 1.0, "out")
    assert not plain.ok and "(atol 0.004, rtol 0.004)" in plain.reason
    # The baseline missed by 0.0126 on this trial: twice that is the slack.
    slack = correctness.element_slack(0.0126)
    assert slack == 2 * 0.0126
    assert correctness.compare(cand, ref, FP16_TOL, 1.0, "out", slack=slack).ok
    far = torch.tensor([-2.3, 0.5, 3.0], dtype=torch.float16)
    beyond = correctness.compare(far, ref, FP16_TOL, 1.0, "out", slack=slack)
    assert not beyond.ok and "slack 0.0252" in beyond.reason


def test_an_infinite_baseline_error_gives_no_slack() -> None:
    assert correctness.element_slack(math.inf) == 0.0
    assert correctness.element_slack(0.0) == 0.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_a_comparison_in_chunks_gives_the_result_of_one_at_once(seed: int, chunk: int) -> None:
    # Chunks bound the float64 temporaries of a GPU-sized output; they must change nothing:
    # the count, the first wrong element and its index, the largest errors, the L2 norms.
    gen = torch.Generator().manual_seed(seed)
    ref = torch.randn(5, 37, generator=gen, dtype=torch.float64) * 100
    ref[0, 3] = math.nan
    ref[1, 5] = math.inf
    ref[2, 7] = 1e6  # past float16's range: may come back as infinity
    cand = (ref + torch.randn(5, 37, generator=gen, dtype=torch.float64) * 1e-3).to(torch.float16)
    if seed % 2:
        cand[3, 11 + seed] = 7.0  # one wrong element, after a chunk boundary or two
        cand[4, 2] = math.nan
    tol = Tolerance(atol=0.05, rtol=0.01)
    whole = correctness.compare(cand, ref, tol, 1e-2, "out", chunk_elements=ref.numel())
    parts = correctness.compare(cand, ref, tol, 1e-2, "out", chunk_elements=chunk)
    assert (parts.ok, parts.reason) == (whole.ok, whole.reason)
    assert parts.match_fraction == whole.match_fraction
    assert parts.max_abs_err == whole.max_abs_err and parts.max_rel_err == whole.max_rel_err
    assert parts.rel_l2_err == pytest.approx(whole.rel_l2_err, rel=1e-12)


def test_the_chunk_is_sized_to_the_memory_there_is() -> None:
    assert correctness.elements_per_chunk("cpu", 10) == 10
    assert correctness.elements_per_chunk("cpu", 1 << 40) == correctness.HOST_CHUNK_ELEMENTS


def test_a_gpu_chunk_takes_no_more_than_its_cap_however_much_memory_is_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The judge shares the GPU with its workers, and its allocator keeps what a chunk took.
    free = {"bytes": 1 << 40}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free["bytes"], 1 << 41))
    assert correctness.elements_per_chunk("cuda:0", 1 << 40) == correctness.DEVICE_CHUNK_ELEMENTS
    assert correctness.elements_per_chunk("cuda:0", 3 << 20) == 3 << 20
    free["bytes"] = 4 * correctness.COMPARE_BYTES_PER_ELEMENT << 20
    assert correctness.elements_per_chunk("cuda:0", 1 << 40) == 2 << 20


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_the_reference_workers_baseline_error_is_the_same_in_chunks(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gauntlet.judge import worker

    gen = torch.Generator().manual_seed(7)
    ref = torch.randn(9, 13, generator=gen, dtype=torch.float64) * 50
    ref[1, 1] = 1e6  # past float16's range: skipped
    base = (ref + torch.randn(9, 13, generator=gen, dtype=torch.float64) * 1e-2).to(torch.float16)
    whole = worker._errors(base, ref)
    monkeypatch.setattr(worker, "elements_per_chunk", lambda device, total: chunk)
    parts = worker._errors(base, ref)
    assert parts[1] == whole[1]
    assert parts[0] == pytest.approx(whole[0], rel=1e-12)
    base[2, 2] = math.nan
    assert worker._errors(base, ref)[0] == math.inf


def test_no_checker_may_accept_nan_or_inf_where_the_reference_is_finite() -> None:
    # A task's checker decides values, but `(out - ref).abs() > tol` says yes to NaN.
    ref = torch.tensor([1.0, 2.0, math.nan, 70000.0], dtype=torch.float64)
    nan_at_finite = torch.tensor([1.0, math.nan, 3.0, 4.0])
    problem = correctness.unchecked_output(nan_at_finite, ref, "output")
    assert problem is not None and "non-finite value nan at flat index 1" in problem
    # NaN where the reference has NaN, and a float16 infinity for a value past its range.
    same_specials = torch.tensor([1.0, 2.0, math.nan, math.inf], dtype=torch.float16)
    assert correctness.unchecked_output(same_specials, ref, "output") is None
    # Another shape is the checker's to judge, but not NaN when the reference is all finite.
    flat = torch.tensor([[1.0, math.nan]])
    assert correctness.unchecked_output(flat, torch.ones(4, dtype=torch.float64), "o") is not None
    assert correctness.unchecked_output(flat, ref, "output") is None
    assert correctness.unchecked_output(torch.ones(3, dtype=torch.int64), ref, "output") is None


def test_no_output_far_larger_than_the_reference_reaches_a_checker() -> None:
    ref = torch.zeros(100, dtype=torch.float64)
    limit = correctness.CHECKED_ELEMENTS_FACTOR * 100 + correctness.CHECKED_ELEMENTS_SLACK
    assert correctness.unchecked_output(torch.zeros(limit), ref, "output") is None
    problem = correctness.unchecked_output(torch.zeros(limit + 1), ref, "output")
    assert problem is not None and "not an answer" in problem


def test_a_large_comparison_on_the_host_reuses_its_memory() -> None:
    # Compared in chunks of 2^24 elements, each float64 temporary was a fresh mapping whose
    # every page faulted in: about 200 bytes per element, more system time than arithmetic.
    import resource

    cand = torch.randn(1 << 23)
    ref = cand.to(torch.float64) + 1e-6
    tol = Tolerance(atol=1e-4, rtol=1e-4)
    assert correctness.compare(cand, ref, tol, 1e-3, "out").ok  # the allocator warms up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    assert correctness.compare(cand, ref, tol, 1e-3, "out").ok
    faulted_bytes = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) * 4096
    # 96 bytes an element (2^14: about 2; 2^24: about 220)
    assert faulted_bytes < 12 * ref.nbytes


@pytest.mark.gpu
def test_a_comparison_on_the_gpu_of_host_tensors_is_the_hosts() -> None:
    # Host tensors cross to the GPU in their own dtype and are widened there (PyTorch widens a
    # host tensor on the host when asked for both at once: twice the bytes for float32).
    gen = torch.Generator().manual_seed(3)
    ref = torch.randn(3000, generator=gen, dtype=torch.float64) * 100
    ref[7] = 1e6  # past float16's range: may come back as infinity
    cand = (ref + torch.randn(3000, generator=gen, dtype=torch.float64) * 0.05).to(torch.float16)
    cand[11] = math.nan
    tol = Tolerance(atol=0.05, rtol=0.01)
    on_host = correctness.compare(cand, ref.to(torch.float32), tol, 1e-2, "out")
    on_gpu = correctness.compare(cand, ref.to(torch.float32), tol, 1e-2, "out", "cuda:0")
    assert (on_gpu.ok, on_gpu.reason) == (on_host.ok, on_host.reason)
    assert on_gpu.max_abs_err == on_host.max_abs_err
    assert on_gpu.rel_l2_err == pytest.approx(on_host.rel_l2_err, rel=1e-12)
    assert correctness.unchecked_output(cand, ref.to(torch.float32), "out", "cuda:0") == (
        correctness.unchecked_output(cand, ref.to(torch.float32), "out")
    )


@pytest.mark.gpu
def test_a_large_comparison_on_the_gpu_gives_its_memory_back() -> None:
    # Kept by the judge's allocator, a comparison's temporaries (38 GiB at KernelBench's
    # softmax) ran the next judgment's reference worker out of memory.
    elements = correctness.RELEASE_BYTES // correctness.COMPARE_BYTES_PER_ELEMENT + 1
    ref = torch.linspace(-1.0, 1.0, elements, dtype=torch.float64, device="cuda:0")
    cand = ref.to(torch.float32)
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved("cuda:0")
    result = correctness.compare(cand, ref, correctness.ANY_FINITE, 1e-3, "out", "cuda:0")
    assert result.ok
    assert torch.cuda.max_memory_reserved("cuda:0") > before + correctness.RELEASE_BYTES // 2
    assert torch.cuda.memory_reserved("cuda:0") <= before


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bool, torch.int64])
def test_a_large_host_tensor_reaches_the_gpu_through_pinned_buffers_whole(
    dtype: torch.dtype,
) -> None:
    # Past the two buffers' size and not a multiple of it, so the buffers are each refilled
    # and the last chunk is short; a strided view is made contiguous first.
    elements = (2 * correctness.STAGE_BYTES + 12_345) // torch.empty((), dtype=dtype).element_size()
    gen = torch.Generator().manual_seed(5)
    host = (torch.randn(2 * elements + 2, generator=gen) * 50).to(dtype)[::2].reshape(-1, 1)
    moved = correctness.to_device(host, "cuda:0")
    assert moved.device.type == "cuda" and moved.dtype == dtype and moved.shape == host.shape
    assert torch.equal(moved.cpu(), host)


def test_a_comparison_says_how_long_moving_its_tensors_took() -> None:
    ref = torch.linspace(-1.0, 1.0, 1 << 16, dtype=torch.float64)
    chunked = correctness.compare(
        ref.to(torch.float32), ref, correctness.ANY_FINITE, 1e-3, "out", chunk_elements=1 << 12
    )
    assert chunked.ok
    # Sixteen chunks, each widened (float32 to float64): time, counted apart from the arithmetic.
    assert chunked.moved_s > 0.0
