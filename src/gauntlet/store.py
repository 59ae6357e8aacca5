"""The run directory: `run.json`, append-only `attempts.jsonl`, and `attempts/<attempt_id>/`.

Every line of `attempts.jsonl` is one `AttemptRecord` with `kind` and `schema_version`, appended
and flushed (and fsynced) as soon as its attempt ends, so killing the orchestrator at any moment
loses no finished attempt. A torn last line (the process died mid-write) is skipped on reading.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gauntlet.agents.base import Budget, Usage
from gauntlet.errors import ConfigError, RecordError
from gauntlet.judge.verdict import Status, Verdict

logger = logging.getLogger(__name__)

RECORD_SCHEMA_VERSION = 1
#: The file a running process holds locked in its run directory (it holds the pid).
LOCK_FILE = ".lock"
#: `judge_error`: the judge's own machinery (or the task's trusted code) failed on this attempt;
#: recorded so that no result is lost, and counted as not passing.
AttemptStatus = Status | Literal["agent_error", "judge_error"]


def now() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


RunState = Literal["running", "interrupted", "finished"]


class RunInfo(BaseModel):
    """`run.json`: how the run was configured and where it ran."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["run"] = "run"
    schema_version: int = RECORD_SCHEMA_VERSION
    run_id: str
    created_at: datetime
    suite: str | None = None
    task_ids: list[str]
    agents: list[str]
    model: str | None = None
    device: str
    attempts: int = 1
    budget: Budget
    seed_hash: str
    """sha256 of the run's secret seed: proves which seed was used without revealing it."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Python, library versions, git revision, host, device and driver."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The run's options as given (all but the secret seed), so `--resume` can continue it."""
    state: RunState | None = None
    """How the run stands: `running` (or killed while it ran), `interrupted` (stopped with
    Ctrl-C), `finished` (every planned attempt recorded); None in runs made before it was kept."""
    engines: list[str] = Field(default_factory=lambda: ["local"])
    """The engines that made its attempts (`local`, `ray`), in the order they ran: a run
    resumed on another engine names both."""


class Placement(BaseModel):
    """Where an attempt ran: which engine placed it, on which machines and GPU."""

    model_config = ConfigDict(extra="forbid")

    engine: str = "local"
    agent_host: str | None = None
    """The machine the agent worked on."""
    judge_host: str | None = None
    """The machine that judged it (None when nothing was judged)."""
    judge_gpu: str | None = None
    """The physical GPU the judgment held, as the engine assigned it (`CUDA_VISIBLE_DEVICES`
    entry); None where the engine did not choose one."""


