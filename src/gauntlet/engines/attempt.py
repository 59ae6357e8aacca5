"""One attempt's work in two stages that an engine may place apart: the agent, then the judge.

The agent stage builds the workspace in a private temporary folder, runs the agent, and returns
what it left (`AgentOutcome`): the contract's files as it found them, the workspace's changes,
and the files the run directory keeps (transcript, the agent's own files, submission, the
workspace on request) as one archive. The judge stage rebuilds the submission in a folder of
its own and judges it with the run's secret seed, which only this stage receives. The runner
writes what comes back (`AttemptOutcome`), so both stages can run on any machine. The task's own
files (baseline, expert) are judged once per run by the local engine on a device whose verdicts
cannot vary (`cpu`, `sim:*`); a later attempt that submits them gets that verdict, marked
(`verdicts.py`).

One exception, on the runner's own machine (`AttemptSpec.attempt_dir`, the local engine): the
agent keeps its files in the attempt's folder of the run directory as it works, so a search's
state (`SEARCH_STATE_DIR`) outlives a killed run and the resumed attempt goes on from it.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gauntlet import process
from gauntlet.agents.base import (
    SEARCH_STATE_DIR,
    Agent,
    AgentContext,
    AgentResult,
    Budget,
    ModelSettings,
    make_agent,
)
from gauntlet.agents.child import run_in_child
from gauntlet.engines.bundle import pack_folder
from gauntlet.engines.verdicts import TrustedVerdicts, reuse_key
from gauntlet.errors import ConfigError, GauntletError
from gauntlet.judge import judge
from gauntlet.judge.verdict import Verdict
from gauntlet.store import AttemptRecord, AttemptStatus, Placement, now
from gauntlet.task import Task

logger = logging.getLogger(__name__)

#: Names of the files an attempt keeps in its folder of the run directory.
TRANSCRIPT_FILE = "transcript.jsonl"
SUBMISSION_DIR = "submission"
WORKSPACE_DIR = "workspace"


class AttemptSpec(BaseModel):
    """What one attempt is, as an engine's worker receives it (never the run's secret seed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    attempt_id: str
    agent: str
    index: int
    """Which of the `--attempts K` repetitions this is (the agent's seed)."""
    device: str
    model: ModelSettings
    budget: Budget
    keep_workspace: bool = False
    engine: str = "local"
    """The engine that places the attempt, for its record's `placement`."""
    attempt_dir: Path | None = None
    """The attempt's folder in the run directory, where the agent stage runs on the runner's
    machine: the agent's files go there as it works (a search's state kept from a killed try),
    and none come back as bytes. None: a scratch folder, sent back as an archive."""


class JudgeSettings(BaseModel):
    """How the judge stage judges: the run's secret seed and the judge options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    """The run's secret seed; the judge stage gets it, the agent stage never does."""
    time_cap_s: float
    compile_reference: bool


SubmittedKind = Literal["file", "link", "missing", "other"]


