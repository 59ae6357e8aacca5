"""How long an `evolve` search of N candidates on one task takes: the warm judge's throughput.

    python3 scripts/bench_evolve.py --task torch2triton/causal_conv1d --device cuda:0 \\
        --candidates 200 --inputs fixed --out search.md --json search.json   # issue 22's target
    python3 scripts/bench_evolve.py --task accel/npu/relu --candidates 20    # here, simulated

The model is scripted (a loopback server: nothing leaves the machine). The proposer:

- `knobs` (default; the task must declare `[autotune]` knobs): each proposal is its parent
  (the file the prompt shows) with one knob moved to a neighbouring point of the task's knob
  space, drawn with a seeded generator, and a first comment line naming the candidate. So the
  N candidates are N distinct submissions whose kernels differ as a tuner's do (their block
  sizes, warps, ...), selection works on real speedups, and each is judged in full (its Triton
  kernels compiled afresh, as a new kernel's are); the knob spaces are smaller than N, so a
  point recurs under another candidate's comment line. A parent without the knobs (the
  starting files: a stub or the baseline) gives the template at its own point.
- `copies`: every proposal is the task's expert (its baseline where it ships none) with a
  comment line of its own: the same kernel N times, each judged as a new submission.

Each candidate is judged in feedback mode (visible configs; timed on a GPU) through the agent's
own warm `gauntlet.Judge`, `--judges` at once (the agent's `judges` option; default
`GAUNTLET_JUDGMENTS_PER_GPU` on a GPU, 2 elsewhere: on a GPU their compiles, references and
correctness trials overlap and each is timed alone under the GPU's lock; `--judges 1` gives the
one-at-a-time figure to compare with); none is deduplicated or skipped. The seed (the starting
files) is one of the N. The search runs as a run runs the agent (`EvolveAgent.run` on a built
workspace), so its wall time, the device time the issue counts, includes the agent's whole
loop: its judge's start, prompts, HTTP, the feedback tools, the log.

Prints (and appends with `--out`) one markdown table row: the machine, the device, the wall
time of the search, the judge's share of it, seconds per candidate, and whether N candidates
finished within `--target-s` (600 s). `--json` is rewritten before every proposal and at the
end: the counts and seconds so far, a timeline (candidates judged against seconds), the median
seconds of each phase of a judgment (where the time goes) and every judged candidate's knobs,
status, speedup and seconds. A search stopped by SIGTERM or Ctrl-C (a time limit) writes what
it finished, marked `stopped`, and exits 3; one that ends short of N exits 1.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the scripted model server lives in tests/support

from gauntlet import devices, suites  # noqa: E402
from gauntlet.agents.autotune_search import KnobSpace, Point  # noqa: E402
from gauntlet.agents.base import AgentContext, Budget, ModelSettings, search_judgments  # noqa: E402
from gauntlet.agents.evolve import EvolveAgent, SearchSettings  # noqa: E402
from gauntlet.agents.evolve_log import CandidateJudged, SearchLog  # noqa: E402
from gauntlet.agents.evolve_prompts import parse_files  # noqa: E402
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S  # noqa: E402
from gauntlet.knobs import KnobError, Value, apply, template_point  # noqa: E402
from gauntlet.task import Task  # noqa: E402
from gauntlet.workspace import build_workspace  # noqa: E402

#: Comment markers by file suffix, to make each proposal a distinct submission.
COMMENTS = {".py": "#", ".asm": ";", ".s": ";", ".cu": "//", ".cuh": "//", ".cpp": "//"}
#: Candidates proposed per generation.
PROPOSALS = 10
#: Exit status of a search stopped by a signal (what it finished is written).
STOPPED = 3
State = Literal["running", "finished", "stopped"]


def variant(files: dict[str, str], number: int) -> dict[str, str]:
    """The files with a distinct comment line on top of the first."""
    name = next(iter(files))
    marker = COMMENTS.get(Path(name).suffix, "#")
    return {**files, name: f"{marker} variant {number}\n{files[name]}"}


def answer(files: dict[str, str]) -> str:
    """A proposal in the format the agent's prompt asks for."""
    return "\n".join(f"File: {name}\n```\n{text}```" for name, text in files.items())