class AttemptRecord(BaseModel):
    """One finished attempt: one agent on one task."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["attempt"] = "attempt"
    schema_version: int = RECORD_SCHEMA_VERSION
    run_id: str
    attempt_id: str
    """`<task id with / as __>--<agent>--<index>`: stable, so resume can skip it."""
    task_id: str
    track: str
    level: int
    platform: str | None = None
    agent: str
    model: str | None = None
    index: int = 0
    """Which of the `--attempts K` repetitions this is."""
    status: AttemptStatus
    reason: str = ""
    verdict: Verdict | None = None
    usage: Usage = Usage()
    agent_status: str = ""
    """How the agent ended (`finished`, `budget_exhausted`, `timeout`, `error`)."""
    agent_message: str = ""
    sandbox: str | None = None
    """How the agent's own processes were contained (`bwrap`, `confine`, `docker`, or `none`:
    unsandboxed); None for an agent that starts no process of its own."""
    started_at: datetime
    finished_at: datetime
    workspace_changes: dict[str, str] = Field(default_factory=dict)
    """Path -> `added` / `modified` / `deleted`, against the workspace as built."""
    submission_files: list[str] = Field(default_factory=list)
    """Files of the submission kept under `attempts/<attempt_id>/submission/`."""
    placement: Placement | None = None
    """Where it ran; None in runs made before it was kept."""


#: The longest attempt id kept whole: an id is a folder name (at most 255 bytes on Linux), and a
#: `generic:` agent's spec holds its whole command line, paths included.
MAX_ATTEMPT_ID = 120


def attempt_id_for(task_id: str, agent: str, index: int) -> str:
    """The stable id of an attempt: readable, and a folder name whatever the agent's spec.

    An id longer than `MAX_ATTEMPT_ID` keeps the start of the agent's spec and a hash of all
    of it, so two agents that differ only late in a long command still get two ids.
    """
    safe_agent = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in agent)
    task = task_id.replace("/", "__")
    whole = f"{task}--{safe_agent}--{index}"
    if len(whole) <= MAX_ATTEMPT_ID:
        return whole
    digest = hashlib.sha256(agent.encode()).hexdigest()[:12]
    room = max(MAX_ATTEMPT_ID - len(task) - len(str(index)) - len(digest) - 6, 8)
    return f"{task}--{safe_agent[:room]}-{digest}--{index}"


class RunStore:
    """A run directory, for writing and reading."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def attempts_path(self) -> Path:
        """The append-only attempt log."""
        return self.root / "attempts.jsonl"

    def attempt_dir(self, attempt_id: str) -> Path:
        """The folder of one attempt's files."""
        return self.root / "attempts" / attempt_id

    def create(self, info: RunInfo) -> None:
        """Create the directory and write `run.json` (refuses to overwrite another run)."""
        if (self.root / "run.json").exists():
            raise RecordError(
                f"run directory '{self.root}' already holds a run; use '--resume {self.root}' "
                "to continue it or choose another '--out'"
            )
        try:
            (self.root / "attempts").mkdir(parents=True, exist_ok=True)
            (self.root / "run.json").write_text(info.model_dump_json(indent=2) + "\n")
            self.attempts_path.touch()
        except OSError as err:
            raise RecordError(f"cannot write run directory '{self.root}': {err}") from err

    def info(self) -> RunInfo:
        """Read `run.json`."""
        path = self.root / "run.json"
        try:
            return RunInfo.model_validate_json(path.read_text())
        except FileNotFoundError as err:
            raise ConfigError(f"'{self.root}' is not a run directory (no run.json)") from err
        except ValidationError as err:
            raise RecordError(f"{path}: not a valid run record: {err}") from err

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory for this process: a second one gets a clear error.

        Raises:
            ConfigError: Another process is running this run directory.
        """
        path = self.root / LOCK_FILE
        try:
            handle = path.open("a+", encoding="utf-8")
        except OSError as err:
            raise RecordError(f"cannot open the lock of run '{self.root}': {err}") from err
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                raise ConfigError(
                    f"run directory '{self.root}' is in use by another gauntlet process "
                    f"(pid {holder}); wait for it to end, or stop it and resume"
                ) from None
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def repair(self) -> str | None:
        """Set aside a torn last line of `attempts.jsonl` (a run killed mid-write).

        The line moves to `torn.jsonl` and the log is rewritten without it, so later appends
        start on a line of their own and that attempt is made again. Returns what was done,
        or None when the log was whole.
        """
        try:
            data = self.attempts_path.read_bytes()
        except OSError as err:
            raise RecordError(f"cannot read '{self.attempts_path}': {err}") from err
        complete, _, tail = data.rpartition(b"\n")
        if tail:
            torn = tail  # the last write was cut before its newline
        else:
            torn = complete.rpartition(b"\n")[2]
            if not torn.strip():
                return None
            try:
                read_record(torn.decode("utf-8"))
                return None
            except (ValidationError, json.JSONDecodeError, UnicodeDecodeError):
                pass
        kept = data[: len(data) - len(torn) - (0 if tail else 1)]
        try:
            with (self.root / "torn.jsonl").open("ab") as handle:
                handle.write(torn + b"\n")
            temporary = self.attempts_path.with_suffix(".jsonl.tmp")
            with temporary.open("wb") as handle:
                handle.write(kept)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.attempts_path)
        except OSError as err:
            raise RecordError(f"cannot repair '{self.attempts_path}': {err}") from err
        message = (
            f"{self.attempts_path}: a torn last line ({len(torn)} bytes) was moved to torn.jsonl; "
            "its attempt will be made again"
        )
        logger.warning("%s", message)
        return message

    def set_state(self, state: RunState) -> None:
        """Record in `run.json` how the run stands (rewritten whole, then renamed over)."""
        self._write_info(self.info().model_copy(update={"state": state}))

    def _write_info(self, info: RunInfo) -> None:
        path = self.root / "run.json"
        temporary = path.with_suffix(".json.tmp")
        try:
            temporary.write_text(info.model_dump_json(indent=2) + "\n")
            os.replace(temporary, path)
        except OSError as err:
            raise RecordError(f"cannot update '{path}': {err}") from err

    def add_engine(self, engine: str) -> None:
        """Record in `run.json` that `engine` makes (some of) the run's attempts."""
        info = self.info()
        if info.engines[-1:] != [engine]:
            self._write_info(info.model_copy(update={"engines": [*info.engines, engine]}))

    def write_attempt_files(self, attempt_id: str, archive: bytes) -> None:
        """Put an attempt's files (an archive of `engines.bundle.pack_folder`) in its folder.

        Leftovers of an attempt made before and never recorded are replaced.
        """
        from gauntlet.engines.bundle import unpack

        folder = self.attempt_dir(attempt_id)
        try:
            if folder.exists():
                shutil.rmtree(folder)
        except OSError as err:
            raise RecordError(f"cannot clear the attempt folder '{folder}': {err}") from err
        unpack(archive, folder)

    def append(self, record: AttemptRecord) -> None:
        """Append one attempt and make it durable before returning."""
        line = record.model_dump_json() + "\n"
        try:
            with self.attempts_path.open("a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as err:
            raise RecordError(f"cannot append to '{self.attempts_path}': {err}") from err

    def attempts(self) -> list[AttemptRecord]:
        """Every recorded attempt, in order; a torn final line is skipped with a warning."""
        if not self.attempts_path.exists():
            raise RecordError(f"'{self.root}' is not a run directory (no attempts.jsonl)")
        lines = self.attempts_path.read_text(encoding="utf-8").splitlines()
        records: list[AttemptRecord] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(read_record(line))
            except (ValidationError, json.JSONDecodeError) as err:
                if number == len(lines):
                    logger.warning("%s:%d: skipping a torn last line", self.attempts_path, number)
                    continue
                raise RecordError(f"{self.attempts_path}:{number}: invalid record: {err}") from err
        return records

    def supersede(self, attempt_ids: set[str]) -> None:
        """Move these attempts' records to `superseded.jsonl`, so that they are made again.

        For `--resume --redo` after a fix: the old records are kept, out of the scored log. The
        log is rewritten to a temporary file and renamed over, so a crash leaves one or the
        other whole.
        """
        lines = self.attempts_path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept: list[str] = []
        moved: list[str] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                record_id = read_record(line).attempt_id
            except (ValidationError, json.JSONDecodeError):
                record_id = None  # a torn last line: dropped along with its attempt
            (moved if record_id is None or record_id in attempt_ids else kept).append(line)
        temporary = self.attempts_path.with_suffix(".jsonl.tmp")
        try:
            with (self.root / "superseded.jsonl").open("a", encoding="utf-8") as handle:
                handle.writelines(m if m.endswith("\n") else m + "\n" for m in moved)
                handle.flush()
                os.fsync(handle.fileno())
            with temporary.open("w", encoding="utf-8") as handle:
                handle.writelines(kept)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.attempts_path)
        except OSError as err:
            raise RecordError(f"cannot rewrite '{self.attempts_path}': {err}") from err

    def done_ids(self) -> set[str]:
        """Ids of attempts already recorded (for `--resume`)."""
        return {r.attempt_id for r in self.attempts()}


def read_record(line: str) -> AttemptRecord:
    """Parse one JSONL line, migrating older schema versions here (none yet)."""
    return AttemptRecord.model_validate_json(line)
