"""`evolve`: an evolutionary search over kernels, an LLM proposing and the warm judge selecting.

Generation 0 judges the starting files as they are (the seed). Each later generation makes
`proposals` candidates: the model (any OpenAI-compatible endpoint, `agents.llm.ChatClient`)
gets the task brief and one or two parents from the population, with their files, what the
feedback tools said of them and (on the accelerators) their profile, and is asked to mutate the
one or cross the two over; with no correct kernel yet it is asked to write one. Each candidate
may first pass the LLM verifiers (`agents.verifiers`, off by default); then the judge judges it
through the feedback tools (`agents.tools.Toolbox`, on a `gauntlet.Judge` kept warm for the
attempt): visible configs only, fresh inputs per candidate, never the run's secret seed or
hidden configs, and the same answer an agent's `bench` tool gets. Selection is elitist:
the population is the `population` best correct candidates so far (all visible configs
correct is a hard gate; then the highest speedup; on an untimed device, such as `cpu`, the
earliest correct one). The best candidate is written into the workspace as soon as it is
found, so the runner judges it by the full protocol whenever the agent stops.

Up to max(`parallel`, `judges`) proposals of a generation are under way at once (the window):
the model is asked `parallel` at once, and `judges` candidates are judged at once through the
one warm judge (on a GPU they share it: their compiles, references and correctness trials side
by side, each timed alone under the GPU's lock). Proposal k is planned once the candidate of
proposal k - window is recorded, from the population as the candidates before it left it. Each
proposal takes its generation's turn in proposal order (its transcript lines, its candidate id,
the duplicate check, the verifiers), and candidates are recorded in that order, each as soon as
it and those before it are judged: so ids, lineage, selection and the log do not depend on
which judgment ends first.

Every candidate's lineage, verifier results, verdict and cost is appended to the attempt's
`search/search.jsonl` (`agents.evolve_log`) with its files; a run resumed after a kill goes on
from there, counting what was spent before against the budgets.

Options (`evolve:key=value,...`): see `OPTIONS`.
"""

from __future__ import annotations

import hashlib
import logging
import random
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gauntlet.agents.base import (
    AgentContext,
    AgentResult,
    AgentStatus,
    ModelSettings,
    Usage,
    agent,
    search_judgments,
    search_spares,
)
from gauntlet.agents.evolve_log import (
    CandidateJudged,
    GenerationEnded,
    Operation,
    Outcome,
    SearchLog,
    SearchStarted,
)
from gauntlet.agents.evolve_prompts import Parent, parse_files, proposal_prompt, system_prompt
from gauntlet.agents.llm import (
    MAX_RETRIES,
    ChatClient,
    Completion,
    ModelAPIError,
    PriceTable,
    agent_client,
    check_reachable,
)
from gauntlet.agents.options import number, parse_options
from gauntlet.agents.transcript import (
    AgentFinished,
    AgentStarted,
    ApiErrored,
    MessageAdded,
    ModelCalled,
    TranscriptEvent,
    TranscriptWriter,
)
from gauntlet.agents.verifiers import (
    VERIFIER_NAMES,
    VerifierName,
    VerifierResult,
    rejected_by,
    verify,
)
from gauntlet.errors import ConfigError
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S, FEEDBACK_TIME_CAP_S
from gauntlet.workspace import UnsafeFileError, read_beneath

if TYPE_CHECKING:
    from gauntlet.agents.tools import Toolbox
    from gauntlet.judge.pipeline import ConfigSet
    from gauntlet.judge.service import Judge
    from gauntlet.judge.verdict import Mode, Verdict
    from gauntlet.task import Task

logger = logging.getLogger(__name__)

OPTIONS = {
    "generations": "generations after the seed (default 4)",
    "population": "correct candidates kept as parents (default 4)",
    "proposals": "candidates proposed per generation (default 4)",
    "parallel": "proposals asked of the model at once (default 1)",
    "judges": "candidates judged at once through the warm judge (default: "
    "GAUNTLET_JUDGMENTS_PER_GPU on a GPU, 2 elsewhere; 1: one at a time)",
    "judge_calls": "most judge calls in all (default 0: unlimited)",
    "tokens": "most tokens in all (default: the run's --budget, else unlimited)",
    "dollars": "most dollars in all (default: the run's budget, else unlimited)",
    "wall": "seconds of this session (default: the attempt's wall budget)",
    "verifiers": "LLM verifiers run before the judge, joined by '+': "
    f"{'+'.join(VERIFIER_NAMES)} (default: none)",
    "crossover": "share of proposals made by crossover once two parents exist (default 0.3)",
    "inputs": "fresh (new inputs for every candidate, as the feedback tools draw them) or "
    "fixed (one draw for the whole search: the judge's cached references serve every "
    "candidate) (default fresh)",
    "time_cap": f"seconds of GPU timing per config in a candidate's judgment, at most "
    f"{FEEDBACK_TIME_CAP_S:g} in feedback mode whatever it says (default {DEFAULT_TIME_CAP_S:g})",
    "prices": "a TOML or JSON price table file",
    "retries": f"retries of a failed model API call (default {MAX_RETRIES})",
}
#: Longest single HTTP request to the model, in seconds.
REQUEST_TIMEOUT_S = 600.0
#: Model calls failing in a row after which the search stops with an error.
MAX_MODEL_ERRORS = 3
#: Failed candidates whose reasons the next prompt lists.
FAILURES_SHOWN = 3