class KnobProposer:
    """The scripted model of `--proposer knobs`: the parent with one knob moved, tagged."""

    TAG = "scripted candidate"

    def __init__(self, task: Task, seed: int) -> None:
        """A proposer over `task`'s knob space, deterministic in `seed`.

        Raises:
            SystemExit: The task declares no knobs.
        """
        tuning = task.spec.autotune
        if tuning is None:
            raise SystemExit(
                f"task '{task.task_id}' declares no [autotune] knobs: use --proposer copies"
            )
        self.tuning = tuning
        self.names = list(task.spec.submission.files)
        self.target = tuning.file or self.names[0]
        self.marker = COMMENTS.get(Path(self.target).suffix, "#")
        self.space = KnobSpace(tuning.knobs, tuning.constraint)
        self.rng = random.Random(seed)
        self.proposed = 0
        self.knobs = tuning.knobs
        self.template = task.path(tuning.template).read_text(encoding="utf-8")
        self.start = self.space.point_of(template_point(self.template, tuning.template, self.knobs))
        """The template's own point."""
        self.points: list[dict[str, Value] | None] = [None]
        """The knob point of each candidate: none for the seed (the starting files), then each
        proposal's."""

    def files(self, prompt: str) -> dict[str, str]:
        """The files of a proposal made from the parent the prompt shows."""
        parsed = parse_files(prompt, self.names)
        if isinstance(parsed, str) or self.target not in parsed:
            raise ValueError(f"the prompt shows no parent's {self.target}: {parsed}")
        lines = parsed[self.target].rstrip("\n").split("\n")
        if lines[0].startswith(f"{self.marker} {self.TAG} "):
            lines = lines[1:]  # the parent's own tag
        text = "\n".join(lines) + "\n"
        try:
            here = self.space.point_of(template_point(text, self.tuning.template, self.knobs))
            point = self._neighbour(here)
        except KnobError:
            # A parent without the knobs (the starting files: a stub or the baseline): the
            # template at its own point, where a tuner starts.
            text = self.template
            here = point = self.start
        values = self.space.assignment(point)
        self.proposed += 1
        self.points.append(values)
        moved = ", ".join(
            f"{name} {old} -> {values[name]}"
            for name, old in self.space.assignment(here).items()
            if values[name] != old
        )
        body = apply(text, self.tuning.template, values)
        tag = f"{self.marker} {self.TAG} {self.proposed}: {moved or 'the template point'}\n"
        return {**parsed, self.target: tag + body}

    def _neighbour(self, point: Point) -> Point:
        """A point of the space one knob away, else any other point, else the same one."""
        near = [p for p in self.space.points if _moved(p, point) == 1]
        others = [p for p in self.space.points if p != point]
        return self.rng.choice(near or others or [point])


def _moved(a: Point, b: Point) -> int:
    """How many knobs differ between two points."""
    return sum(x != y for x, y in zip(a, b, strict=True))


class CandidateFigure(BaseModel):
    """One judged candidate in the figures."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    candidate_id: int
    status: str | None
    speedup: float | None
    judge_s: float
    knobs: dict[str, Value] | None = None
    feedback: str = ""
    """What the judge said of a candidate that did not pass (its first 2,000 characters)."""


class SearchFigures(BaseModel):
    """What `--json` holds: the search's counts and seconds, so far or at its end."""

    model_config = ConfigDict(extra="forbid")

    date: str
    host: str
    device: str
    task_id: str
    proposer: str
    inputs: str
    judges: int
    """Candidates judged at once."""
    candidates: int
    """N, the candidates asked for (the seed included)."""
    target_s: float
    state: State = "running"
    """`running` (rewritten as it goes), `finished`, or `stopped` (by a signal)."""
    judged: int = 0
    correct: int = 0
    distinct_points: int | None = None
    """Distinct knob points among the judged candidates (`knobs` proposer)."""
    wall_s: float = 0.0
    """Seconds since the search started (the agent's whole loop, its judge's start included)."""
    judge_s: float = 0.0
    median_judge_s: float | None = None
    best_speedup: float | None = None
    within_target: bool = False
    phases_median_s: dict[str, float] = {}
    """Per phase of a judgment, the median seconds over the judged candidates."""
    timeline: list[tuple[int, float]] = []
    """(candidates judged, seconds since the start), at each proposal."""
    pace_s: float | None = None
    """Seconds per candidate once the first `judges` were judged (`pace`)."""
    projected_s: float | None = None
    """The wall time of all `candidates` at that pace: a stopped search's figure."""
    judged_candidates: list[CandidateFigure] = []


def pace(
    timeline: list[tuple[int, float]], judges: int, candidates: int
) -> tuple[float, float] | None:
    """Seconds per candidate after the first `judges` judged, and all `candidates`' wall time.

    The first judgments wait for the judge's start and the search's first proposals, which a
    longer search pays once: so the pace is measured from the first point of the timeline
    with `judges` candidates judged to its last, and the projection adds the rest at that pace.
    None until the timeline has judged more candidates after that point.
    """
    start = next(((n, t) for n, t in timeline if n >= judges), None)
    if start is None or timeline[-1][0] <= start[0]:
        return None
    (n0, t0), (n1, t1) = start, timeline[-1]
    per = (t1 - t0) / (n1 - n0)
    return per, t0 + (candidates - n0) * per


