"""Builders of small run directories for scoring and report tests.

`RunBuilder` writes a real run directory through `RunStore`, so the scorer and the report read
exactly what the runner writes. Verdicts are synthesized consistently with their status:
a `pass` is correct everywhere, an `overfit` is correct on the visible configs and wrong on a
hidden one, an `incorrect` is wrong on a visible config, and the other statuses stop before
correctness.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gauntlet.agents.base import Budget, Usage
from gauntlet.agents.transcript import MessageAdded
from gauntlet.judge.verdict import ConfigResult, Gate, Timing, Verdict
from gauntlet.score import Bootstrap
from gauntlet.store import AttemptRecord, RunInfo, RunStore, attempt_id_for
from gauntlet.task import Config

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

#: Fewer resamples than the default keep tests fast; point estimates do not depend on them.
FAST_BOOTSTRAP = Bootstrap(resamples=2_000, seed=0)

KERNEL_PY = """import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
"""


def configs(visible: int, hidden: int) -> list[Config]:
    """`visible` visible configs C1.. and `hidden` hidden configs H1.."""
    shown = [Config(name=f"C{i + 1}", params={"n": 64 * (i + 1)}) for i in range(visible)]
    held = [
        Config(name=f"H{i + 1}", params={"n": 100 + 37 * i}, hidden=True) for i in range(hidden)
    ]
    return shown + held


def make_verdict(
    task_id: str,
    status: str = "pass",
    *,
    speedup: float | None = None,
    hidden_speedup: float | None = None,
    sol_fraction: float | None = None,
    visible: int = 3,
    hidden: int = 2,
    visible_correct: int | None = None,
    device: str = "cuda:0",
    timed: bool | None = None,
) -> Verdict:
    """A verdict consistent with `status`.

    Args:
        task_id: The task.
        status: The verdict's status.
        speedup: Geometric-mean visible speedup; each visible config gets this speedup.
        hidden_speedup: Geometric-mean hidden speedup.
        sol_fraction: Fraction of speed-of-light over the visible configs.
        visible: Visible configs.
        hidden: Hidden configs.
        visible_correct: Visible configs correct (defaults from the status).
        device: Device of the verdict.
        timed: Whether times were taken (defaults to `speedup is not None`).
    """
    if visible_correct is None:
        visible_correct = {"pass": visible, "overfit": visible, "incorrect": visible - 1}.get(
            status, 0
        )
    checked_visible = status in ("pass", "overfit", "incorrect") or visible_correct > 0
    timed = speedup is not None if timed is None else timed
    results: list[ConfigResult] = []
    for index, config in enumerate(configs(visible, hidden)):
        correct: bool | None
        if not config.hidden:
            correct = (index < visible_correct) if checked_visible else None
        elif status == "pass":
            correct = True
        elif status == "overfit":
            correct = index != visible  # the first hidden config is wrong
        else:
            correct = None
        timing = None
        if timed and correct:
            config_speedup = hidden_speedup if config.hidden else speedup
            if config_speedup is not None:
                candidate = 100.0 / config_speedup
                timing = Timing(
                    unit="us",
                    baseline=100.0,
                    candidate=candidate,
                    speedup=config_speedup,
                    count=20,
                    sol=None if sol_fraction is None else sol_fraction * candidate,
                    sol_fraction=sol_fraction,
                )
        results.append(
            ConfigResult(
                config=config,
                correct=correct,
                reason="" if correct in (True, None) else "element 7: expected 1.5, found 0.0",
                max_abs_err=None if correct is None else (1e-6 if correct else 1.5),
                trials=0 if correct is None else 3,
                timing=timing,
            )
        )
    reason = {
        "pass": "",
        "overfit": "hidden config H1 wrong: element 7: expected 1.5, found 0.0",
        "incorrect": f"visible config C{visible_correct + 1} wrong",
        "build_error": "kernel.py:3: SyntaxError: invalid syntax",
        "timeout": "config C1 ran past 60 s",
        "crash": "worker died with SIGSEGV",
        "rejected": "guard: the submission calls torch.softmax",
        "no_submission": "kernel.py is missing",
    }[status]
    gates = [Gate(name="contract", state="passed"), Gate(name="build", state="passed")]
    return Verdict(
        task_id=task_id,
        device=device,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        gates=gates,
        configs=results,
        timed=timed,
        timing_note="" if timed else "device 'cpu' is not timed: correctness only",
        speedup=speedup if timed else None,
        hidden_speedup=hidden_speedup if timed else None,
        sol_fraction=sol_fraction if timed else None,
        stdout="hello from the kernel\n",
        duration_s=1.25,
    )


class RunBuilder:
    """Collects attempts, then writes a run directory."""

    def __init__(
        self,
        root: Path,
        *,
        run_id: str = "run-test",
        device: str = "cuda:0",
        task_ids: list[str] | None = None,
    ) -> None:
        self.root = Path(root)
        self.run_id = run_id
        self.device = device
        self.task_ids = task_ids
        self.records: list[AttemptRecord] = []
        self.files: dict[str, dict[str, str]] = {}

    def add(
        self,
        task_id: str,
        status: str = "pass",
        *,
        agent: str = "scripted",
        model: str | None = None,
        index: int = 0,
        track: str = "triton2triton",
        level: int = 1,
        platform: str | None = None,
        speedup: float | None = None,
        hidden_speedup: float | None = None,
        sol_fraction: float | None = None,
        visible: int = 3,
        hidden: int = 2,
        visible_correct: int | None = None,
        timed: bool | None = None,
        device: str | None = None,
        usage: Usage | None = None,
        verdict: bool = True,
        submission: dict[str, str] | None = None,
        transcript: list[dict[str, Any]] | None = None,
    ) -> AttemptRecord:
        """Record one attempt; see `make_verdict` for the verdict arguments.

        `transcript` lists the JSON lines of `transcript.jsonl`; by default two toolcall
        messages (user, assistant).
        """
        attempt_id = attempt_id_for(task_id, agent, index)
        made = (
            make_verdict(
                task_id,
                status,
                speedup=speedup,
                hidden_speedup=hidden_speedup,
                sol_fraction=sol_fraction,
                visible=visible,
                hidden=hidden,
                visible_correct=visible_correct,
                device=device or self.device,
                timed=timed,
            )
            if verdict and status != "agent_error"
            else None
        )
        files = {"kernel.py": KERNEL_PY} if submission is None else submission
        record = AttemptRecord(
            run_id=self.run_id,
            attempt_id=attempt_id,
            task_id=task_id,
            track=track,
            level=level,
            platform=platform,
            agent=agent,
            model=model,
            index=index,
            status=status,  # type: ignore[arg-type]
            reason=made.reason if made else "the agent exited with code 1",
            verdict=made,
            usage=usage or Usage(wall_s=60.0, turns=4, tokens_in=1000, tokens_out=500),
            agent_status="finished",
            started_at=T0 + timedelta(minutes=len(self.records)),
            finished_at=T0 + timedelta(minutes=len(self.records) + 1),
            submission_files=sorted(files),
        )
        self.records.append(record)
        self.files[attempt_id] = files
        if transcript is None:
            # What the toolcall agent writes: typed events, one per line.
            text = "".join(
                MessageAdded(time=T0, turn=turn, message=message).model_dump_json() + "\n"
                for turn, message in enumerate(
                    [
                        {"role": "user", "content": f"Make {task_id} faster."},
                        {"role": "assistant", "content": "I will tile the loop."},
                    ]
                )
            )
        else:
            text = "".join(json.dumps(line) + "\n" for line in transcript)
        self.files[attempt_id + "/transcript"] = {"transcript.jsonl": text}
        return record

    def write(self) -> Path:
        """Write the run directory and return its path."""
        task_ids = self.task_ids or list(dict.fromkeys(r.task_id for r in self.records))
        store = RunStore(self.root)
        store.create(
            RunInfo(
                run_id=self.run_id,
                created_at=T0,
                suite="test",
                task_ids=task_ids,
                agents=list(dict.fromkeys(r.agent for r in self.records)),
                device=self.device,
                budget=Budget(),
                seed_hash="0" * 64,
            )
        )
        for record in self.records:
            store.append(record)
            folder = store.attempt_dir(record.attempt_id)
            for name, text in self.files[record.attempt_id].items():
                path = folder / "submission" / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            for name, text in self.files[record.attempt_id + "/transcript"].items():
                (folder / name).write_text(text)
        return self.root


def geomean(values: list[float]) -> float:
    """Geometric mean, computed independently of the scorer."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