class SearchSettings(BaseModel):
    """The search's shape and its own budgets (the attempt's `Budget` applies as well)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    generations: int = Field(default=4, ge=0)
    population: int = Field(default=4, ge=1)
    proposals: int = Field(default=4, ge=1)
    parallel: int = Field(default=1, ge=1)
    """Proposals asked of the model at once."""
    judges: int | None = Field(default=None, ge=1)
    """Candidates judged at once (None: `base.search_judgments` of the device). Up to
    max(parallel, judges) proposals are under way at once, each planned once the candidate that
    many before it is recorded. 1 and 1: each proposal sees every candidate before it."""
    judge_calls: int = Field(default=0, ge=0)
    """0: unlimited."""
    tokens: int = Field(default=0, ge=0)
    """0: the attempt's token budget."""
    cost_usd: float = Field(default=0.0, ge=0)
    """0: the attempt's cost budget."""
    wall_s: float | None = Field(default=None, gt=0)
    """None: the attempt's wall budget."""
    verifiers: tuple[VerifierName, ...] = ()
    crossover: float = Field(default=0.3, ge=0, le=1)
    time_cap_s: float = Field(default=DEFAULT_TIME_CAP_S, gt=0)
    """Seconds of timing per config on a GPU; a candidate's feedback judgment times to a 5% CI
    within at most `timing.FEEDBACK_TIME_CAP_S` (0.25 s) a config, so only a lower cap counts."""
    inputs: Literal["fresh", "fixed"] = "fresh"
    """`fresh`: every candidate is judged on new inputs (a candidate fitted to inputs it was
    shown fails the next); `fixed`: one draw for the search, so the judge's references (and a
    simulator's baseline runs) are computed once and candidates compete on the same data; a
    candidate fitted to them is caught only by the final judgment."""


