"""The `evolve` agent's search log: every candidate and generation, kept in the run directory.

`<attempt folder>/search/` (`SEARCH_STATE_DIR`, kept when a killed run resumes) holds
`search.jsonl`, one typed record a line (`SearchStarted`, `CandidateJudged`,
`GenerationEnded`, each with `kind` and `schema_version`, read through one union), appended and
fsynced as each happens (candidates in id order, whichever judgment ended first), and
`candidates/<id>/` with each candidate's files. The agent resumes
from it; the report reads the progress per generation (`generation_rows`) from it.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gauntlet.agents.base import SEARCH_STATE_DIR
from gauntlet.agents.verifiers import VerifierResult
from gauntlet.errors import RecordError

logger = logging.getLogger(__name__)

SEARCH_SCHEMA_VERSION = 1
LOG_FILE = "search.jsonl"
CANDIDATES_DIR = "candidates"

#: How a candidate was made: the starting files judged as they are, written with no parent,
#: changed from one parent, or combined from two.
Operation = Literal["seed", "write", "mutate", "crossover"]
#: What became of it: judged; its answer held no usable files; a verifier rejected it; it
#: repeated an earlier candidate's files (that verdict stands, no judge call); the model failed.
Outcome = Literal["judged", "unparsed", "rejected", "duplicate", "model_error"]


def _now() -> datetime:
    return datetime.now(UTC)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SEARCH_SCHEMA_VERSION
    time: datetime = Field(default_factory=_now)


class SearchStarted(_Record):
    """A search session began (a fresh one, or one resumed after a kill)."""

    kind: Literal["search_started"] = "search_started"
    task_id: str
    model: str
    generations: int
    population: int
    proposals: int
    """Proposals per generation."""
    judge_calls: int
    """The judge-call budget (0: unlimited)."""
    verifiers: list[str]
    resumed_from: int = 0
    """Candidates already in the log when this session began."""
    parallel: int = 1
    """Proposals asked of the model at once."""
    judges: int = 1
    """Candidates judged at once (a log older than these fields: one of each)."""


class CandidateJudged(_Record):
    """One candidate: its lineage, what the verifiers and the judge said, what it cost."""

    kind: Literal["candidate"] = "candidate"
    candidate_id: int
    generation: int
    operation: Operation
    parents: list[int] = Field(default_factory=list)
    outcome: Outcome
    status: str | None = None
    """The judge's status in feedback mode (visible configs), or that of the repeated one."""
    correct: bool = False
    """All visible configs correct: the hard gate of selection."""
    speedup: float | None = None
    """Geometric mean speedup over the baseline on the visible configs (None: untimed)."""
    feedback: str = ""
    """What the feedback tools answered about it (as an agent sees it), or why it was not
    judged; shown to the model when it is a parent."""
    profile: str = ""
    """The simulator's profile of the first visible config (accelerator tasks)."""
    verifiers: list[VerifierResult] = Field(default_factory=list)
    digest: str = ""
    """sha256 over its files (names and contents)."""
    files: list[str] = Field(default_factory=list)
    """Its file names, kept under `candidates/<id>/`."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    """Of the proposal and the verifiers together."""
    judge_calls: int = 0
    judge_s: float = 0.0
    phases_s: dict[str, float] = Field(default_factory=dict)
    """Where its judgment's time went (the verdict's `phases_s`: spawn, imports, reference,
    the configs' first calls, comparisons, timing, teardown); empty when it was not judged."""


class GenerationEnded(_Record):
    """A generation's selection: the population it left and the search's totals so far."""

    kind: Literal["generation"] = "generation"
    generation: int
    population: list[int]
    """Candidate ids selected, best first."""
    best_id: int | None
    best_speedup: float | None
    candidates: int
    judge_calls: int
    tokens: int
    cost_usd: float


SearchRecord = Annotated[
    SearchStarted | CandidateJudged | GenerationEnded, Field(discriminator="kind")
]
_ADAPTER: TypeAdapter[SearchRecord] = TypeAdapter(SearchRecord)


class SearchLog:
    """The search folder of one attempt: the log and the candidates' files."""

    def __init__(self, attempt_dir: Path) -> None:
        self.root = Path(attempt_dir) / SEARCH_STATE_DIR
        self.path = self.root / LOG_FILE

    def records(self) -> list[SearchRecord]:
        """Every record so far; a torn last line (a kill mid-write) is left out.

        Raises:
            RecordError: A line other than the last cannot be read.
        """
        if not self.path.is_file():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        records: list[SearchRecord] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(_ADAPTER.validate_json(line))
            except (ValidationError, json.JSONDecodeError) as err:
                if number == len(lines):
                    logger.warning("search log '%s': torn last line %d skipped", self.path, number)
                    break
                raise RecordError(f"{self.path}:{number}: not a search record: {err}") from err
        return records

    def append(self, record: SearchRecord) -> None:
        """Append one record and fsync it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(record.model_dump_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def keep_files(self, candidate_id: int, files: dict[str, str]) -> None:
        """Keep a candidate's files (before its record is appended, so a record has its files)."""
        folder = self.root / CANDIDATES_DIR / str(candidate_id)
        for name, text in files.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def files(self, record: CandidateJudged) -> dict[str, str]:
        """A recorded candidate's files.

        Raises:
            RecordError: A file of the record is missing.
        """
        folder = self.root / CANDIDATES_DIR / str(record.candidate_id)
        try:
            return {name: (folder / name).read_text(encoding="utf-8") for name in record.files}
        except OSError as err:
            raise RecordError(
                f"candidate {record.candidate_id} of '{self.root}' lost its files: {err}"
            ) from err


class GenerationRow(BaseModel):
    """One generation as the report shows it."""

    model_config = ConfigDict(frozen=True)

    generation: int
    candidates: int
    """Candidates made in this generation."""
    judged: int
    correct: int
    best_speedup: float | None
    """The best selected candidate's speedup after this generation."""
    judge_calls: int
    """Judge calls so far."""
    judge_s: float
    """Seconds of judging so far (for `autotune`, its whole cost)."""
    tokens: int
    cost_usd: float


def generation_rows(attempt_dir: Path) -> list[GenerationRow]:
    """The search's progress per generation (none where the attempt holds no search log).

    Taken from the candidates, so a generation a budget or a kill cut short is shown too.
    """
    try:
        records = SearchLog(attempt_dir).records()
    except (OSError, RecordError) as err:
        logger.warning("cannot read the search log of '%s': %s", attempt_dir, err)
        return []
    made = [r for r in records if isinstance(r, CandidateJudged)]
    rows: list[GenerationRow] = []
    for number in sorted({c.generation for c in made}):
        now = [c for c in made if c.generation == number]
        so_far = [c for c in made if c.generation <= number]
        speeds = [
            c.speedup
            for c in so_far
            if c.outcome == "judged" and c.correct and c.speedup is not None
        ]
        rows.append(
            GenerationRow(
                generation=number,
                candidates=len(now),
                judged=sum(c.outcome == "judged" for c in now),
                correct=sum(c.outcome == "judged" and c.correct for c in now),
                best_speedup=max(speeds) if speeds else None,
                judge_calls=sum(c.judge_calls for c in so_far),
                judge_s=round(sum(c.judge_s for c in so_far), 3),
                tokens=sum(c.tokens_in + c.tokens_out for c in so_far),
                cost_usd=round(sum(c.cost_usd for c in so_far), 6),
            )
        )
    return rows