class SubmittedFile(BaseModel):
    """One contract file as the agent left it, for a judge on another machine."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: SubmittedKind
    """`link` (it or a folder above it in the workspace), `other` (not a plain file)."""
    data: bytes = b""
    """A file's first `max_bytes + 1` bytes (the judge refuses more), or a link's target."""


class AgentOutcome(BaseModel):
    """What the agent stage hands the judge stage."""

    model_config = ConfigDict(frozen=True)

    started_at: datetime
    result: AgentResult
    changes: dict[str, str]
    submission: list[SubmittedFile]
    kept: list[str]
    """Contract files kept under `submission/` (plain files only)."""
    files: bytes | None
    """The attempt folder's files (transcript, submission, workspace) as an archive; None when
    they are in the run directory already (`AttemptSpec.attempt_dir`)."""
    host: str


class AttemptOutcome(BaseModel):
    """A finished attempt: its record and the files its run-directory folder keeps."""

    model_config = ConfigDict(frozen=True)

    record: AttemptRecord
    files: bytes | None
    """An archive of `bundle.pack_folder`, unpacked by the runner into `attempts/<id>/`; None
    when the files are in place already."""


def make_attempt(
    task: Task,
    spec: AttemptSpec,
    settings: JudgeSettings,
    *,
    verdicts: TrustedVerdicts | None = None,
) -> AttemptOutcome:
    """Both stages here, one after the other (the local engine)."""
    return judge_stage(task, spec, settings, agent_stage(task, spec), verdicts=verdicts)


def agent_stage(task: Task, spec: AttemptSpec) -> AgentOutcome:
    """Build the workspace, run the agent, and take what it left. Never raises for the agent."""
    from gauntlet.workspace import build_workspace, workspace_changes

    started = now()
    budget = spec.budget
    if task.spec.budget.turns and not budget.turns:
        budget = budget.model_copy(update={"turns": task.spec.budget.turns})
    scratch = Path(tempfile.mkdtemp(prefix=f"gauntlet-ws-{spec.attempt_id[:40]}-"))
    try:
        if spec.attempt_dir is None:
            folder = scratch / "attempt"
            folder.mkdir()
        else:
            folder = spec.attempt_dir
            _clear_leftovers(folder)
            folder.mkdir(parents=True, exist_ok=True)
        workspace = build_workspace(task, scratch / "workspace", device=spec.device, budget=budget)
        ctx = AgentContext(
            task=task,
            workspace=workspace.path,
            brief=workspace.brief,
            budget=budget,
            model=spec.model,
            device=spec.device,
            transcript=folder / TRANSCRIPT_FILE,
            seed=spec.index,
        )
        result = _run_agent(spec, ctx)
        changes = workspace_changes(workspace)
        submission = [_submitted(workspace.path, name, task) for name in task.spec.submission.files]
        kept = _keep_submission(task, workspace.path, folder / SUBMISSION_DIR)
        if spec.keep_workspace:
            shutil.copytree(workspace.path, folder / WORKSPACE_DIR, symlinks=True)
        return AgentOutcome(
            started_at=started,
            result=result,
            changes=changes,
            submission=submission,
            kept=kept,
            files=pack_folder(folder) if spec.attempt_dir is None else None,
            host=socket.gethostname(),
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def judge_stage(
    task: Task,
    spec: AttemptSpec,
    settings: JudgeSettings,
    agent: AgentOutcome,
    *,
    judge_gpu: str | None = None,
    verdicts: TrustedVerdicts | None = None,
) -> AttemptOutcome:
    """Judge what the agent left and make the attempt's record.

    `judge_gpu` names the physical GPU an engine gave this stage, for the record. `verdicts`:
    the run's kept verdicts of the task's own files (`verdicts.py`); None judges every time.
    """
    result = agent.result
    verdict = None
    status: AttemptStatus
    reason = ""
    contract = set(task.spec.submission.files)
    if result.status != "finished" and not contract & set(agent.changes):
        # It never ran, crashed or was stopped before writing its submission: the files are
        # the untouched template, whose verdict would be the baseline's, not the agent's.
        status = "agent_error"
        reason = (
            f"the agent ended ({result.status}) without changing its submission: {result.message}"
        )
    else:
        with tempfile.TemporaryDirectory(prefix=f"gauntlet-sub-{spec.attempt_id[:40]}-") as tmp:
            folder = Path(tmp) / SUBMISSION_DIR
            _rebuild_submission(agent.submission, folder)
            plain = {f.name: f.data for f in agent.submission if f.kind == "file"}
            key = reuse_key(
                task,
                plain if len(plain) == len(agent.submission) else None,
                device=spec.device,
                seed=settings.seed,
                time_cap_s=settings.time_cap_s,
                compile_reference=settings.compile_reference,
            )

            def judged() -> Verdict:
                return judge(
                    task,
                    folder,
                    device=spec.device,
                    seed=settings.seed,
                    mode="final",
                    time_cap_s=settings.time_cap_s,
                    compile_reference=settings.compile_reference,
                )

            try:
                if verdicts is None:
                    verdict = judged()
                else:
                    verdict = verdicts.judged(key, spec.attempt_id, judged)
                status, reason = verdict.status, verdict.reason
            except GauntletError as err:
                logger.error("judge failed on %s: %s", spec.attempt_id, err)
                status, reason = "judge_error", f"the judge failed: {err}"
        if result.status == "error" and verdict is not None and verdict.status == "no_submission":
            status, reason = "agent_error", f"the agent failed: {result.message}"
    record = attempt_record(
        task,
        spec,
        status=status,
        reason=reason,
        verdict=verdict,
        usage=result.usage,
        agent_status=result.status,
        agent_message=result.message,
        sandbox=result.sandbox,
        started_at=agent.started_at,
        finished_at=now(),
        workspace_changes=agent.changes,
        submission_files=agent.kept,
        placement=Placement(
            engine=spec.engine,
            agent_host=agent.host,
            judge_host=socket.gethostname() if verdict is not None else None,
            judge_gpu=judge_gpu,
        ),
    )
    return AttemptOutcome(record=record, files=agent.files)


def attempt_record(task: Task, spec: AttemptSpec, **outcome: Any) -> AttemptRecord:
    """The record of an attempt of `task` as `spec` says, with its outcome's fields."""
    return AttemptRecord(
        run_id=spec.run_id,
        attempt_id=spec.attempt_id,
        task_id=task.task_id,
        track=task.spec.track,
        level=task.spec.level,
        platform=task.spec.platform,
        agent=spec.agent,
        model=spec.model.model,
        index=spec.index,
        **outcome,
    )


