"""The judge on a real GPU: timing, the same verdicts as on the CPU device, exploit defenses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gauntlet import confine, settings
from gauntlet.judge import devicelock, judge, kernel_cache, python_backend, roofline
from gauntlet.judge.pipeline import digest
from gauntlet.judge.python_backend import PythonBackend
from gauntlet.task import Config, load_task
from tests.support.fixtures import SCALE_ADD, VERDICT_TIME_CAP_S, with_spec

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
    # The sampled outputs' seconds are split by the way they went, and those ways into their
    # steps (`file.make`...), counted once: the go-ahead's wait is what is left, never less.
    phases = verdict.phases_s
    ways = [k for k in phases if k.startswith("timing.pairs.sample.") and k.count(".") == 3]
    assert ways and phases["timing.pairs.sample"] == pytest.approx(
        sum(phases[k] for k in ways), rel=1e-6
    )
    assert phases["timing.pairs.report"] >= 0.0


@pytest.mark.parametrize("deferred", [True, False], ids=["deferred", "at_once"])
def test_the_timed_outputs_are_checked_once_the_gpu_is_shared_again(
    deferred: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past `DEFERRED_SAMPLE_BYTES` a config's samples are checked at once, the GPU held alone.
    if not deferred:
        monkeypatch.setattr(python_backend, "DEFERRED_SAMPLE_BYTES", 0)
    seen: list[tuple[str | None, bool]] = []
    check = python_backend._CandidateSession._check_timing

    def watched(
        session: python_backend._CandidateSession, state: object, followed: object
    ) -> object:
        hold = session.ev.hold
        assert hold is not None
        seen.append((hold.mode, session.worker.handle._finished is not None))
        return check(session, state, followed)  # type: ignore[arg-type]

    monkeypatch.setattr(python_backend._CandidateSession, "_check_timing", watched)
    # The GPU's peaks, which the checks need, are measured (or read) before it is shared.
    order: list[str] = []
    peaks, share = roofline.device_peaks, devicelock.Hold.share
    monkeypatch.setattr(
        roofline, "device_peaks", lambda *a, **k: order.append("peaks") or peaks(*a, **k)
    )
    monkeypatch.setattr(devicelock.Hold, "share", lambda hold: order.append("share") or share(hold))
    task = SCALE_ADD()
    verdict = judge(task, task.root / "expert", device="cuda:0", seed=3)
    assert verdict.status == "pass", verdict.reason
    assert len(seen) == sum(c.timing is not None for c in verdict.configs) > 1
    # Deferred: every check after the candidate was reaped and the GPU shared again.
    want = ("shared", True) if deferred else ("exclusive", False)
    assert set(seen) == {want}
    assert order[0] == "peaks" and order.count("share") == (1 if deferred else 0)


@pytest.mark.parametrize(
    "case", ["correct", "wrong_result", "nan_output", "mutates_input", "overfit", "segfault"]
)
def test_gpu_verdict_equals_cpu_verdict(case: str, tmp_path: Path) -> None:
    task = SCALE_ADD()
    shutil.copyfile(CORPUS / f"{case}.py", tmp_path / "kernel.py")
    on_cpu = judge(task, tmp_path, device="cpu", seed=5)
    on_gpu = judge(task, tmp_path, device="cuda:0", seed=5, time_cap_s=VERDICT_TIME_CAP_S)
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


#: Inputs drawn on the judged device, as the shipped tasks' are (`taskkit.draw`): the fixture's
#: own are drawn on the host, which a GPU candidate's host memory cap counts.
DEVICE_INPUTS = """
import torch


def make_inputs(config, seed, distribution, device):
    gen = torch.Generator(device=device).manual_seed(seed)
    n = config["n"]
    if distribution == "uniform":
        x, y = (torch.rand(n, generator=gen, device=device) * 2 - 1 for _ in range(2))
    else:
        x, y = (torch.randn(n, generator=gen, device=device) for _ in range(2))
    return {"x": x, "y": y, "alpha": 1.5}
"""

#: The expert's kernel, which first makes sure the premise holds: its host memory is capped.
CAPPED_EXPERT = """
import resource

import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def scale_add(x, y, alpha):
    if resource.getrlimit(resource.RLIMIT_DATA)[1] == resource.RLIM_INFINITY:
        raise RuntimeError("the candidate has no host memory cap")
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out
"""


def test_an_output_larger_than_the_host_memory_cap_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A GPU candidate's data segment is capped at the task's memory_limit_mb past its imports
    # (`worker.memory_cap`). Its output leaves it through pinned memory and the channel
    # (inline, past its memory files' size bound), neither counted: an output larger than the
    # whole cap still passes. 1.25 GiB of output against a 1 GiB cap (about 19 GiB of GPU
    # memory in all: `footprint.py`).
    root = tmp_path / "task"
    shutil.copytree(SCALE_ADD().root, root)
    (root / "inputs.py").write_text(DEVICE_INPUTS)
    task = load_task(root)
    large = Config(name="C1", params={"n": 5 << 26, "dtype": "float32"})
    configs = task.spec.configs.model_copy(update={"visible": [large]})
    task = with_spec(task, memory_limit_mb=1024, configs=configs)
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "kernel.py").write_text(CAPPED_EXPERT)
    # The static guards would refuse `resource`; the check is the test's, not the kernel's.
    monkeypatch.setattr(PythonBackend, "guard", lambda self, task, submission: None)
    verdict = judge(
        task, submission, device="cuda:0", seed=3, configs="visible", time_cap_s=VERDICT_TIME_CAP_S
    )
    assert verdict.status == "pass", verdict.reason
