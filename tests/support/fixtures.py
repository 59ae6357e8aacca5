"""Fixture tasks for the judge's own tests (kept out of the shipped suite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gauntlet.judge.backend import BuildResult, EvalRequest
from gauntlet.judge.pipeline import digest
from gauntlet.judge.timing import FEEDBACK_TIME_CAP_S
from gauntlet.task import Task, load_task

TASKS = Path(__file__).parent / "tasks"

#: Seconds of timing per config in GPU tests whose point is a verdict, not a speedup (the
#: exploit cases, the honest kernels beside them, the CPU-against-GPU verdicts, the KernelBench
#: ModelNew and CUDA experts that must pass timed): the cap of the judge's feedback mode, where
#: every defense holds as in a final judgment. Each config still runs its first `min_pairs`
#: pairs (the secret sampled calls are among them) and its cross-checks; only the pairs added
#: towards a 1% confidence interval are cut, which at the default 10 s cap held the one GPU's
#: lock for seconds a config while the tier's other judgments waited.
VERDICT_TIME_CAP_S = FEEDBACK_TIME_CAP_S


def SCALE_ADD() -> Task:  # noqa: N802 - reads as the constant it stands for
    """`triton2triton/scale_add`: out = alpha * x + y, tiny and fast under the interpreter."""
    return load_task(TASKS / "triton2triton" / "scale_add")


def with_spec(task: Task, **changes: Any) -> Task:
    """The task with some spec fields changed (e.g. a short timeout for a hang test)."""
    return task.model_copy(update={"spec": task.spec.model_copy(update=changes)})


def eval_request(
    task: Task, artifact: Path, workdir: Path, *, device: str = "cpu", seed: int = 1
) -> EvalRequest:
    """An evaluation of the task's visible configs from built files as they are (timed on a
    GPU); only built, so a test can inspect it without starting a worker."""
    return EvalRequest(
        task=task,
        build=BuildResult(True, artifact=artifact),
        configs=task.visible_configs,
        device=device,
        seed=seed,
        mode="final",
        timed=device.startswith("cuda"),
        workdir=workdir,
        submission_digest=digest(
            {
                n: (artifact / n).read_text()
                for n in task.spec.submission.files
                if (artifact / n).is_file()
            }
        ),
    )


def cpu_request(task: Task, submission_dir: Path, workdir: Path) -> EvalRequest:
    """An untimed evaluation of the task's visible configs on the CPU, built files as they are."""
    return eval_request(task, submission_dir, workdir)
