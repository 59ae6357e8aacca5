"""The `evolve` agent against a scripted model on 127.0.0.1 (real HTTP) and the real judge.

The accelerator task `accel/npu/relu` is judged on the simulator in well under a second, so
these searches are real: every judged candidate is a feedback judgment of `gauntlet.Judge`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gauntlet import suites
from gauntlet.agents.base import AgentContext, Budget, ModelSettings, make_agent
from gauntlet.agents.evolve import EvolveAgent, SearchSettings, settings_from_options
from gauntlet.agents.evolve_log import (
    CandidateJudged,
    GenerationEnded,
    SearchLog,
    SearchStarted,
    generation_rows,
)
from gauntlet.errors import ConfigError
from gauntlet.task import Task
from tests.support.fake_openai import Answer, FakeOpenAI, say

REPO = Path(__file__).resolve().parents[2]
RELU = REPO / "tasks" / "accel" / "npu" / "relu"
EXPERT = (RELU / "expert.asm").read_text()
BASELINE = (RELU / "baseline.asm").read_text()
BROKEN = "    frobnicate r1, r2\n"


def kernel(text: str, **usage: Any) -> Answer:
    """A proposal answering `kernel.asm` in the format the prompt asks for."""
    return say(f"Here it is.\n\nFile: kernel.asm\n```asm\n{text}```\n", **usage)


def relu() -> Task:
    return suites.load_by_id("accel/npu/relu")


MakeContext = Callable[..., AgentContext]


def candidates(ctx: AgentContext) -> list[CandidateJudged]:
    return [r for r in SearchLog(ctx.transcript.parent).records() if isinstance(r, CandidateJudged)]


def user_prompt(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def test_a_search_keeps_lineage_selects_on_correctness_and_submits_the_best(
    accel_context: MakeContext,
) -> None:
    script = [
        kernel("; variant\n" + BASELINE),  # gen 1: correct, as fast as the baseline
        kernel(BROKEN),  # gen 1: fails to assemble
        kernel(EXPERT, prompt_tokens=300, completion_tokens=90),  # gen 2: correct and fast
        say("I cannot improve it further."),  # gen 2: no files
    ]
    settings = SearchSettings(generations=2, population=2, proposals=2, crossover=0.0)
    with FakeOpenAI(script) as server:
        ctx = accel_context(server.base_url)
        result = EvolveAgent(settings).run(ctx)
    assert not server.failures
    assert result.status == "finished", result.message
    made = candidates(ctx)
    assert [(c.candidate_id, c.generation, c.operation, c.outcome) for c in made] == [
        (0, 0, "seed", "judged"),
        (1, 1, "mutate", "judged"),
        (2, 1, "mutate", "judged"),
        (3, 2, "mutate", "judged"),
        (4, 2, "mutate", "unparsed"),
    ]
    seed, variant, broken, expert, unparsed = made
    assert seed.correct and seed.speedup == pytest.approx(1.0)
    assert variant.correct and variant.parents == [0]
    assert not broken.correct and broken.status == "build_error"
    assert "frobnicate" in broken.feedback
    assert expert.correct and expert.speedup is not None and expert.speedup > 2
    # Selection: the broken candidate is never a parent; the expert's parent came from gen 1.
    assert expert.parents[0] in (0, 1) and all(2 not in c.parents for c in made)
    assert "no fenced code block" in unparsed.feedback and unparsed.judge_calls == 0
    # The prompt shows the parent's files and what the judge said of it (its profile too).
    gen2 = user_prompt(server.requests[2])
    assert "Parent 1 (candidate" in gen2 and "speedup" in gen2 and "cycles" in gen2
    assert "frobnicate" in gen2  # the failed candidate's reason, so it is not repeated
    # Generations record the population, best first, and the totals.
    ended = [
        r for r in SearchLog(ctx.transcript.parent).records() if isinstance(r, GenerationEnded)
    ]
    assert [e.generation for e in ended] == [0, 1, 2]
    assert ended[-1].population == [3, 0] and ended[-1].best_id == 3
    assert ended[-1].judge_calls == 4
    # The best candidate is the submission, its files kept with every candidate's.
    assert (ctx.workspace / "kernel.asm").read_text() == EXPERT
    assert (ctx.transcript.parent / "search" / "candidates" / "2" / "kernel.asm").is_file()
    assert result.usage.tool_calls == 4 and result.usage.turns == 4
    assert result.usage.tokens_in == 3 * 100 + 300 and result.usage.tokens_out == 3 * 20 + 90
    lines = (ctx.transcript.parent / "search" / "search.jsonl").read_text().splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[0] == "search_started" and kinds.count("candidate") == 5
    started = SearchLog(ctx.transcript.parent).records()[0]
    assert isinstance(started, SearchStarted) and started.resumed_from == 0
    rows = generation_rows(ctx.transcript.parent)
    assert [(r.generation, r.candidates, r.correct) for r in rows] == [
        (0, 1, 1),
        (1, 2, 1),
        (2, 2, 1),
    ]
    assert rows[1].best_speedup == pytest.approx(1.0) and rows[2].best_speedup == expert.speedup


def test_crossover_takes_two_parents_and_duplicates_cost_no_judge_call(
    accel_context: MakeContext,
) -> None:
    script = [
        kernel("; a\n" + BASELINE),  # gen 1: a mutation of the seed (the only parent)
        kernel("; a\n" + BASELINE),  # gen 1: the same files again
        kernel(EXPERT),  # gen 2: a crossover of 0 and 1
        kernel(EXPERT),  # gen 2: the same again
    ]
    settings = SearchSettings(generations=2, population=3, proposals=2, crossover=1.0)
    with FakeOpenAI(script) as server:
        ctx = accel_context(server.base_url)
        result = EvolveAgent(settings).run(ctx)
    assert not server.failures, server.failures
    made = candidates(ctx)
    assert made[2].outcome == "duplicate" and made[2].judge_calls == 0
    assert "the same files as candidate 1" in made[2].feedback
    assert made[3].operation == "crossover" and sorted(made[3].parents) == [0, 1]
    assert "Parent 2 (candidate" in user_prompt(server.requests[2])
    assert made[4].outcome == "duplicate"  # the expert again: judged once
    assert result.usage.tool_calls == 3


def test_a_search_stopped_by_its_budget_goes_on_from_its_log(accel_context: MakeContext) -> None:
    script = [kernel("; a\n" + BASELINE), kernel(EXPERT), kernel("; b\n" + BASELINE)]
    with FakeOpenAI(script) as server:
        ctx = accel_context(server.base_url)
        first = EvolveAgent(SearchSettings(generations=1, proposals=3, judge_calls=2)).run(ctx)
        # The judge-call budget ends it as planned, the best so far submitted.
        assert first.status == "finished" and "judge-call budget of 2 spent" in first.message
        assert len(server.requests) == 1 and first.usage.tool_calls == 2
        assert (ctx.workspace / "kernel.asm").read_text() == BASELINE  # no faster one yet
        again = accel_context(server.base_url, name="again")  # a fresh workspace...
        again = again.model_copy(update={"transcript": ctx.transcript})  # ...the same attempt
        second = EvolveAgent(SearchSettings(generations=1, proposals=3)).run(again)
    assert second.status == "finished" and not server.failures
    made = candidates(ctx)
    assert [(c.candidate_id, c.generation) for c in made] == [(0, 0), (1, 1), (2, 1), (3, 1)]
    assert second.usage.tool_calls == 4  # the seed and candidate 1 were not judged again
    started = [
        r for r in SearchLog(ctx.transcript.parent).records() if isinstance(r, SearchStarted)
    ]
    assert [s.resumed_from for s in started] == [0, 2]
    assert (again.workspace / "kernel.asm").read_text() == EXPERT


def test_the_token_budget_counts_every_model_call(accel_context: MakeContext) -> None:
    script = [kernel("; a\n" + BASELINE, prompt_tokens=400, completion_tokens=200)]
    with FakeOpenAI(script) as server:
        ctx = accel_context(server.base_url, Budget(wall_s=300, tokens=500))
        result = EvolveAgent(SearchSettings(generations=3, proposals=2)).run(ctx)
    assert result.status == "budget_exhausted" and "token budget of 500" in result.message
    assert len(server.requests) == 1


def test_the_dollar_budget_counts_every_model_call(accel_context: MakeContext) -> None:
    # 100k prompt tokens of gpt-4o-mini (the default price table's) cost more than $0.001.
    script = [kernel("; a\n" + BASELINE, prompt_tokens=100_000)]
    with FakeOpenAI(script) as server:
        ctx = accel_context(server.base_url)
        priced = ctx.model.model_copy(update={"model": "gpt-4o-mini"})
        ctx = ctx.model_copy(update={"model": priced})
        result = EvolveAgent(SearchSettings(generations=3, proposals=2, cost_usd=0.001)).run(ctx)
    assert result.status == "budget_exhausted" and "cost budget of $0.001" in result.message
    assert len(server.requests) == 1 and result.usage.cost_usd > 0.001


def test_the_wall_budget_stops_the_search_with_its_best_in_place(
    accel_context: MakeContext,
) -> None:
    now = [0.0]

    def slow(request: dict[str, Any]) -> Answer:
        now[0] += 400.0  # the model answers after the whole wall budget
        return kernel(EXPERT)

    with FakeOpenAI([slow]) as server:
        ctx = accel_context(server.base_url, Budget(wall_s=300))
        agent = EvolveAgent(SearchSettings(generations=3, proposals=2), clock=lambda: now[0])
        result = agent.run(ctx)
    assert result.status == "timeout" and "wall-clock budget exhausted" in result.message
    assert len(server.requests) == 1
    assert (ctx.workspace / "kernel.asm").read_text() == EXPERT


def test_a_verifier_rejection_costs_no_judge_call(accel_context: MakeContext) -> None:
    script = [
        kernel(BROKEN),
        say("VERDICT: FAIL\n'frobnicate' is no npu instruction."),
        kernel(EXPERT),
        say("VERDICT: PASS\nIt assembles."),
    ]
    settings = SearchSettings(generations=1, proposals=2, verifiers=("compile",))
    with FakeOpenAI(script) as server:
        ctx = accel_context(server.base_url)
        result = EvolveAgent(settings).run(ctx)
    assert not server.failures
    assert "You review a kernel" in server.requests[1]["messages"][0]["content"]
    assert "frobnicate" in server.requests[1]["messages"][1]["content"]
    seed, rejected, judged = candidates(ctx)
    assert rejected.outcome == "rejected" and rejected.judge_calls == 0
    assert rejected.verifiers[0].name == "compile" and rejected.verifiers[0].passed is False
    assert "rejected by the compile verifier: 'frobnicate'" in rejected.feedback
    assert judged.outcome == "judged" and judged.verifiers[0].passed is True
    assert judged.tokens_in == 200  # the proposal's and the verifier's
    assert result.usage.tool_calls == 2 and result.usage.turns == 4


def test_options_and_their_errors() -> None:
    agent = make_agent("evolve:generations=3,population=2,proposals=5,verifiers=compile+memory")
    assert isinstance(agent, EvolveAgent)
    assert agent.settings.generations == 3 and agent.settings.proposals == 5
    assert agent.settings.verifiers == ("compile", "memory")
    assert settings_from_options({}).verifiers == ()  # off by default
    with pytest.raises(ConfigError, match="unknown verifier 'typos'"):
        make_agent("evolve:verifiers=typos")
    with pytest.raises(ConfigError, match="'population' of agent 'evolve' must be a whole"):
        make_agent("evolve:population=0")
    with pytest.raises(ConfigError, match="bad option 'colour=red'"):
        make_agent("evolve:colour=red")


@pytest.mark.slow
def test_a_search_on_a_cpu_interpreter_task(
    scale_task: Task, tmp_path: Path, make_context: Callable[..., Any]
) -> None:
    # `test/scale` under Triton's interpreter: the `cpu` device is not timed, so correctness
    # alone selects, and the earliest correct candidate stays the best.
    expert = (REPO / "tests" / "agents" / "task_scale" / "expert" / "kernel.py").read_text()
    wrong = expert.replace("x * 2.0 + 1.0", "x * 2.0")
    script = [
        say(f"File: kernel.py\n```python\n{wrong}```"),
        say(f"```python\n{expert}```"),  # one unnamed block: the contract's one file
    ]
    with FakeOpenAI(script) as server:
        ctx, _ = make_context(scale_task, model=ModelSettings(model="m", base_url=server.base_url))
        result = EvolveAgent(SearchSettings(generations=1, proposals=2)).run(ctx)
    assert result.status == "finished", result.message
    seed, wrong_one, right_one = candidates(ctx)
    assert seed.correct and seed.speedup is None
    assert wrong_one.status == "incorrect" and "mismatch" in wrong_one.feedback
    assert right_one.correct and right_one.parents == [0]
    assert "best: candidate 0" in result.message  # untimed: the earliest correct one
    assert result.usage.tool_calls == 3


def test_the_report_shows_a_search_per_generation(tmp_path: Path) -> None:
    from gauntlet.report.page import render_report
    from tests.report.dom import search_tables
    from tests.support.rundirs import FAST_BOOTSTRAP, RunBuilder

    builder = RunBuilder(tmp_path / "run", device="sim:npu")
    record = builder.add("accel/npu/relu", "pass", agent="evolve", speedup=5.0, track="accel")
    run = builder.write()
    log = SearchLog(run / "attempts" / record.attempt_id)
    for number, (generation, correct, speedup) in enumerate(
        [(0, True, 1.0), (1, False, None), (1, True, 5.8), (2, True, 2.0)]
    ):
        log.append(
            CandidateJudged(
                candidate_id=number,
                generation=generation,
                operation="seed" if number == 0 else "mutate",
                outcome="judged",
                correct=correct,
                speedup=speedup,
                judge_calls=1,
                judge_s=1.5,
                tokens_in=100 * number,
                cost_usd=0.01 * number,
            )
        )
    (cells,) = search_tables(render_report(run, bootstrap=FAST_BOOTSTRAP))
    # generation, candidates, judged, correct, best speedup, judge calls, judge s, tokens, cost
    assert [c[:4] + c[5:8] for c in cells] == [
        ["0", "1", "1", "1", "1", "1.5", "0"],
        ["1", "2", "2", "1", "3", "4.5", "300"],
        ["2", "1", "1", "1", "4", "6.0", "600"],
    ]
    assert "5.80" in cells[1][4] and "5.80" in cells[2][4] and cells[2][8] == "$0.0600"


@pytest.mark.gpu
def test_a_search_on_a_gpu_task_selects_by_timed_speedup(
    scale_task: Task, make_context: Callable[..., Any]
) -> None:
    # `test/scale` on the GPU: the baseline's 256-wide blocks against the expert's 1024-wide
    # ones, both correct and timed, so the speedup ranks them.
    expert = (REPO / "tests" / "agents" / "task_scale" / "expert" / "kernel.py").read_text()
    wrong = expert.replace("x * 2.0 + 1.0", "x * 2.0")
    script = [
        say(f"File: kernel.py\n```python\n{wrong}```"),
        say(f"File: kernel.py\n```python\n{expert}```"),
    ]
    with FakeOpenAI(script) as server:
        ctx, _ = make_context(scale_task, model=ModelSettings(model="m", base_url=server.base_url))
        ctx = ctx.model_copy(update={"device": "cuda:0"})
        result = EvolveAgent(SearchSettings(generations=1, proposals=2, time_cap_s=2)).run(ctx)
    assert result.status == "finished", result.message
    seed, wrong_one, right_one = candidates(ctx)
    assert seed.correct and seed.speedup is not None
    assert not wrong_one.correct and wrong_one.status == "incorrect"
    assert right_one.correct and right_one.speedup is not None
    best = max((seed, right_one), key=lambda c: c.speedup or 0.0)
    assert f"best: candidate {best.candidate_id}" in result.message
    assert "speedup" in right_one.feedback and "us" in right_one.feedback


def test_answers_are_read_file_by_file() -> None:
    from gauntlet.agents.evolve_prompts import parse_files

    two = ["kernel.py", "kernel.cu"]
    answer = (
        "The wrapper:\n\nFile: kernel.py\n```python\nimport torch\n```\n\n"
        "```cuda kernel.cu\n__global__ void k() {}\n```\n"
    )
    assert parse_files(answer, two) == {
        "kernel.py": "import torch\n",
        "kernel.cu": "__global__ void k() {}\n",
    }
    # One file: an unnamed block counts, the longest of several (a snippet, then the file).
    assert parse_files("```\nx\n```\nso:\n```\nwhole file\n```", ["k.asm"]) == {
        "k.asm": "whole file\n"
    }
    assert "no fenced code block for kernel.py, kernel.cu" in str(parse_files("```\nx\n```", two))
    assert parse_files(None, two) == "the answer is empty"


def test_fixed_inputs_judge_every_candidate_on_one_draw(scale_task: Task) -> None:
    from gauntlet.agents.evolve import _CountingJudge

    seeds: list[int] = []

    class Recording:
        def eval(self, task: Task, folder: Path, **kwargs: Any) -> Any:
            seeds.append(kwargs["seed"])
            return None

    fresh = _CountingJudge(Recording())  # type: ignore[arg-type]
    fixed = _CountingJudge(Recording(), fixed_seed=99)  # type: ignore[arg-type]
    for count, judge in enumerate((fresh, fresh, fixed, fixed)):
        judge(scale_task, Path("."), device="cpu", configs="visible", seed=count, mode="feedback")
    assert seeds == [0, 1, 99, 99]
    assert fresh.calls == 2
    assert make_agent("evolve:inputs=fixed").settings.inputs == "fixed"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="'inputs' of agent 'evolve' must be fresh or fixed"):
        make_agent("evolve:inputs=same")


def test_parallel_proposals_are_asked_at_once_and_judged_in_order(
    accel_context: MakeContext,
) -> None:
    # Each answer waits until all three requests have arrived: asked one at a time, the
    # barrier would break (and the server record the failure).
    arrived = threading.Barrier(3, timeout=60)

    def together(number: int) -> Callable[[dict[str, Any]], Answer]:
        def step(request: dict[str, Any]) -> Answer:
            arrived.wait()
            return kernel(f"; proposal {number}\n" + BASELINE)

        return step

    settings = SearchSettings(generations=1, proposals=3, parallel=3)
    with FakeOpenAI([together(n) for n in range(3)]) as server:
        ctx = accel_context(server.base_url)
        result = EvolveAgent(settings).run(ctx)
    assert not server.failures, server.failures
    assert result.status == "finished" and result.usage.tool_calls == 4
    made = candidates(ctx)
    assert [c.candidate_id for c in made] == [0, 1, 2, 3]
    assert all(c.parents == [0] and c.outcome == "judged" for c in made[1:])
    assert made[1].time <= made[2].time <= made[3].time