class Figures:
    """Follows the search log as it grows and writes the figures."""

    def __init__(
        self,
        figures: SearchFigures,
        attempt: Path,
        out: Path | None,
        proposer: KnobProposer | None = None,
    ) -> None:
        self.figures = figures
        self.attempt = attempt
        """The agent's attempt folder (its search log is under it)."""
        self.log = SearchLog(attempt).path
        self.out = out
        self.proposer = proposer
        self.started = time.monotonic()
        self._offset = 0
        self._records: list[CandidateJudged] = []

    def update(self, state: State = "running") -> None:
        """Read the log's new lines, recompute, write `--json`."""
        self._read()
        points = self.proposer.points if self.proposer is not None else None
        judged = [r for r in self._records if r.outcome == "judged"]
        per = [r.judge_s for r in judged]
        phases = sorted({name for r in judged for name in r.phases_s})
        figures = self.figures
        figures.state = state
        figures.judged = len(judged)
        figures.correct = sum(r.correct for r in judged)
        figures.wall_s = round(time.monotonic() - self.started, 2)
        figures.judge_s = round(sum(per), 2)
        figures.median_judge_s = round(statistics.median(per), 3) if per else None
        speedups = [r.speedup for r in judged if r.correct and r.speedup is not None]
        figures.best_speedup = max(speedups) if speedups else None
        figures.within_target = (
            figures.judged >= figures.candidates and figures.wall_s < figures.target_s
        )
        figures.phases_median_s = {
            name: round(statistics.median(r.phases_s.get(name, 0.0) for r in judged), 3)
            for name in phases
        }
        if state == "running":
            figures.timeline.append((figures.judged, figures.wall_s))
        paced = pace(figures.timeline, figures.judges, figures.candidates)
        if paced is not None:
            figures.pace_s, figures.projected_s = round(paced[0], 3), round(paced[1], 1)

        def knobs(record: CandidateJudged) -> dict[str, Value] | None:
            # Candidate k is proposal k, the seed candidate 0 (none is left unjudged).
            k = record.candidate_id
            return points[k] if points is not None and k < len(points) else None

        figures.judged_candidates = [
            CandidateFigure(
                candidate_id=r.candidate_id,
                status=r.status,
                speedup=r.speedup,
                judge_s=round(r.judge_s, 3),
                knobs=knobs(r),
                feedback=r.feedback[:2000] if r.status != "pass" else "",
            )
            for r in judged
        ]
        if points is not None:
            figures.distinct_points = len(
                {tuple(sorted(c.knobs.items())) for c in figures.judged_candidates if c.knobs}
            )
        if self.out is not None:
            self.out.write_text(figures.model_dump_json(indent=1) + "\n", encoding="utf-8")

    def _read(self) -> None:
        if not self.log.is_file():
            return
        with self.log.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]  # a torn last line waits for the next read
        self._offset += len(complete)
        for line in complete.decode("utf-8").splitlines():
            try:
                self._records.append(CandidateJudged.model_validate_json(line))
            except ValidationError:
                continue  # a session or generation record

    def row(self) -> str:
        """The markdown table row of the figures as they stand."""
        f = self.figures
        state = "" if f.state == "finished" else f" ({f.state})"
        return (
            f"| {f.date} | {f.host} | {f.device} | {f.task_id} | {f.inputs} | {f.judges} | "
            f"{f.judged} ({f.correct} correct){state} | {f.wall_s:.1f} | {f.judge_s:.1f} | "
            f"{f.median_judge_s or 0:.2f} | {f.wall_s / max(f.judged, 1):.2f} | "
            f"{_figure(f.pace_s, '.2f')} | {_figure(f.projected_s, '.0f')} | "
            f"{'yes' if f.within_target else 'no'} |"
        )


