"""`autotune`: the agent with no model. It searches the knobs a task declares and submits the best.

A task's `[autotune]` table names a template (its expert or baseline file) and the values of
some of its constants (`gauntlet.knobs`). The agent renders points of that space, judges each
through a warm `gauntlet.Judge` in `feedback` mode (the visible configs only, with the attempt's
own seed: never the hidden configs nor the run's secret seed), and writes the fastest point
that passed into the workspace. The search is `autotune_search`: the whole grid when it fits the
judge-call budget, else a seeded model-based search.

Options (`autotune:calls=8,seconds=120,time_cap=2`): `calls`, judgments per task (the
template's own point included); `seconds`, wall seconds of searching (never past the attempt's
wall budget); `time_cap`, seconds of GPU timing per config in a search judgment, which as a
feedback judgment times at most `timing.FEEDBACK_TIME_CAP_S` (0.25 s) a config anyway: only a
lower cap changes it (a rougher ranking for a cheaper search; the final verdict is timed as
always); `judges`, points judged at once through the one warm judge (default
`base.search_judgments`: `GAUNTLET_JUDGMENTS_PER_GPU` on a GPU, where they share it and each is
timed alone under its lock; 2 on a simulator). Each batch of `judges` points is proposed before
any of them is judged (`Search.propose` counts the ones pending as tried, so a grid goes in the
same order and the random start draws the same points as one at a time) and recorded in the
order proposed, whichever judgment ends first; the wall budget starts a batch only where the
last batch's time still fits.
Where there is nothing to search the agent makes no judge call and says so in its transcript:
a task that declares no knobs gets the baseline, and on a device whose verdicts carry no times
(`cpu`, Triton's interpreter) no point can be ranked above another, so the template's own point
is submitted unjudged (the runner's final judgment decides it, as it decides every submission).
A task whose judged points all fail gets the baseline.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from gauntlet.agents.autotune_search import KnobSpace, Point, Search, SearchKind
from gauntlet.agents.base import (
    AgentContext,
    AgentResult,
    Usage,
    agent,
    search_judgments,
    search_spares,
)
from gauntlet.agents.evolve_log import GenerationRow
from gauntlet.agents.options import number, parse_options
from gauntlet.errors import JudgeError
from gauntlet.judge.pipeline import device_is_timed
from gauntlet.judge.service import Judge
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S, FEEDBACK_TIME_CAP_S
from gauntlet.judge.verdict import Verdict
from gauntlet.knobs import Value, apply, template_point
from gauntlet.task import AutotuneSpec, Task

logger = logging.getLogger(__name__)

DEFAULT_CALLS = 8
OPTIONS = {
    "calls": f"judgments per task, the template's point included (default {DEFAULT_CALLS})",
    "seconds": "wall seconds of searching per task (default: the attempt's wall budget)",
    "time_cap": f"seconds of GPU timing per config of a search judgment, at most "
    f"{FEEDBACK_TIME_CAP_S:g} in feedback mode whatever it says (default {DEFAULT_TIME_CAP_S:g})",
    "judges": "points judged at once (default: GAUNTLET_JUDGMENTS_PER_GPU on a GPU, 2 on a "
    "simulator; 1: one at a time)",
}
#: Seconds kept from the attempt's wall budget for writing the result.
_RESERVE_S = 5.0
#: Characters of a failed point's reason kept in the transcript.
_REASON_CHARS = 400
#: Bytes of a transcript read for the report's progress table.
_PROGRESS_BYTES = 4_000_000


class AutotuneTrial(BaseModel):
    """One judged point of the search: a line of the transcript."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["autotune_trial"] = "autotune_trial"
    schema_version: int = 1
    index: int
    """Judgment number, from 0 (the template's own point)."""
    search: SearchKind
    knobs: dict[str, Value]
    status: str
    """The feedback verdict's status (`pass`, `incorrect`, ...)."""
    speedup: float | None
    """Geometric mean speedup over the visible configs (None: the point failed)."""
    duration_s: float
    reason: str = ""