def _run_agent(spec: AttemptSpec, ctx: AgentContext) -> AgentResult:
    here = _in_process(spec.agent)
    if here is not None:
        try:
            return here.run(ctx)
        except OSError as err:  # the task's files unreadable, the workspace unwritable
            return AgentResult(status="error", message=f"the agent failed: {err}")
    result = run_in_child(spec.agent, ctx)
    if result.status == "error" and not process.is_stopping():
        # (An agent killed by a stopping run is not news: the run says it stopped.)
        logger.warning("agent %s failed on %s: %s", spec.agent, spec.attempt_id, result.message)
    if result.sandbox is None and result.status in ("timeout", "error"):
        # A child killed at its budget, or dead, reports nothing: its sandbox is the agent's,
        # resolved here as the child resolved it (agents that start no process have none).
        kind = getattr(make_agent(spec.agent), "sandbox_kind", None)
        result = result.model_copy(update={"sandbox": kind})
    return result


def _in_process(spec: str) -> Agent | None:
    """The agent, where it declares that it runs in the harness (`in_process`), else None.

    Only agents that copy the task's own files do (`baseline`, `expert`): every other agent
    runs in a child process, killed from outside at its wall budget (`agents/child.py`).
    """
    try:
        made = make_agent(spec)
    except ConfigError:
        return None  # the child reports it as the attempt's error
    return made if getattr(made, "in_process", False) is True else None


def _submitted(workspace: Path, name: str, task: Task) -> SubmittedFile:
    """One contract file as the judge would find it in the workspace (links never followed)."""
    path = workspace / name
    for part in [path, *path.parents]:
        if not part.is_relative_to(workspace) or part == workspace:
            break
        if part.is_symlink():
            return SubmittedFile(name=name, kind="link", data=os.fsencode(os.readlink(part)))
    if not path.exists():
        return SubmittedFile(name=name, kind="missing")
    if not path.is_file():
        return SubmittedFile(name=name, kind="other")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return SubmittedFile(name=name, kind="other")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(task.spec.submission.max_bytes + 1)
    return SubmittedFile(name=name, kind="file", data=data)


def _rebuild_submission(files: list[SubmittedFile], folder: Path) -> None:
    """Lay the contract files out as the agent left them, for the judge's own checks."""
    folder.mkdir(parents=True)
    for item in files:
        path = folder / item.name
        path.parent.mkdir(parents=True, exist_ok=True)
        if item.kind == "file":
            path.write_bytes(item.data)
        elif item.kind == "link":
            # Never followed: the judge refuses a link whatever it points at.
            os.symlink(os.fsdecode(item.data), path)
        elif item.kind == "other":
            path.mkdir()


def _clear_leftovers(folder: Path) -> None:
    """Remove what an attempt that never got recorded left, but a search agent's state.

    The state (`SEARCH_STATE_DIR`) lets a search killed with its run go on when it resumes.
    """
    if not folder.exists():
        return
    for entry in folder.iterdir():
        if entry.name == SEARCH_STATE_DIR and entry.is_dir() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _keep_submission(task: Task, workspace: Path, dest: Path) -> list[str]:
    kept = []
    for name in task.spec.submission.files:
        source = workspace / name
        if source.is_file() and not source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            kept.append(name)
    return kept
