"""What a judgment holds of its references on the host, kept whole or streamed, on the CPU.

    python scripts/bench_references.py [--n 16777216] [--trials 2] [--budget-mib 192]

Judges the fixture task `scale_add`'s expert (tests/support/tasks, Triton's interpreter, no
baseline) on one config of `--n` float32 elements (a float64 reference of 8 n bytes a trial;
`--trials` times its two distributions), untimed, with real workers, twice, each in a process of
its own: `whole` (no budget to speak of: every reference held until compared, as before) and
`streamed` (`GAUNTLET_REFERENCE_BYTES` of `--budget-mib`, under the config's whole: each trial's
reference computed when its output is compared, then let go). Prints, per way, the verdict, the
judge process's peak resident memory (its own, not the workers'), its wall seconds, and the
phases that streaming moves: `reference`, `compare` and `reference.streamed`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK = Path(__file__).resolve().parents[1] / "tests" / "support" / "tasks" / "triton2triton"


def judge_once(n: int, trials: int) -> dict[str, object]:
    """One judgment in this process (its budget from the environment); its figures."""
    from gauntlet.judge.backend import BuildResult, EvalRequest
    from gauntlet.judge.pipeline import digest
    from gauntlet.judge.python_backend import _Evaluation
    from gauntlet.task import Config, load_task

    task = load_task(TASK / "scale_add")
    task = task.model_copy(
        update={"spec": task.spec.model_copy(update={"baseline": None, "trials": trials})}
    )
    expert = task.root / "expert"
    with tempfile.TemporaryDirectory() as workdir:
        request = EvalRequest(
            task=task,
            build=BuildResult(True, artifact=expert),
            configs=[Config(name="big", params={"n": n, "dtype": "float32"})],
            device="cpu",
            seed=7,
            mode="final",
            timed=False,
            workdir=Path(workdir),
            submission_digest=digest({"kernel.py": (expert / "kernel.py").read_text()}),
        )
        started = time.monotonic()
        result = _Evaluation(request).run()
        wall_s = time.monotonic() - started
    phases = result.phases_s
    return {
        "correct": [c.correct for c in result.results],
        "streamed": result.environment.get("references_streamed", ""),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "wall_s": round(wall_s, 2),
        **{k: round(phases.get(k, 0.0), 2) for k in ("reference", "compare", "reference.streamed")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--budget-mib", type=int, default=192)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(judge_once(args.n, args.trials)))
        return
    whole_mib = 8 * args.n * 2 * args.trials / (1 << 20)
    print(f"n={args.n}: {8 * args.n / (1 << 20):.0f} MiB a trial, {whole_mib:.0f} MiB whole")
    for way, budget in (("whole", 1 << 40), ("streamed", args.budget_mib << 20)):
        env = {**os.environ, "GAUNTLET_REFERENCE_BYTES": str(budget)}
        command = [sys.executable, __file__, "--child", f"--n={args.n}", f"--trials={args.trials}"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)  # noqa: TID251 - a benchmark's child
        if done.returncode:
            print(f"{way}: failed\n{done.stderr[-3000:]}")
            continue
        print(f"{way}: {done.stdout.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