class AutotuneChoice(BaseModel):
    """What the agent submitted: the last line of the transcript."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["autotune_choice"] = "autotune_choice"
    schema_version: int = 1
    knobs: dict[str, Value] | None
    """The submitted point (None: the baseline was submitted)."""
    speedup: float | None
    judge_calls: int
    space_size: int
    message: str


class AutotuneAgent:
    """Searches a task's declared knobs on the warm judge and submits the fastest passing point."""

    name = "autotune"

    def __init__(
        self,
        calls: int = DEFAULT_CALLS,
        seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        time_cap_s: float = DEFAULT_TIME_CAP_S,
        judges: int | None = None,
    ) -> None:
        self.calls = calls
        self.seconds = seconds
        self.time_cap_s = time_cap_s
        self.judges = judges
        """Points judged at once (None: `base.search_judgments` of the device)."""
        self.clock = clock
        """Seconds since some start (tests inject one)."""

    def run(self, ctx: AgentContext) -> AgentResult:
        """Search, then write the best point (or the baseline) into the workspace."""
        started = self.clock()
        ctx.transcript.parent.mkdir(parents=True, exist_ok=True)
        ctx.transcript.write_text("", encoding="utf-8")
        tuning = ctx.task.spec.autotune
        if tuning is None:
            _write(ctx.workspace, ctx.task.baseline_files())
            note = "no knobs declared: nothing to search; the baseline submitted unjudged"
            return self._finish(ctx, started, None, None, 0, 0, note)
        space = KnobSpace(tuning.knobs, tuning.constraint)
        template = ctx.task.path(tuning.template).read_text(encoding="utf-8")
        start = space.point_of(template_point(template, tuning.template, tuning.knobs))
        base = _base_files(ctx.task, tuning, ctx.workspace)
        if not device_is_timed(ctx.device):
            # A feedback judgment here says only whether a point is correct, which the final
            # judgment says of the submitted point anyway: it would spend an interpreter
            # judgment (one to two minutes on a busy CPU) on nothing the score uses.
            knobs = space.assignment(start)
            _write(ctx.workspace, _render(base, tuning, template, ctx.task, knobs))
            note = (
                f"device '{ctx.device}' is not timed: no point of {len(space)} can be ranked, "
                f"so the template's own point {knobs} is submitted unjudged"
            )
            return self._finish(ctx, started, knobs, None, 0, len(space), note)
        search = Search(space, start, self.calls, ctx.seed)
        budget_s = ctx.budget.wall_s - _RESERVE_S
        if self.seconds is not None:
            budget_s = min(budget_s, self.seconds)
        judges = self.judges or search_judgments(ctx.device)
        best: tuple[float, Point] | None = None
        calls = 0
        failure = ""
        with (
            tempfile.TemporaryDirectory(prefix="gauntlet-autotune-") as tmp,
            Judge(
                device=ctx.device,
                time_cap_s=self.time_cap_s,
                spare_workers=search_spares(judges),
            ) as judge,
            ThreadPoolExecutor(judges, thread_name_prefix="autotune-judge") as pool,
        ):
            last_s = 0.0
            while calls < self.calls and self.clock() - started + last_s <= budget_s:
                # A batch: at most `judges` points (never past the call budget), judged at once.
                points: list[Point] = []
                while len(points) < min(judges, self.calls - calls):
                    point = search.propose(points)
                    if point is None:
                        break
                    points.append(point)
                if not points:
                    break
                batch_started = self.clock()
                judging = [
                    pool.submit(
                        self._judge,
                        judge,
                        ctx,
                        Path(tmp) / f"point-{calls + n}",
                        _render(base, tuning, template, ctx.task, space.assignment(point)),
                    )
                    for n, point in enumerate(points)
                ]
                # Recorded in the order proposed, whichever judgment ends first.
                for point, future in zip(points, judging, strict=True):
                    try:
                        verdict, duration_s = future.result()
                    except JudgeError as err:
                        # The judge's own failure: keep what the search found before this point.
                        logger.warning(
                            "autotune on %s: the judge failed: %s", ctx.task.task_id, err
                        )
                        failure = f"; stopped when the judge failed: {err}"
                        break
                    calls += 1
                    speedup = verdict.speedup if verdict.passed else None
                    search.record(point, math.log(speedup) if speedup else None)
                    _append(
                        ctx.transcript,
                        AutotuneTrial(
                            index=calls - 1,
                            search=search.kind,
                            knobs=space.assignment(point),
                            status=verdict.status,
                            speedup=speedup,
                            duration_s=round(duration_s, 3),
                            reason=verdict.reason[:_REASON_CHARS],
                        ),
                    )
                    if speedup is not None and (best is None or speedup > best[0]):
                        best = (speedup, point)
                if failure:
                    break
                last_s = self.clock() - batch_started
        if best is None:
            _write(ctx.workspace, ctx.task.baseline_files())
            note = f"no point of {len(space)} passed in {calls} judgments: the baseline{failure}"
            return self._finish(ctx, started, None, None, calls, len(space), note)
        knobs = space.assignment(best[1])
        _write(ctx.workspace, _render(base, tuning, template, ctx.task, knobs))
        note = (
            f"{search.kind} search, {calls} of {len(space)} points judged: {knobs} "
            f"(speedup {best[0]:.3f}){failure}"
        )
        return self._finish(ctx, started, knobs, best[0], calls, len(space), note)

    def _judge(
        self, judge: Judge, ctx: AgentContext, folder: Path, files: dict[str, str]
    ) -> tuple[Verdict, float]:
        """One point's feedback verdict and its seconds (on a judging thread)."""
        _write(folder, files)
        started = self.clock()
        verdict = judge.eval(ctx.task, folder, mode="feedback", seed=ctx.seed)
        duration_s = self.clock() - started
        shutil.rmtree(folder)
        return verdict, duration_s

    def _finish(
        self,
        ctx: AgentContext,
        started: float,
        knobs: dict[str, Value] | None,
        speedup: float | None,
        calls: int,
        size: int,
        message: str,
    ) -> AgentResult:
        choice = AutotuneChoice(
            knobs=knobs, speedup=speedup, judge_calls=calls, space_size=size, message=message
        )
        _append(ctx.transcript, choice)
        return AgentResult(
            status="finished",
            usage=Usage(wall_s=self.clock() - started, turns=calls, tool_calls=calls),
            message=message,
            transcript=ctx.transcript,
        )


