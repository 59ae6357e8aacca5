"""`evolve` judging several candidates at once through its one warm judge (option `judges`).

Real judgments (the `accel/npu/relu` simulator, and `test/scale` under Triton's interpreter
with `--runslow`), a scripted model on 127.0.0.1, and a gate around `Judge.eval` that holds
each verdict until the judgments started after it have returned: so a batch's judgments are
provably in flight together and end in the reverse of the order they began. What the search
records must not depend on that order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gauntlet.agents.base import AgentContext, Budget, ModelSettings, make_agent
from gauntlet.agents.evolve import EvolveAgent, SearchSettings
from gauntlet.agents.evolve_log import CandidateJudged, GenerationEnded, SearchLog, SearchStarted
from gauntlet.judge.service import Judge
from gauntlet.judge.verdict import Verdict
from gauntlet.task import Task
from tests.agents.test_evolve import BASELINE, BROKEN, EXPERT, REPO, candidates, kernel
from tests.support.fake_openai import FakeOpenAI, say
from tests.support.judge_gate import ReverseFinish

MakeContext = Callable[..., AgentContext]
#: What may differ between two searches that judged the same candidates: clocks.
VOLATILE = {"time", "judge_s", "phases_s"}


def records(ctx: AgentContext) -> list[dict[str, Any]]:
    """The search log's candidate and generation records, clocks left out."""
    return [
        r.model_dump(exclude=VOLATILE)
        for r in SearchLog(ctx.transcript.parent).records()
        if isinstance(r, CandidateJudged | GenerationEnded)
    ]


def script() -> list[Any]:
    # Generation 1 (every parent the seed): two broken kernels, then the expert.
    # Generation 2 (parents drawn from [3, 0]): two correct variants as slow as the seed (so
    # below the population of two), then the expert again (a duplicate). No proposal changes
    # the population before the last of its generation, so one at a time plans the same parents.
    return [
        kernel(BROKEN),
        kernel("    frobnicate r2, r3\n"),
        kernel(EXPERT),
        kernel("; c\n" + BASELINE),
        kernel("; d\n" + BASELINE),
        kernel(EXPERT),
    ]


def search(ctx: AgentContext, judges: int) -> None:
    settings = SearchSettings(
        generations=2, population=2, proposals=3, crossover=0.5, judges=judges
    )
    result = EvolveAgent(settings).run(ctx)
    assert result.status == "finished", result.message


