"""KernelBench's ModelNew contract on a real GPU: unmodified KernelBench-format files, timed.

The fixture problem 1_Linear_Scale imported under `--contract modelnew` (torch2cuda and
torch2triton); its CUDA (`load_inline`) and Triton ModelNew files pass with timings, and the
strict state-dict exploit crashes on the GPU as on the CPU. The dozen real KernelBench problems
beside KernelBench's own eval are `scripts/kb_compat_evidence.py` (docs/importers.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gauntlet.importers import kbprobe
from gauntlet.importers.kbsource import module_text, parse_problem
from gauntlet.importers.kbwrite import MODELNEW_FILE, TaskPlan, write_task
from gauntlet.judge import judge
from gauntlet.task import Task, load_task
from tests.support.fixtures import VERDICT_TIME_CAP_S

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).parents[1]
PROBLEM = TESTS / "importers/kernelbench/KernelBench/level1/1_Linear_Scale.py"
KERNELS = {
    "torch2cuda": TESTS / "importers/kernelbench/modelnew/linear_scale_cuda.py",
    "torch2triton": TESTS / "importers/kernelbench/modelnew/linear_scale.py",
}
EXPLOIT = TESTS / "exploits/corpus_modelnew/own_weights_other_names.py"


def _task(track: str, folder: Path) -> Task:
    source = parse_problem(PROBLEM.read_text(encoding="utf-8"), "level1/1_Linear_Scale.py")
    analysis = kbprobe.analyze(
        kbprobe.AnalyzeRequest(
            module_text=module_text(source), constants=source.constants,
            forward_args=source.forward_args, max_bytes=1 << 20, max_flops=2e7,
        )
    )  # fmt: skip
    plan = TaskPlan(task_id="kb/l1/linear_scale", problem="level1/1_Linear_Scale.py", level=1,
                    track=track, source=source, analysis=analysis,
                    distributions=["normal", "uniform"], contract="modelnew")  # fmt: skip
    write_task(plan, folder)
    return load_task(folder)


def _submit(file: Path, tmp_path: Path) -> Path:
    submission = tmp_path / "submission"
    submission.mkdir()
    shutil.copy(file, submission / MODELNEW_FILE)
    return submission


@pytest.mark.parametrize("track", sorted(KERNELS))
def test_a_kernelbench_modelnew_passes_and_is_timed(track: str, tmp_path: Path) -> None:
    task = _task(track, tmp_path / "task")
    submission = _submit(KERNELS[track], tmp_path)
    verdict = judge(
        task, submission, device="cuda:0", seed=3, workdir=tmp_path, time_cap_s=VERDICT_TIME_CAP_S
    )
    assert verdict.status == "pass", verdict.reason
    assert verdict.timed and verdict.speedup is not None


def test_the_strict_state_exploit_crashes_on_the_gpu(tmp_path: Path) -> None:
    task = _task("torch2cuda", tmp_path / "task")
    verdict = judge(task, _submit(EXPLOIT, tmp_path), device="cuda:0", seed=3, workdir=tmp_path)
    assert verdict.status == "crash" and "Missing key(s) in state_dict" in (verdict.reason or "")