def progress_rows(attempt_dir: Path) -> list[GenerationRow]:
    """The search's progress for the report: one row per judged point (a generation of one).

    Read from the attempt's transcript (never through a link, at most `_PROGRESS_BYTES`); a
    line that is not an autotune trial is skipped.
    """
    path = attempt_dir / "transcript.jsonl"
    if not path.is_file() or path.is_symlink():
        return []
    with path.open("rb") as handle:
        text = handle.read(_PROGRESS_BYTES).decode("utf-8", errors="replace")
    rows: list[GenerationRow] = []
    best: float | None = None
    judge_s = 0.0
    for line in text.splitlines():
        try:
            trial = AutotuneTrial.model_validate_json(line)
        except ValidationError:
            continue
        if trial.speedup is not None:
            best = trial.speedup if best is None else max(best, trial.speedup)
        judge_s += trial.duration_s
        rows.append(
            GenerationRow(
                generation=trial.index,
                candidates=1,
                judged=1,
                correct=int(trial.status == "pass"),
                best_speedup=best,
                judge_calls=trial.index + 1,
                judge_s=round(judge_s, 3),
                tokens=0,
                cost_usd=0.0,
            )
        )
    return rows


def _base_files(task: Task, tuning: AutotuneSpec, workspace: Path) -> dict[str, str]:
    """The submission's files around the tuned one: the expert's when it is the template."""
    files = {
        name: (workspace / name).read_text(encoding="utf-8")
        for name in task.spec.submission.files
        if (workspace / name).is_file()
    }
    expert = task.spec.expert
    if expert is not None and tuning.template in expert.files.values():
        files.update(task.expert_files() or {})
    return files


def _render(
    base: dict[str, str], tuning: AutotuneSpec, template: str, task: Task, knobs: dict[str, Value]
) -> dict[str, str]:
    target = tuning.file or task.spec.submission.files[0]
    return {**base, target: apply(template, tuning.template, knobs)}


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _append(transcript: Path, record: BaseModel) -> None:
    with transcript.open("a", encoding="utf-8") as out:
        out.write(record.model_dump_json() + "\n")


@agent("autotune")
def _autotune(argument: str) -> AutotuneAgent:
    options = parse_options("autotune", argument, OPTIONS)
    calls = int(number("autotune", "calls", options.get("calls", str(DEFAULT_CALLS))))
    seconds = options.get("seconds")
    time_cap = options.get("time_cap", str(DEFAULT_TIME_CAP_S))
    judges = options.get("judges")
    return AutotuneAgent(
        calls=max(calls, 1),
        seconds=number("autotune", "seconds", seconds) if seconds is not None else None,
        time_cap_s=number("autotune", "time_cap", time_cap),
        judges=max(int(number("autotune", "judges", judges)), 1) if judges is not None else None,
    )
