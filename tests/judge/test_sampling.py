"""Which elements of a sampled timed call's outputs are checked (`gauntlet/judge/sampling.py`)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from gauntlet.judge import sampling


def test_one_position_lies_in_each_slice_and_the_same_seed_finds_the_same_ones() -> None:
    numel, count = 1_000_003, 4096
    chosen = sampling.positions(7, 0, numel, count)
    assert chosen is not None and chosen.dtype == torch.int64 and chosen.shape == (count,)
    # Slice k is [k, k + 1) x numel / count of the flat output read as a line.
    k = torch.arange(count, dtype=torch.float64)
    low, high = (k * numel / count).floor().long(), ((k + 1) * numel / count).ceil().long()
    assert bool(((chosen >= low) & (chosen < high)).all())
    assert int(chosen.min()) >= 0 and int(chosen.max()) < numel
    assert torch.equal(chosen, sampling.positions(7, 0, numel, count))
    # Another seed, or another output of the same call, draws other positions.
    for other in (sampling.positions(8, 0, numel, count), sampling.positions(7, 1, numel, count)):
        assert other is not None and not torch.equal(chosen, other)


def test_an_output_no_larger_than_the_count_is_checked_whole() -> None:
    assert sampling.positions(7, 0, 4096, 4096) is None
    output = torch.arange(12.0).reshape(3, 4)
    assert torch.equal(sampling.gather(output, 7, 0, "cpu", count=12), output.reshape(-1))


def test_gather_returns_the_chosen_elements_of_the_flat_output() -> None:
    output = torch.arange(6000.0).reshape(60, 100).t()  # not contiguous
    chosen = sampling.positions(3, 2, 6000, 512)
    assert chosen is not None
    assert torch.equal(sampling.gather(output, 3, 2, "cpu", count=512), output.reshape(-1)[chosen])


def test_wrong_elements_escape_no_more_often_than_independent_draws_allow() -> None:
    # A kernel wrong in a fraction f of its elements (a contiguous block, or every m-th one)
    # escapes a check with probability at most (1 - f)^count: over 400 seeds, a pattern with
    # f = 1 / count escapes at most about e^-1 of the time, and with f = 8 / count never.
    numel, count = 1 << 16, 1 << 10
    for wrong_fraction, at_most in ((1 / count, math.exp(-1) + 0.1), (8 / count, 0.0)):
        width = round(numel * wrong_fraction)
        block = torch.zeros(numel, dtype=torch.bool)
        block[numel // 3 : numel // 3 + width] = True
        strided = torch.zeros(numel, dtype=torch.bool)
        strided[:: numel // width] = True
        for wrong in (block, strided):
            escaped = 0
            for seed in range(400):
                chosen = sampling.positions(seed, 0, numel, count)
                assert chosen is not None
                escaped += not bool(wrong[chosen].any())
            assert escaped / 400 <= at_most, (wrong_fraction, escaped)


@pytest.mark.gpu
def test_on_a_gpu_two_processes_draw_the_same_positions() -> None:
    # The candidate's worker and the reference worker draw on the judged GPU, each with a
    # generator of its own: the same seed must give the same positions in both.
    code = (
        "from gauntlet.judge import sampling\n"
        "p = sampling.positions(11, 1, 50_000_000, device='cuda:0')\n"
        "print(int(p.sum()), int((p * p % 1_000_003).sum()))"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mine = sampling.positions(11, 1, 50_000_000, device="cuda:0")
    assert mine is not None and mine.device.type == "cuda"
    assert other.stdout.split() == [str(int(mine.sum())), str(int((mine * mine % 1_000_003).sum()))]