def _figure(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


HEADER = (
    "| date | host | device | task | inputs | judged at once | candidates judged | wall s | "
    "judge s | median judge s | wall s per candidate | s per candidate after the first at "
    "once | N projected s | N within target |\n"
    "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
    "| --- |"
)


def _stop(signum: int, frame: object) -> None:
    # A time limit's SIGTERM ends the search as Ctrl-C would: the judge's workers stop and
    # what was judged is written.
    raise KeyboardInterrupt


def main() -> int:
    """Run the search and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, help="a task id, e.g. torch2triton/causal_conv1d")
    parser.add_argument("--device", help="cuda:0, cpu, sim:npu (default: the task's best here)")
    parser.add_argument("--candidates", type=int, default=200, help="N, the seed included")
    parser.add_argument("--proposer", choices=("knobs", "copies"), default="knobs")
    parser.add_argument("--seed", type=int, default=1, help="of the knob proposer's draws")
    parser.add_argument("--time-cap", type=float, default=DEFAULT_TIME_CAP_S, help="seconds")
    parser.add_argument("--target-s", type=float, default=600.0, help="the target wall time")
    parser.add_argument(
        "--inputs", choices=("fresh", "fixed"), default="fresh", help="evolve's inputs option"
    )
    parser.add_argument(
        "--out", type=Path, help="append the table row to this file (a new one gets the header)"
    )
    parser.add_argument("--json", type=Path, help="write the figures here, as the search goes")
    parser.add_argument(
        "--judges",
        type=int,
        help="candidates judged at once (default: the agent's, GAUNTLET_JUDGMENTS_PER_GPU on a "
        "GPU, 2 elsewhere)",
    )
    args = parser.parse_args()
    if args.candidates < 2:
        parser.error("--candidates must be at least 2 (the seed and one proposal)")
    if args.judges is not None and args.judges < 1:
        parser.error("--judges must be at least 1")

    task = suites.load_by_id(args.task)
    device = devices.device_for(task, args.device)
    if device is None:
        raise SystemExit(f"task '{args.task}' cannot run on {args.device or 'this machine'}")
    proposer = KnobProposer(task, args.seed) if args.proposer == "knobs" else None
    name = next(
        (f"{d.name} ({d.description})" for d in devices.list_devices() if d.name == device), device
    )
    start = SearchFigures(
        date=f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        host=f"{platform.node()}, {devices.cpu_model()} ({os.cpu_count()} cores)",
        device=name,
        task_id=args.task,
        proposer=args.proposer,
        inputs=args.inputs,
        judges=args.judges or search_judgments(device),
        candidates=args.candidates,
        target_s=args.target_s,
    )
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-evolve-") as tmp:
            figures = Figures(start, Path(tmp) / "attempt", args.json, proposer)
            message = _search(task, device, args, figures, Path(tmp))
    finally:
        signal.signal(signal.SIGTERM, previous)
    done = figures.figures
    print(f"agent: {message}", file=sys.stderr)
    print(HEADER + "\n" + figures.row())
    phases = ", ".join(f"{k} {v:.2f}" for k, v in done.phases_median_s.items())
    print(f"median seconds per judgment, by phase: {phases or '-'}")
    if done.distinct_points is not None:
        print(f"distinct knob points among the judged candidates: {done.distinct_points}")
    if args.out is not None:
        fresh = not args.out.is_file()
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write((HEADER + "\n" if fresh else "") + figures.row() + "\n")
    if done.state == "stopped":
        return STOPPED
    return 0 if done.judged >= args.candidates else 1


def _search(task: Task, device: str, args: argparse.Namespace, figures: Figures, tmp: Path) -> str:
    """Run the agent against the scripted model; what it said, or that it was stopped."""
    from tests.support.fake_openai import FakeOpenAI, Step, say

    proposals = args.candidates - 1
    proposer = figures.proposer
    base = task.expert_files() or task.baseline_files()
    copies = iter(range(1, proposals + 1))

    def propose(request: dict[str, Any]) -> Any:
        figures.update()  # the candidates judged before this proposal
        if proposer is not None:
            return say(answer(proposer.files(request["messages"][-1]["content"])))
        return say(answer(variant(base, next(copies))))

    script: list[Step] = [propose] * proposals
    settings = SearchSettings(
        generations=math.ceil(proposals / PROPOSALS),
        proposals=PROPOSALS,
        judge_calls=args.candidates,
        time_cap_s=args.time_cap,
        crossover=0.0,  # one parent a proposal: the knob proposer mutates the file it is shown
        inputs=args.inputs,
        judges=figures.figures.judges,
    )
    budget = Budget(wall_s=24 * 3600)
    message = "stopped by a signal"
    state: State = "stopped"
    try:
        with FakeOpenAI(script) as server:
            workspace = build_workspace(task, tmp / "workspace", device=device, budget=budget)
            ctx = AgentContext(
                task=task,
                workspace=workspace.path,
                brief=workspace.brief,
                budget=budget,
                model=ModelSettings(model="scripted", base_url=server.base_url),
                device=device,
                transcript=figures.attempt / "transcript.jsonl",
            )
            figures.started = time.monotonic()
            result = EvolveAgent(settings, max_retries=0).run(ctx)
            message = f"{result.status}: {result.message}"
            state = "finished"
            for failure in server.failures:
                print(f"scripted model: {failure}", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    figures.update(state)
    return message


if __name__ == "__main__":
    sys.exit(main())
