"""The speed-of-light floor of a config from a device's measured peaks (judge/roofline.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gauntlet import settings
from gauntlet.errors import JudgeError
from gauntlet.judge.roofline import DevicePeaks, device_peaks, sol_seconds
from gauntlet.task import load_task

FIXTURE = Path(__file__).parents[1] / "support" / "tasks" / "triton2triton" / "scale_add"


def _peaks(copy: float, read: float, write: float) -> DevicePeaks:
    return DevicePeaks(
        device_name="test GPU",
        copy_bytes_per_s=copy,
        read_bytes_per_s=read,
        write_bytes_per_s=write,
        matrix_flops_per_s={"float32": 1e12},
        torch_version="test",
        measured_at="2026-11-24T00:00:00+00:00",
    )


@pytest.mark.parametrize(
    ("copy", "read", "write"), [(3e12, 2e12, 1e12), (2e12, 3e12, 1e12), (1e12, 2e12, 3e12)]
)
def test_the_memory_floor_takes_the_best_of_copy_read_and_write(
    copy: float, read: float, write: float
) -> None:
    task = load_task(FIXTURE)
    config = task.visible_configs[0]  # n = 1000 float32: 12000 bytes, 2000 flops
    assert sol_seconds(task, config, _peaks(copy, read, write)) == pytest.approx(12000 / 3e12)


@pytest.mark.skipif(torch.cuda.is_available(), reason="measures instead where a GPU is here")
def test_a_peaks_cache_of_an_older_judge_is_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written before read and write bandwidths were measured: taken as current, its copy rate
    # would be the floor. It is measured again, which with no GPU here fails loudly.
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path)
    (tmp_path / "peaks").mkdir()
    (tmp_path / "peaks" / "cuda_0.json").write_text(
        '{"device_name": "H100", "copy_bytes_per_s": 3e12, "matrix_flops_per_s": {},'
        ' "torch_version": "2.11", "measured_at": "2026-11-22"}'
    )
    with pytest.raises(JudgeError, match="measuring the peaks of cuda:0 failed"):
        device_peaks("cuda:0", timeout_s=120)
