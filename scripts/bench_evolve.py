"""How long an `evolve` search of N candidates on one task takes: the warm judge's throughput.

    python3 scripts/bench_evolve.py --task triton2triton/attention --device cuda:0 \\
        --candidates 200 --out bench_evolve.md            # the issue's target: under 10 minutes
    python3 scripts/bench_evolve.py --task accel/npu/relu --candidates 20    # here, simulated

The model is scripted (a loopback server: nothing leaves the machine): every proposal is the
task's expert (its baseline where it ships none) with a comment line of its own, so each of the
N candidates is a new submission that the search judges in full in feedback mode (visible
configs; timed on a GPU, `--time-cap` seconds at most per config), through the agent's own warm
`gauntlet.Judge`; none is deduplicated or skipped. The seed (the starting files) is one of the
N. The search runs as a run runs the agent (`EvolveAgent.run` on a built workspace), so the
wall time includes the agent's whole loop: prompts, HTTP, the feedback tools, the log.

Prints (and writes with `--out`) one markdown table row: the machine, the device, the wall
time of the search, the judge's share of it, seconds per candidate, and whether N candidates
finished within `--target-s` (600 s).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the scripted model server lives in tests/support

from gauntlet import devices, suites  # noqa: E402
from gauntlet.agents.base import AgentContext, Budget, ModelSettings  # noqa: E402
from gauntlet.agents.evolve import EvolveAgent, SearchSettings  # noqa: E402
from gauntlet.agents.evolve_log import CandidateJudged, SearchLog  # noqa: E402
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S  # noqa: E402
from gauntlet.workspace import build_workspace  # noqa: E402

#: Comment markers by file suffix, to make each proposal a distinct submission.
COMMENTS = {".py": "#", ".asm": ";", ".s": ";", ".cu": "//", ".cuh": "//", ".cpp": "//"}
#: Candidates proposed per generation.
PROPOSALS = 10


def variant(files: dict[str, str], number: int) -> dict[str, str]:
    """The files with a distinct comment line on top of the first."""
    name = next(iter(files))
    marker = COMMENTS.get(Path(name).suffix, "#")
    return {**files, name: f"{marker} variant {number}\n{files[name]}"}


def answer(files: dict[str, str]) -> str:
    """A proposal in the format the agent's prompt asks for."""
    return "\n".join(f"File: {name}\n```\n{text}```" for name, text in files.items())


def main() -> int:
    """Run the search and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, help="a task id, e.g. triton2triton/attention")
    parser.add_argument("--device", help="cuda:0, cpu, sim:npu (default: the task's best here)")
    parser.add_argument("--candidates", type=int, default=200, help="N, the seed included")
    parser.add_argument("--time-cap", type=float, default=DEFAULT_TIME_CAP_S, help="seconds")
    parser.add_argument("--target-s", type=float, default=600.0, help="the target wall time")
    parser.add_argument(
        "--inputs", choices=("fresh", "fixed"), default="fresh", help="evolve's inputs option"
    )
    parser.add_argument("--out", type=Path, help="append the table row to this file")
    args = parser.parse_args()

    from tests.support.fake_openai import FakeOpenAI, say

    task = suites.load_by_id(args.task)
    device = devices.device_for(task, args.device)
    if device is None:
        raise SystemExit(f"task '{args.task}' cannot run on {args.device or 'this machine'}")
    files = task.expert_files() or task.baseline_files()
    proposals = args.candidates - 1
    script: list[Any] = [say(answer(variant(files, n))) for n in range(1, proposals + 1)]
    settings = SearchSettings(
        generations=math.ceil(proposals / PROPOSALS),
        proposals=PROPOSALS,
        judge_calls=args.candidates,
        time_cap_s=args.time_cap,
        crossover=0.0,
        inputs=args.inputs,
    )
    budget = Budget(wall_s=24 * 3600)
    with tempfile.TemporaryDirectory(prefix="bench-evolve-") as tmp, FakeOpenAI(script) as server:
        workspace = build_workspace(task, Path(tmp) / "workspace", device=device, budget=budget)
        ctx = AgentContext(
            task=task,
            workspace=workspace.path,
            brief=workspace.brief,
            budget=budget,
            model=ModelSettings(model="scripted", base_url=server.base_url),
            device=device,
            transcript=Path(tmp) / "attempt" / "transcript.jsonl",
        )
        started = time.monotonic()
        result = EvolveAgent(settings, max_retries=0).run(ctx)
        wall_s = time.monotonic() - started
        made = SearchLog(Path(tmp) / "attempt").records()
    judged = [r for r in made if isinstance(r, CandidateJudged) and r.outcome == "judged"]
    judge_s = sum(c.judge_s for c in judged)
    passed = sum(c.correct for c in judged)
    per = [c.judge_s for c in judged]
    name = next(
        (f"{d.name} ({d.description})" for d in devices.list_devices() if d.name == device), device
    )
    row = (
        f"| {datetime.now(UTC):%Y-%m-%d} | {platform.node()} | {name} | {args.task} | "
        f"{args.inputs} | "
        f"{len(judged)} ({passed} correct) | {wall_s:.1f} | {judge_s:.1f} | "
        f"{statistics.median(per) if per else 0:.2f} | {wall_s / max(len(judged), 1):.2f} | "
        f"{'yes' if len(judged) >= args.candidates and wall_s < args.target_s else 'no'} |"
    )
    header = (
        "| date | host | device | task | inputs | candidates judged | wall s | judge s | "
        "median judge s | wall s per candidate | N within target |\n"
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
    )
    print(f"agent: {result.status}: {result.message}", file=sys.stderr)
    print(header + "\n" + row)
    if args.out is not None:
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(row + "\n")
    return 0 if len(judged) >= args.candidates else 1


if __name__ == "__main__":
    sys.exit(main())
