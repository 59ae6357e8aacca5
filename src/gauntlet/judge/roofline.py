"""Speed of light: device peaks, measured once and cached, and the floor time of a config.

The peaks are measured, not taken from datasheets: a large device-to-device copy (bytes read
plus written over time), a sum (reads only) and a fill (writes only), the best of the three
being the memory ceiling, and large matrix products per dtype through PyTorch. Measuring runs in a
child process (`python -m gauntlet.judge.roofline`), so the orchestrator never holds a GPU
context; the result is cached per GPU model and library versions.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from gauntlet import devices, expr, process, settings
from gauntlet.errors import JudgeError
from gauntlet.task import Config, Task

logger = logging.getLogger(__name__)


class DevicePeaks(BaseModel):
    """Measured ceilings of one GPU."""

    model_config = ConfigDict(frozen=True)

    device_name: str
    copy_bytes_per_s: float
    """Device-to-device copy bandwidth, counting bytes read and written."""
    read_bytes_per_s: float
    """Bandwidth of a sum over a large tensor: reads only."""
    write_bytes_per_s: float
    """Bandwidth of filling a large tensor: writes only."""
    matrix_flops_per_s: dict[str, float]
    """Dense matrix-product rate per dtype (float32 without TF32: the vector-unit rate)."""
    torch_version: str
    measured_at: str

    @property
    def bytes_per_s(self) -> float:
        """The memory ceiling: the best of copy, read-only and write-only traffic.

        A copy alone is no ceiling: on an H100 read-heavy expert kernels ran at 101-103 % of
        the copy's rate, within 8 % of the floor that rejects a time as impossible.
        """
        return max(self.copy_bytes_per_s, self.read_bytes_per_s, self.write_bytes_per_s)


def sol_seconds(task: Task, config: Config, peaks: DevicePeaks) -> float:
    """The floor time of a config: the larger of its flops over the rate and bytes over BW."""
    variables = config.variables()
    flops = float(expr.evaluate(task.spec.roofline.flops, variables))
    moved = float(expr.evaluate(task.spec.roofline.bytes, variables))
    dtype = config.dtype if task.spec.roofline.matrix else "float32"
    rate = peaks.matrix_flops_per_s.get(dtype) or peaks.matrix_flops_per_s["float32"]
    return max(flops / rate, moved / peaks.bytes_per_s)


def _cache_path(device: str) -> Path:
    return settings.CACHE_DIR / "peaks" / f"{device.replace(':', '_')}.json"


def device_peaks(device: str, timeout_s: float = 300) -> DevicePeaks:
    """The peaks of a GPU, measured on first use and cached; raises JudgeError if unmeasurable."""
    path = _cache_path(device)
    if path.is_file():
        try:
            return DevicePeaks.model_validate_json(path.read_text())
        except ValidationError:
            logger.warning("ignoring an unreadable peaks cache %s", path)
    index = str(devices.index_of(device))
    finished = process.run(
        [sys.executable, "-m", "gauntlet.judge.roofline", index], timeout_s=timeout_s
    )
    if finished.returncode != 0 or finished.timed_out:
        raise JudgeError(f"measuring the peaks of {device} failed: {finished.stderr[-2000:]}")
    try:
        peaks = DevicePeaks.model_validate_json(finished.stdout.strip().splitlines()[-1])
    except (ValidationError, IndexError) as err:
        raise JudgeError(f"the peak measurement of {device} printed no result: {err}") from err
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(peaks.model_dump_json(indent=2))
    return peaks


def measure(index: int) -> DevicePeaks:
    """Measure copy bandwidth and matrix rates on GPU `index` (runs in the child process)."""
    from datetime import UTC, datetime

    import torch

    device = torch.device("cuda", index)
    torch.cuda.set_device(device)

    def best_ms(fn: object, repeats: int = 10) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            fn()  # type: ignore[operator]
        times = []
        for _ in range(repeats):
            start.record()
            fn()  # type: ignore[operator]
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return float(sorted(times)[len(times) // 2])

    size = 1 << 30
    src = torch.empty(size // 4, dtype=torch.float32, device=device).normal_()
    dst = torch.empty_like(src)
    copy_ms = best_ms(lambda: dst.copy_(src))
    total = torch.empty((), dtype=torch.float32, device=device)
    read_ms = best_ms(lambda: torch.sum(src, dim=0, out=total))
    write_ms = best_ms(lambda: dst.fill_(1.0))
    rates: dict[str, float] = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    for name in ("bfloat16", "float16", "float32"):
        n = 8192 if name != "float32" else 4096
        dtype = getattr(torch, name)
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        ms = best_ms(lambda a=a, b=b: torch.matmul(a, b))
        rates[name] = 2 * n**3 / (ms / 1e3)
    return DevicePeaks(
        device_name=torch.cuda.get_device_name(device),
        copy_bytes_per_s=2 * size / (copy_ms / 1e3),
        read_bytes_per_s=size / (read_ms / 1e3),
        write_bytes_per_s=size / (write_ms / 1e3),
        matrix_flops_per_s=rates,
        torch_version=torch.__version__,
        measured_at=datetime.now(UTC).isoformat(),
    )


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 0).model_dump()))