#: (task_id, status, extra arguments of `RunBuilder.add`) of the sample run's first agent.
SAMPLE_PLAN: list[tuple[str, str, dict[str, Any]]] = [
    ("triton/softmax", "pass", {"speedup": 2.5, "hidden_speedup": 2.0, "sol_fraction": 0.6}),
    ("triton/matmul", "pass", {"speedup": 1.2, "hidden_speedup": 1.3, "sol_fraction": 0.4}),
    ("triton/layernorm", "overfit", {"level": 2}),
    ("cuda/gemv", "incorrect", {"track": "cuda2cuda", "level": 2}),
    ("cuda/scan", "build_error", {"track": "cuda2cuda", "level": 3}),
    ("torch/attention", "timeout", {"track": "torch2triton", "level": 3}),
    ("torch/conv", "pass", {"track": "torch2triton", "speedup": 0.8, "sol_fraction": 0.2}),
    (
        "accel/npu-gemm",
        "incorrect",
        {"track": "accel", "platform": "npu", "visible": 5, "visible_correct": 3},
    ),
]


def sample_run(root: Path) -> Path:
    """A varied run for report tests: most statuses, two agents, an accel task, three tracks.

    The second agent (`toolcall@gpt-x`) is 10% faster wherever the first passes, and also
    passes `cuda/scan` (1.7x) where the first has a build error.
    """
    builder = RunBuilder(root, run_id="run-sample")
    for number, (agent, model) in enumerate((("scripted", "model-a"), ("toolcall", "gpt-x"))):
        usage = Usage(
            wall_s=30.0 + 10 * number,
            turns=5 + number,
            tokens_in=2000,
            tokens_out=800,
            cost_usd=0.05 * (number + 1),
        )
        for task_id, status, extra in SAMPLE_PLAN:
            kwargs = dict(extra)
            if number == 1 and status == "pass":
                kwargs["speedup"] = kwargs["speedup"] * 1.1
            if number == 1 and task_id == "cuda/scan":
                status, kwargs["speedup"] = "pass", 1.7
            builder.add(task_id, status, agent=agent, model=model, usage=usage, **kwargs)
    return builder.write()