class EvolveAgent:
    """The evolutionary search agent."""

    name = "evolve"

    def __init__(
        self,
        settings: SearchSettings | None = None,
        *,
        prices: PriceTable | None = None,
        max_retries: int = MAX_RETRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """An agent; `clock` (the wall budget) is injectable for tests."""
        self.settings = settings or SearchSettings()
        self.prices = prices if prices is not None else PriceTable()
        self.max_retries = max_retries
        self._clock = clock

    def availability(self) -> str | None:
        """None when usable here, else what is missing."""
        try:
            import openai  # noqa: F401
        except ImportError:
            return "the openai package is missing: pip install 'openai>=1.40'"
        return None

    def preflight(self, model: ModelSettings) -> None:
        """Check, before a run's first attempt, that the model answers.

        Raises:
            ConfigError: No model is named, no key is set for the default endpoint, or the
                endpoint does not answer or refuses the key.
        """
        check_reachable("evolve", self._client(model))

    def _client(self, model: ModelSettings) -> ChatClient:
        return agent_client(
            "evolve",
            model.model,
            base_url=model.base_url,
            temperature=model.temperature,
            max_retries=self.max_retries,
        )

    def run(self, ctx: AgentContext) -> AgentResult:
        """Search until the generations are done or a budget runs out.

        Raises:
            ConfigError: No model is named, or no API key is set for the default endpoint.
        """
        from gauntlet.judge.service import Judge

        client = self._client(ctx.model)
        writer = TranscriptWriter(ctx.transcript)
        judges = self.settings.judges or search_judgments(ctx.device)
        try:
            with (
                tempfile.TemporaryDirectory(prefix="gauntlet-evolve-") as tmp,
                Judge(
                    ctx.device,
                    time_cap_s=self.settings.time_cap_s,
                    spare_workers=search_spares(judges),
                ) as judge,
            ):
                fixed = ctx.seed * 1_000_003 if self.settings.inputs == "fixed" else None
                bench = _Bench(ctx, Path(tmp), judge, fixed_seed=fixed)
                return _Search(self, ctx, client, writer, bench, judges).run()
        finally:
            writer.close()


@dataclass(frozen=True)
class _Plan:
    """One proposal before the model answers it: how it is made, from whom, the prompt."""

    generation: int
    operation: Operation
    parents: list[int]
    messages: list[dict[str, str]]
    kept: dict[str, str]
    """The first parent's files: what an answer leaves out is kept from them."""


@dataclass(frozen=True)
class _Judged:
    """What the feedback tools said of one candidate."""

    feedback: str
    verdict: Verdict | None
    profile: str
    judge_calls: int
    judge_s: float


@dataclass
class _Proposal:
    """A candidate made (in its turn), waiting to be recorded in candidate order."""

    candidate_id: int
    generation: int
    operation: Operation
    parents: list[int]
    outcome: Outcome
    files: dict[str, str]
    feedback: str = ""
    spent: tuple[int, int, float] = (0, 0, 0.0)
    verifiers: list[VerifierResult] = field(default_factory=list)
    digest: str = ""
    twin: int | None = None
    """The earlier candidate with the same files (a duplicate), recorded before this one."""
    judgment: Future[_Judged] | None = None
    """Its judgment, under way on the judging threads."""


class _Bench:
    """Where candidates are judged: workspaces of the search's own, one per judgment at once.

    The attempt's workspace only ever holds the best so far, which the runner judges if the
    agent is killed. Each candidate gets feedback tools of its own on a free bench, seeded by its
    candidate id (fresh inputs per candidate, the same whichever bench or thread judges it;
    never the run's secret seed).
    """

    def __init__(
        self, ctx: AgentContext, root: Path, judge: Judge, *, fixed_seed: int | None
    ) -> None:
        self.ctx = ctx
        self.root = root
        self.judge = judge
        self.fixed_seed = fixed_seed
        self.log_path = SearchLog(ctx.transcript.parent).root / "tool-calls.jsonl"
        self._free: list[Path] = []
        self._built = 0
        self._lock = threading.Lock()

    def judge_files(self, candidate_id: int, files: dict[str, str], caller: str) -> _Judged:
        """Judge one candidate through the feedback tools (on a judging thread)."""
        from gauntlet.agents.tools import Toolbox

        folder = self._take()
        try:
            for name, text in files.items():
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            counting = _CountingJudge(self.judge, fixed_seed=self.fixed_seed)
            toolbox = Toolbox(
                self.ctx.task,
                folder,
                device=self.ctx.device,
                seed=self.ctx.seed * 1_000_003 + candidate_id,
                judge=counting,
                log_path=self.log_path,
            )
            answer = toolbox.call("bench", {}, caller=caller)
            verdict = counting.last
            profile = ""
            if verdict is not None and verdict.passed and _has_tool(toolbox, "profile"):
                profile = toolbox.call("profile", {}, caller=caller).text
        finally:
            self._give_back(folder)
        return _Judged(answer.text, verdict, profile, counting.calls, counting.seconds)

    def _take(self) -> Path:
        from gauntlet.workspace import build_workspace

        with self._lock:
            if self._free:
                return self._free.pop()
            self._built += 1
            number = self._built
        built = build_workspace(
            self.ctx.task,
            self.root / f"bench-{number}",
            device=self.ctx.device,
            budget=self.ctx.budget,
        )
        return built.path

    def _give_back(self, folder: Path) -> None:
        with self._lock:
            self._free.append(folder)


class _Turns:
    """A generation's proposals (or the seed) after the model answered: one at a time, in order.

    In its turn a proposal is written to the transcript, parsed, compared with the candidates
    before it, verified, given the next candidate id and sent to be judged; so ids, duplicates,
    the transcript and the verifiers' calls do not depend on which answer or judgment came first.
    """

    def __init__(self, first_index: int, first_id: int, known: dict[str, int]) -> None:
        self.next_id = first_id
        self.known = known
        """Digest -> id of each candidate judged or to be judged, this generation's included."""
        self._turn = first_index
        self._changed = threading.Condition()

    @contextmanager
    def turn(self, index: int) -> Iterator[None]:
        """Wait for proposal `index`'s turn (every earlier one's has ended), then hold it."""
        with self._changed:
            self._changed.wait_for(lambda: self._turn == index)
        try:
            yield
        finally:
            with self._changed:
                self._turn += 1
                self._changed.notify_all()

    def new_id(self) -> int:
        """The next candidate id (in a turn)."""
        self.next_id += 1
        return self.next_id - 1


class _Search:
    """One attempt's search (or the rest of it, after a kill)."""

    def __init__(
        self,
        owner: EvolveAgent,
        ctx: AgentContext,
        client: ChatClient,
        writer: TranscriptWriter,
        bench: _Bench,
        judges: int,
    ) -> None:
        self.owner = owner
        self.bench = bench
        self.judges = judges
        self.settings = owner.settings
        self.ctx = ctx
        self.client = client
        self.writer = writer
        self.log = SearchLog(ctx.transcript.parent)
        self.names = list(ctx.task.spec.submission.files)
        self.candidates: list[CandidateJudged] = []
        self.files: dict[int, dict[str, str]] = {}
        self.by_digest: dict[str, int] = {}
        self.best: int | None = None
        self.ended: set[int] = set()
        """Generations whose selection is recorded."""
        self.model_calls = 0
        self.model_errors = 0
        self.spent_tokens = 0
        self.spent_usd = 0.0
        """Tokens and dollars of every proposal and verifier so far, recorded or not yet."""
        self._writing = threading.Lock()
        self.started = owner._clock()
        wall = ctx.budget.wall_s
        if self.settings.wall_s is not None:
            wall = min(wall, self.settings.wall_s)
        self.deadline = self.started + wall
        self.tokens_budget = _tighter(self.settings.tokens, ctx.budget.tokens)
        self.cost_budget = _tighter(self.settings.cost_usd, ctx.budget.cost_usd)
        self.window = max(self.settings.parallel, judges)
        """Proposals under way at most (asked `parallel` and judged `judges` at once)."""

    # The session.

    def run(self) -> AgentResult:
        self._load()
        self.log.append(
            SearchStarted(
                task_id=self.ctx.task.task_id,
                model=self.client.model,
                generations=self.settings.generations,
                population=self.settings.population,
                proposals=self.settings.proposals,
                judge_calls=self.settings.judge_calls,
                verifiers=list(self.settings.verifiers),
                resumed_from=len(self.candidates),
                parallel=self.settings.parallel,
                judges=self.judges,
            )
        )
        self.writer.write(
            AgentStarted(
                task_id=self.ctx.task.task_id,
                model=self.client.model,
                base_url=self.ctx.model.base_url,
                turns=self.settings.generations * self.settings.proposals,
                tools=["bench", "profile"] if self.ctx.task.spec.track == "accel" else ["bench"],
            )
        )
        self._asking = ThreadPoolExecutor(self.settings.parallel, thread_name_prefix="evolve-ask")
        self._judging = ThreadPoolExecutor(self.judges, thread_name_prefix="evolve-judge")
        try:
            status, message = self._search()
        finally:
            # Stopped by an error (or Ctrl-C): no proposal not yet asked is asked, no candidate
            # not yet judged is judged (a job waits only for earlier proposals' turns, so none
            # waits for one cancelled); asked first, so nothing is sent to be judged after.
            self._asking.shutdown(cancel_futures=True)
            self._judging.shutdown(cancel_futures=True)
        usage = self._usage()
        self.writer.write(AgentFinished(status=status, message=message, usage=usage.model_dump()))
        return AgentResult(
            status=status, usage=usage, message=message, transcript=self.ctx.transcript
        )

    def _load(self) -> None:
        """Take up what a killed session of this attempt left in the log."""
        for record in self.log.records():
            if isinstance(record, CandidateJudged):
                self._remember(record, self.log.files(record) if record.files else {})
            elif isinstance(record, GenerationEnded):
                self.ended.add(record.generation)
        self.spent_tokens = sum(c.tokens_in + c.tokens_out for c in self.candidates)
        self.spent_usd = sum(c.cost_usd for c in self.candidates)
        if self.best is not None:
            self._write_best()
            logger.info(
                "evolve resumes %s at candidate %d (best: %d)",
                self.ctx.task.task_id,
                len(self.candidates),
                self.best,
            )

    def _search(self) -> tuple[AgentStatus, str]:
        if not any(c.generation == 0 for c in self.candidates):
            seed = self._starting_files()
            if seed is not None:
                turns = _Turns(0, len(self.candidates), dict(self.by_digest))
                self._take(self._screen(0, "seed", [], seed, turns))
        if 0 not in self.ended:
            self._end_generation(0)
        for generation in range(1, self.settings.generations + 1):
            stop = self._generation(generation)
            if stop is not None:
                return stop
            if generation not in self.ended:
                self._end_generation(generation)
        return "finished", self._summary()

    def _generation(self, generation: int) -> tuple[AgentStatus, str] | None:
        """Make the generation's proposals (those a killed session left); why it stopped, if so.

        Up to `window` proposals are under way at once: planned (here), asked (`parallel` at
        once), judged (`judges` at once); the oldest is recorded as soon as it is judged, and
        then the next is planned. None is planned once a budget is spent, nor beyond the judge
        calls left, counting every proposal under way as one.
        """
        index = sum(c.generation == generation for c in self.candidates)
        turns = _Turns(index, len(self.candidates), dict(self.by_digest))
        under_way: deque[Future[_Proposal | None]] = deque()
        stop: tuple[AgentStatus, str] | None = None
        while True:
            while index < self.settings.proposals and len(under_way) < self.window:
                stop = self._budget_stop() or self._errors_stop()
                calls = self.settings.judge_calls
                if stop is not None or (
                    calls and self._usage().tool_calls + len(under_way) >= calls
                ):
                    break
                plan = self._plan(generation, index)
                under_way.append(self._asking.submit(self._propose, plan, index, turns))
                index += 1
            if not under_way:
                return stop
            proposal = under_way.popleft().result()
            if proposal is not None:
                self._take(proposal)

    # One candidate: planned, asked of the model, screened in its turn, judged, recorded.

    def _plan(self, generation: int, index: int) -> _Plan:
        rng = random.Random(f"{self.ctx.seed}/{generation}/{index}")
        operation, parents = self._parents(rng)
        messages = [
            {"role": "system", "content": system_prompt(self.ctx.brief, self.names)},
            {
                "role": "user",
                "content": proposal_prompt(
                    operation,
                    [self._parent(p) for p in parents],
                    [self._failure(c) for c in self._failures()],
                ),
            },
        ]
        kept = self.files[parents[0]] if parents else {}
        return _Plan(generation, operation, parents, messages, kept)

    def _propose(self, plan: _Plan, index: int, turns: _Turns) -> _Proposal | None:
        """Ask the model (on an asking thread), then take its turn: None if not asked."""
        try:
            # A budget spent, or the model failing, asks no more (counting what earlier
            # proposals spent: with one asking thread they have all taken their turn).
            stopped = self._budget_stop() or self._errors_stop()
            answer = None if stopped is not None else self._ask(plan)
        except BaseException:
            with turns.turn(index):  # the proposals after it still take theirs
                pass
            raise
        with turns.turn(index):
            return None if answer is None else self._answered(plan, *answer, turns)

    def _ask(self, plan: _Plan) -> tuple[Completion | ModelAPIError, float]:
        started = self.owner._clock()
        try:
            completion = self.client.complete(
                plan.messages, [], timeout_s=self._request_timeout(), on_retry=self._retrying
            )
        except ModelAPIError as err:
            return err, self.owner._clock() - started
        return completion, self.owner._clock() - started

    def _answered(
        self,
        plan: _Plan,
        answer: Completion | ModelAPIError,
        duration_s: float,
        turns: _Turns,
    ) -> _Proposal:
        """The proposal the model's answer makes (in its turn)."""
        generation, operation, parents = plan.generation, plan.operation, plan.parents
        # The system prompt (the brief) is the same for every proposal: written once a session.
        for message in plan.messages[0 if self.model_calls == 0 else 1 :]:
            self._write(MessageAdded(turn=self.model_calls + 1, message=message))
        if isinstance(answer, ModelAPIError):
            self.model_errors += 1
            self._write(
                ApiErrored(turn=self.model_calls + 1, attempt=0, error=str(answer), retry_in_s=None)
            )
            return _Proposal(
                turns.new_id(), generation, operation, parents, "model_error", {}, str(answer)
            )
        completion = answer
        self.model_errors = 0
        self.model_calls += 1
        cost = self.owner.prices.cost_usd(
            self.client.model, completion.tokens_in, completion.tokens_out
        )
        self._spend(completion.tokens_in + completion.tokens_out, cost)
        self._write(
            ModelCalled(
                turn=self.model_calls,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                cost_usd=round(cost, 6),
                duration_s=round(duration_s, 3),
                finish_reason=completion.finish_reason,
                attempts=completion.attempts,
                usage_reported=completion.usage_reported,
            )
        )
        self._write(MessageAdded(turn=self.model_calls, message=completion.message()))
        spent = (completion.tokens_in, completion.tokens_out, cost)
        parsed = parse_files(completion.content, self.names)
        if isinstance(parsed, dict) and parents:
            # A file the answer leaves out is the first parent's, unchanged.
            parsed = {**plan.kept, **parsed}
        if isinstance(parsed, str) or set(parsed) != set(self.names):
            missing = (
                parsed
                if isinstance(parsed, str)
                else ", ".join(sorted(set(self.names) - set(parsed)))
            )
            return _Proposal(
                turns.new_id(), generation, operation, parents, "unparsed", {}, missing, spent
            )
        files = {name: parsed[name] for name in self.names}
        return self._screen(generation, operation, parents, files, turns, spent)

    def _screen(
        self,
        generation: int,
        operation: Operation,
        parents: list[int],
        files: dict[str, str],
        turns: _Turns,
        spent: tuple[int, int, float] = (0, 0, 0.0),
    ) -> _Proposal:
        """A candidate's files: a duplicate, rejected by a verifier, or sent to be judged."""
        candidate_id = turns.new_id()
        made = _Proposal(candidate_id, generation, operation, parents, "judged", files, "", spent)
        made.digest = _digest(files)
        twin = turns.known.get(made.digest)
        if twin is not None:
            made.outcome, made.twin = "duplicate", twin
            return made
        if self.settings.verifiers and operation != "seed":
            results = verify(
                self.client,
                self.settings.verifiers,
                self.ctx.brief,
                files,
                prices=self.owner.prices,
                timeout_s=self._request_timeout(),
            )
            self.model_calls += len(results)
            self._spend(
                sum(r.tokens_in + r.tokens_out for r in results), sum(r.cost_usd for r in results)
            )
            made.spent = (
                spent[0] + sum(r.tokens_in for r in results),
                spent[1] + sum(r.tokens_out for r in results),
                spent[2] + sum(r.cost_usd for r in results),
            )
            made.verifiers = results
            rejection = rejected_by(results)
            if rejection is not None:
                made.outcome = "rejected"
                made.feedback = f"rejected by the {rejection.name} verifier: {rejection.reason}"
                return made
        turns.known[made.digest] = candidate_id
        made.judgment = self._judging.submit(
            self.bench.judge_files, candidate_id, files, self.owner.name
        )
        return made

    def _take(self, made: _Proposal) -> None:
        """Record a candidate, its judgment awaited (on the search's thread, in candidate order)."""
        fields: dict[str, Any] = {"digest": made.digest, "verifiers": made.verifiers}
        feedback = made.feedback
        if made.twin is not None:
            twin = self.candidates[made.twin]
            feedback = f"the same files as candidate {twin.candidate_id}: {twin.feedback}"
            fields["status"] = twin.status
        if made.judgment is not None:
            judged = made.judgment.result()
            verdict = judged.verdict
            feedback = judged.feedback
            fields.update(
                status=verdict.status if verdict is not None else "judge_error",
                correct=verdict is not None and verdict.passed,
                speedup=verdict.speedup if verdict is not None else None,
                profile=judged.profile,
                judge_calls=judged.judge_calls,
                judge_s=judged.judge_s,
                phases_s=_phases(verdict),
            )
        if made.outcome in ("unparsed", "model_error"):
            fields = {}
        assert made.candidate_id == len(self.candidates), "candidates recorded out of order"
        self._record(
            made.generation,
            made.operation,
            made.parents,
            made.outcome,
            made.files,
            feedback,
            made.spent,
            **fields,
        )

    def _record(
        self,
        generation: int,
        operation: Operation,
        parents: list[int],
        outcome: Outcome,
        files: dict[str, str],
        feedback: str,
        spent: tuple[int, int, float] = (0, 0, 0.0),
        **fields: Any,
    ) -> None:
        candidate_id = len(self.candidates)
        self.log.keep_files(candidate_id, files)
        record = CandidateJudged(
            candidate_id=candidate_id,
            generation=generation,
            operation=operation,
            parents=parents,
            outcome=outcome,
            feedback=feedback,
            files=sorted(files),
            tokens_in=spent[0],
            tokens_out=spent[1],
            cost_usd=round(spent[2], 6),
            **fields,
        )
        self.log.append(record)
        previous = self.best
        self._remember(record, files)
        logger.info(
            "evolve %s: candidate %d (%s of %s) %s %s",
            self.ctx.task.task_id,
            candidate_id,
            operation,
            parents or "-",
            outcome,
            record.status or "",
        )
        if self.best != previous:
            self._write_best()

    def _remember(self, record: CandidateJudged, files: dict[str, str]) -> None:
        self.candidates.append(record)
        self.files[record.candidate_id] = files
        if record.outcome == "judged":
            self.by_digest.setdefault(record.digest, record.candidate_id)
        ranked = self._ranked()
        self.best = ranked[0] if ranked else None

    # Selection.

    def _ranked(self) -> list[int]:
        """Correct judged candidates, best first: highest speedup, then the earliest."""
        correct = [c for c in self.candidates if c.outcome == "judged" and c.correct]
        correct.sort(key=lambda c: (-(c.speedup or 0.0), c.candidate_id))
        return [c.candidate_id for c in correct]

    def _population(self) -> list[int]:
        return self._ranked()[: self.settings.population]

    def _parents(self, rng: random.Random) -> tuple[Operation, list[int]]:
        population = self._population()
        if not population:
            seed = [c.candidate_id for c in self.candidates if c.operation == "seed"]
            return "write", seed[:1]
        if len(population) >= 2 and rng.random() < self.settings.crossover:
            first, second = rng.sample(population, 2)
            return "crossover", sorted((first, second), key=population.index)
        # A tournament of two: the better of two drawn (or the only one).
        drawn = rng.sample(population, min(2, len(population)))
        return "mutate", [min(drawn, key=population.index)]

    def _end_generation(self, generation: int) -> None:
        population = self._population()
        best = self.candidates[population[0]] if population else None
        usage = self._usage()
        self.ended.add(generation)
        self.log.append(
            GenerationEnded(
                generation=generation,
                population=population,
                best_id=best.candidate_id if best else None,
                best_speedup=best.speedup if best else None,
                candidates=len(self.candidates),
                judge_calls=usage.tool_calls,
                tokens=usage.tokens_in + usage.tokens_out,
                cost_usd=usage.cost_usd,
            )
        )

    # Prompts' parts.

    def _parent(self, candidate_id: int) -> Parent:
        record = self.candidates[candidate_id]
        return Parent(
            candidate_id=candidate_id,
            files=self.files[candidate_id],
            feedback=record.feedback,
            profile=record.profile,
        )

    def _failures(self) -> list[CandidateJudged]:
        failed = [
            c
            for c in self.candidates
            if c.operation != "seed" and c.outcome in ("judged", "unparsed", "rejected")
            and not c.correct
        ]  # fmt: skip
        return failed[-FAILURES_SHOWN:]

    @staticmethod
    def _failure(record: CandidateJudged) -> str:
        return f"candidate {record.candidate_id} ({record.outcome}): {record.feedback}"

    # Files.

    def _starting_files(self) -> dict[str, str] | None:
        """The contract's files as the workspace was built (None when one is missing)."""
        files: dict[str, str] = {}
        limit = self.ctx.task.spec.submission.max_bytes
        for name in self.names:
            try:
                data = read_beneath(self.ctx.workspace, name, limit_bytes=limit)
            except (OSError, UnsafeFileError):
                return None
            files[name] = data.decode("utf-8", errors="replace")
        return files

    def _write_best(self) -> None:
        assert self.best is not None
        for name, text in self.files[self.best].items():
            target = self.ctx.workspace / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    # Budgets and usage.

    def _usage(self) -> Usage:
        return Usage(
            wall_s=round(self.owner._clock() - self.started, 3),
            turns=self.model_calls,
            tokens_in=sum(c.tokens_in for c in self.candidates),
            tokens_out=sum(c.tokens_out for c in self.candidates),
            cost_usd=round(sum(c.cost_usd for c in self.candidates), 6),
            tool_calls=sum(c.judge_calls for c in self.candidates),
        )

    def _spend(self, tokens: int, cost_usd: float) -> None:
        # In a turn: one at a time.
        self.spent_tokens += tokens
        self.spent_usd += cost_usd

    def _budget_stop(self) -> tuple[AgentStatus, str] | None:
        """Why no more may be asked or judged, if a budget is spent.

        Tokens and dollars count every model call that has answered, its candidate recorded or
        not; judge calls count recorded candidates (no proposal is planned beyond the calls left
        counting those under way, so none in flight can pass the budget).
        """
        if self.owner._clock() >= self.deadline:
            return "timeout", f"wall-clock budget exhausted; {self._summary()}"
        tokens = self.spent_tokens
        if self.tokens_budget and tokens >= self.tokens_budget:
            return "budget_exhausted", (
                f"token budget of {self.tokens_budget} exhausted ({tokens} used); {self._summary()}"
            )
        if self.cost_budget and self.spent_usd >= self.cost_budget:
            return "budget_exhausted", (
                f"cost budget of ${self.cost_budget:g} exhausted (${self.spent_usd:.4f} used); "
                f"{self._summary()}"
            )
        calls = self.settings.judge_calls
        if calls and self._usage().tool_calls >= calls:
            # The search's own length, like its generations: it ends as planned.
            return "finished", f"judge-call budget of {calls} spent; {self._summary()}"
        return None

    def _errors_stop(self) -> tuple[AgentStatus, str] | None:
        if self.model_errors >= MAX_MODEL_ERRORS:
            return "error", f"the model failed {self.model_errors} times in a row"
        return None

    def _request_timeout(self) -> float:
        return min(max(self.deadline - self.owner._clock(), 1.0), REQUEST_TIMEOUT_S)

    def _retrying(self, attempt: int, error: str, delay: float) -> None:
        # Called from the asking threads.
        self._write(
            ApiErrored(turn=self.model_calls + 1, attempt=attempt, error=error, retry_in_s=delay)
        )

    def _write(self, event: TranscriptEvent) -> None:
        with self._writing:
            self.writer.write(event)

    def _summary(self) -> str:
        judged = sum(c.outcome == "judged" for c in self.candidates)
        text = f"{len(self.candidates)} candidates, {judged} judged"
        if self.best is None:
            return text + "; no correct candidate (the starting files stay)"
        best = self.candidates[self.best]
        speed = f", speedup {best.speedup:.3f}x" if best.speedup is not None else ""
        return text + f"; best: candidate {best.candidate_id} ({best.operation}{speed})"


class _CountingJudge:
    """The judge function one candidate's toolbox calls: the warm `Judge`, counted and timed."""

    def __init__(self, judge: Judge, *, fixed_seed: int | None = None) -> None:
        """Judge with the toolbox's seed per submission, or `fixed_seed` for every one."""
        self._judge = judge
        self._fixed_seed = fixed_seed
        self.last: Verdict | None = None
        self.calls = 0
        self.seconds = 0.0

    def __call__(
        self,
        task: Task,
        folder: Path,
        *,
        device: str,
        configs: ConfigSet,
        seed: int,
        mode: Mode,
    ) -> Verdict:
        """Judge as `gauntlet.judge.judge` would; `device` is the judge's own (the attempt's)."""
        started = time.monotonic()
        self.calls += 1
        try:
            verdict = self._judge.eval(
                task,
                folder,
                configs=configs,
                mode=mode,
                seed=seed if self._fixed_seed is None else self._fixed_seed,
            )
        finally:
            self.seconds += time.monotonic() - started
        self.last = verdict
        return verdict


def _has_tool(toolbox: Toolbox, name: str) -> bool:
    return any(spec.name == name for spec in toolbox.specs())


def _phases(verdict: Verdict | None) -> dict[str, float]:
    """A verdict's seconds per phase, to the millisecond, for the search log."""
    return {k: round(v, 3) for k, v in verdict.phases_s.items()} if verdict is not None else {}


def _digest(files: dict[str, str]) -> str:
    hasher = hashlib.sha256()
    for name in sorted(files):
        hasher.update(name.encode() + b"\0" + hashlib.sha256(files[name].encode()).digest())
    return hasher.hexdigest()


def _tighter(option: float, budget: float) -> float:
    """The smaller of two limits where 0 means none."""
    limits = [value for value in (option, budget) if value]
    return min(limits) if limits else 0


def settings_from_options(options: dict[str, str]) -> SearchSettings:
    """The search settings of an agent spec's options.

    Raises:
        ConfigError: An option's value is not a number where one is due, or names an unknown
            verifier.
    """

    def count(key: str, default: int, *, zero: bool = False) -> int:
        raw = options.get(key)
        if raw is None:
            return default
        if not raw.isdigit() or (int(raw) == 0 and not zero):
            least = "0 or more" if zero else "1 or more"
            raise ConfigError(
                f"option '{key}' of agent 'evolve' must be a whole number, {least}, not '{raw}'"
            )
        return int(raw)

    verifiers: list[VerifierName] = []
    for name in filter(None, options.get("verifiers", "").split("+")):
        if name not in VERIFIER_NAMES:
            raise ConfigError(
                f"unknown verifier '{name}' in option 'verifiers' of agent 'evolve' "
                f"(known: {', '.join(VERIFIER_NAMES)}); join several with '+'"
            )
        verifiers.append(name)
    crossover = options.get("crossover", "0.3")
    try:
        share = float(crossover)
    except ValueError:
        share = -1.0
    if not 0 <= share <= 1:
        raise ConfigError(
            f"option 'crossover' of agent 'evolve' must be a share from 0 to 1, not '{crossover}'"
        )
    return SearchSettings(
        generations=count("generations", 4, zero=True),
        population=count("population", 4),
        proposals=count("proposals", 4),
        parallel=count("parallel", 1),
        judges=count("judges", 1) if "judges" in options else None,
        judge_calls=count("judge_calls", 0, zero=True),
        tokens=count("tokens", 0, zero=True),
        cost_usd=number("evolve", "dollars", options["dollars"]) if "dollars" in options else 0,
        wall_s=number("evolve", "wall", options["wall"]) if "wall" in options else None,
        verifiers=tuple(verifiers),
        crossover=share,
        time_cap_s=number("evolve", "time_cap", options.get("time_cap", str(DEFAULT_TIME_CAP_S))),
        inputs=_inputs(options.get("inputs", "fresh")),
    )


def _inputs(value: str) -> Literal["fresh", "fixed"]:
    if value == "fresh":
        return "fresh"
    if value == "fixed":
        return "fixed"
    raise ConfigError(f"option 'inputs' of agent 'evolve' must be fresh or fixed, not '{value}'")


@agent("evolve")
def make_evolve(argument: str) -> EvolveAgent:
    """`evolve[:generations=N,population=N,proposals=N,judge_calls=N,verifiers=A+B,...]`."""
    options = parse_options("evolve", argument, OPTIONS)
    prices = PriceTable.load(Path(options["prices"])) if "prices" in options else None
    return EvolveAgent(
        settings_from_options(options),
        prices=prices,
        max_retries=count_retries(options.get("retries", str(MAX_RETRIES))),
    )


def count_retries(raw: str) -> int:
    """The `retries` option's value.

    Raises:
        ConfigError: It is not a whole number.
    """
    if not raw.isdigit():
        raise ConfigError(f"option 'retries' of agent 'evolve' must be a whole number, not '{raw}'")
    return int(raw)