def test_judging_at_once_records_what_one_at_a_time_does(
    accel_context: MakeContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI(script()) as server:
        alone = accel_context(server.base_url, name="alone")
        search(alone, judges=1)
    gate = ReverseFinish([1, 3, 2])  # the seed; generation 1's three; generation 2's two
    gate.install(monkeypatch)
    with FakeOpenAI(script()) as server:
        together = accel_context(server.base_url, name="together")
        search(together, judges=3)
    assert not server.failures, server.failures
    assert gate.most_at_once == 3 and gate.returned == [0, 3, 2, 1, 5, 4]
    # Ids, lineage, outcomes, verdicts, feedback, selection: the same, record for record.
    assert records(together) == records(alone)
    made = candidates(together)
    assert [(c.generation, c.outcome, c.status) for c in made] == [
        (0, "judged", "pass"),
        (1, "judged", "build_error"),
        (1, "judged", "build_error"),
        (1, "judged", "pass"),
        (2, "judged", "pass"),
        (2, "judged", "pass"),
        (2, "duplicate", "pass"),
    ]
    assert all(c.parents == [0] for c in made[1:4])
    assert all(c.operation == "crossover" and c.parents == [3, 0] for c in made[4:])
    assert "the same files as candidate 3" in made[6].feedback
    log = SearchLog(together.transcript.parent).records()
    ended = [r for r in log if isinstance(r, GenerationEnded)]
    assert ended[-1].population == [3, 0]
    assert (together.workspace / "kernel.asm").read_text() == EXPERT
    started = [r for r in log if isinstance(r, SearchStarted)]
    assert [(s.parallel, s.judges) for s in started] == [(1, 3)]


def test_the_first_window_is_planned_from_one_population_and_asked_in_order(
    accel_context: MakeContext,
) -> None:
    # judges=3 with one asking thread: three proposals under way, planned before any is judged,
    # asked one after another (the script's order is the proposals' order).
    with FakeOpenAI(script()[:3]) as server:
        ctx = accel_context(server.base_url)
        settings = SearchSettings(generations=1, population=3, proposals=3, judges=3)
        result = EvolveAgent(settings).run(ctx)
    assert result.status == "finished" and not server.failures
    made = candidates(ctx)
    assert [c.status for c in made] == ["pass", "build_error", "build_error", "pass"]
    # Planned together: no prompt shows another's failure.
    assert not any("frobnicate" in str(r["messages"]) for r in server.requests)


def test_a_proposal_is_planned_once_the_one_a_window_before_it_is_recorded(
    accel_context: MakeContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two under way: proposals 0 and 1 planned at once (parents: the seed); proposal 2 once
    # candidate 1 (proposal 0, the expert) is recorded, so its parent is the expert, even
    # though candidate 2's judgment ended first.
    gate = ReverseFinish([1, 2])
    gate.install(monkeypatch)
    answers = [kernel(EXPERT), kernel("; a\n" + BASELINE), kernel("; b\n" + EXPERT)]
    with FakeOpenAI(answers) as server:
        ctx = accel_context(server.base_url)
        settings = SearchSettings(generations=1, proposals=3, crossover=0, judges=2)
        result = EvolveAgent(settings).run(ctx)
    assert result.status == "finished" and not server.failures
    assert gate.returned[:3] == [0, 2, 1]
    made = candidates(ctx)
    assert [c.parents for c in made[1:]] == [[0], [0], [1]]
    assert "Parent 1 (candidate 1" in str(server.requests[2]["messages"])


def test_the_judge_call_budget_holds_with_judgments_in_flight(
    accel_context: MakeContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    judgments = Judgments(monkeypatch)
    with FakeOpenAI(script()) as server:
        ctx = accel_context(server.base_url)
        settings = SearchSettings(generations=2, proposals=4, judges=4, judge_calls=3)
        result = EvolveAgent(settings).run(ctx)
    # The seed, then no more proposals under way than the two calls left: two asked, not four.
    assert result.status == "finished" and "judge-call budget of 3 spent" in result.message
    assert judgments.count == 3 and result.usage.tool_calls == 3
    assert len(server.requests) == 2


def test_the_token_budget_stops_asking_the_proposals_under_way(
    accel_context: MakeContext,
) -> None:
    answers = [kernel("; a\n" + BASELINE, prompt_tokens=400, completion_tokens=200)]
    with FakeOpenAI([*answers, kernel(EXPERT)]) as server:
        ctx = accel_context(server.base_url, Budget(wall_s=300, tokens=500))
        result = EvolveAgent(SearchSettings(generations=2, proposals=3, judges=3)).run(ctx)
    assert result.status == "budget_exhausted" and "token budget of 500" in result.message
    # The first answer spent the budget: the two other proposals under way were never asked,
    # and the answered one was still judged.
    assert len(server.requests) == 1
    assert [c.outcome for c in candidates(ctx)] == ["judged", "judged"]


class Killed(BaseException):
    """Stands for the SIGKILL of a run: nothing after it is recorded."""


class Judgments:
    """`Judge.eval` counted; `dying_on`: a submission holding this text kills the search."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, dying_on: str | None = None) -> None:
        self.count = 0
        original = Judge.eval

        def counted(self_: Judge, task: Task | str, submission: Path | str, **kw: Any) -> Verdict:
            self.count += 1
            if dying_on is not None and dying_on in (Path(submission) / "kernel.asm").read_text():
                raise Killed
            return original(self_, task, submission, **kw)

        monkeypatch.setattr(Judge, "eval", counted)


def test_a_search_killed_with_judgments_in_flight_resumes_without_judging_twice(
    accel_context: MakeContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SearchSettings(generations=2, population=2, proposals=3, crossover=0, judges=3)
    with FakeOpenAI(script()[:3]) as server:
        ctx = accel_context(server.base_url)
        # Generation 1's second judgment dies; its first is recorded (candidates go in order),
        # its third may have ended too, unrecorded: lost with the kill.
        Judgments(monkeypatch, dying_on="frobnicate r2")
        with pytest.raises(Killed):
            EvolveAgent(settings).run(ctx)
        assert [c.candidate_id for c in candidates(ctx)] == [0, 1]
        server.add(*script()[1:])
        again = accel_context(server.base_url, name="again")
        again = again.model_copy(update={"transcript": ctx.transcript})
        monkeypatch.undo()
        judgments = Judgments(monkeypatch)
        result = EvolveAgent(settings).run(again)
    assert result.status == "finished", result.message
    made = candidates(ctx)
    assert [(c.candidate_id, c.generation, c.outcome) for c in made] == [
        (0, 0, "judged"), (1, 1, "judged"), (2, 1, "judged"), (3, 1, "judged"),
        (4, 2, "judged"), (5, 2, "judged"), (6, 2, "duplicate"),
    ]  # fmt: skip
    assert made[2].status == "build_error" and made[3].status == "pass"
    assert all(c.parents == [0] for c in made[1:4]) and made[4].parents == [3]
    # The seed and candidate 1 were not judged again; each later one once.
    assert judgments.count == 4 and result.usage.tool_calls == 6
    log = SearchLog(ctx.transcript.parent)
    started = [r for r in log.records() if isinstance(r, SearchStarted)]
    assert [s.resumed_from for s in started] == [0, 2]
    assert (again.workspace / "kernel.asm").read_text() == EXPERT


def test_options() -> None:
    agent = make_agent("evolve:judges=3,parallel=2")
    assert isinstance(agent, EvolveAgent)
    assert agent.settings.judges == 3 and agent.settings.parallel == 2
    assert make_agent("evolve").settings.judges is None  # type: ignore[attr-defined]


@pytest.mark.slow
def test_judging_at_once_on_a_cpu_interpreter_task(
    scale_task: Task, make_context: Callable[..., Any]
) -> None:
    # `test/scale` under Triton's interpreter, untimed: two judgments at once select as one
    # at a time would (the earliest correct candidate).
    expert = (REPO / "tests" / "agents" / "task_scale" / "expert" / "kernel.py").read_text()
    wrong = expert.replace("x * 2.0 + 1.0", "x * 2.0")
    answers = [say(f"File: kernel.py\n```python\n{wrong}```"), say(f"```python\n{expert}```")]
    seen = []
    for judges in (1, 2):
        with FakeOpenAI(list(answers)) as server:
            ctx, _ = make_context(
                scale_task, model=ModelSettings(model="m", base_url=server.base_url)
            )
            settings = SearchSettings(generations=1, proposals=2, judges=judges)
            result = EvolveAgent(settings).run(ctx)
        assert result.status == "finished", result.message
        seen.append([(c.status, c.parents, c.correct) for c in candidates(ctx)])
        assert "best: candidate 0" in result.message
    expected = [("pass", [], True), ("incorrect", [0], False), ("pass", [0], True)]
    assert seen[0] == seen[1] == expected


@pytest.mark.gpu
def test_judged_at_once_on_a_gpu_each_candidate_is_timed_alone(
    scale_task: Task, make_context: Callable[..., Any]
) -> None:
    # `test/scale` on the GPU, three candidates judged at once: the two correct ones are timed,
    # each after waiting for the GPU alone (the device lock's exclusive mode).
    expert = (REPO / "tests" / "agents" / "task_scale" / "expert" / "kernel.py").read_text()
    wrong = expert.replace("x * 2.0 + 1.0", "x * 2.0")
    answers = [
        say(f"File: kernel.py\n```python\n{expert}```"),
        say(f"File: kernel.py\n```python\n# again\n{expert}```"),
        say(f"File: kernel.py\n```python\n{wrong}```"),
    ]
    with FakeOpenAI(answers) as server:
        ctx, _ = make_context(scale_task, model=ModelSettings(model="m", base_url=server.base_url))
        ctx = ctx.model_copy(update={"device": "cuda:0"})
        settings = SearchSettings(generations=1, proposals=3, judges=3, time_cap_s=2)
        result = EvolveAgent(settings).run(ctx)
    assert result.status == "finished", result.message
    seed, first, second, wrong_one = candidates(ctx)
    assert [c.parents for c in (first, second, wrong_one)] == [[0], [0], [0]]
    assert not wrong_one.correct and wrong_one.status == "incorrect"
    for timed in (seed, first, second):
        assert timed.correct and timed.speedup is not None
        assert "device_wait_exclusive" in timed.phases_s and "timing" in timed.phases_s
