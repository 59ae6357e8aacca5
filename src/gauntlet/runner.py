"""A run: tasks x agents x attempts, each attempt judged and appended to the run directory.

Per attempt: build the workspace, let the agent work in it, judge the contract's files from it
with the run's secret seed, keep the submission and transcript under `attempts/<id>/`, and
append the record. Attempts run concurrently on a thread pool (`--parallel N`): the heavy work
happens in child processes (agents, judge workers), so threads only wait. `resume_run` skips
attempts already recorded, so a killed run loses no finished attempt.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import platform
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gauntlet import devices, process, settings, suites
from gauntlet.agents.base import AgentContext, AgentResult, Budget, ModelSettings, make_agent
from gauntlet.agents.child import run_in_child
from gauntlet.errors import ConfigError, GauntletError, RecordError, RunInterrupted
from gauntlet.judge import judge
from gauntlet.judge.seeds import seed_hash
from gauntlet.judge.service import Judge
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.store import AttemptRecord, RunInfo, RunStore, attempt_id_for, now
from gauntlet.task import Task

logger = logging.getLogger(__name__)

SECRET_FILE = "secret-seed"


class RunConfig(BaseModel):
    """What to run; the CLI's `run` options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str | None = None
    pattern: str | list[str] | None = None
    """Globs over task ids (`--tasks`, repeatable): a task is run when any matches."""
    track: str | None = None
    agents: list[str] = Field(default_factory=lambda: ["baseline", "expert"], min_length=1)
    model: ModelSettings = ModelSettings()
    device: str | None = None
    """None: each task gets the best device here that it can run on."""
    attempts: int = Field(default=1, ge=1)
    budget: Budget = Budget()
    parallel: int = Field(default=1, ge=1)
    seed: int | None = None
    """The run's secret seed (hidden configs, trial inputs); random when not given."""
    keep_workspaces: bool = False
    time_cap_s: float = Field(default=DEFAULT_TIME_CAP_S, gt=0)
    """Seconds of timing per config on a GPU before the judge stops short of a 1% CI."""
    compile_reference: bool = True
    """Also time torch.compile of the reference on torch2* tasks (costs a compile a shape)."""


@dataclass(frozen=True)
class Job:
    """One attempt to make."""

    task: Task
    agent: str
    index: int
    device: str

    @property
    def attempt_id(self) -> str:
        """The attempt's stable id."""
        return attempt_id_for(self.task.task_id, self.agent, self.index)


Progress = Callable[[AttemptRecord, int, int], None]
"""Called after each attempt with the record, the number done and the total."""


def environment() -> dict[str, str]:
    """Versions and revision a run records."""
    env = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("kernel-gauntlet", "torch", "triton", "numpy"):
        try:
            env[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    try:
        git = process.run(["git", "rev-parse", "HEAD"], timeout_s=5, cwd=Path(__file__).parent)
        if git.returncode == 0:
            env["git_revision"] = git.stdout.strip()
    except OSError:
        logger.debug("git is not available; the run records no revision")
    for device in devices.list_devices():
        env[f"device.{device.name}"] = device.description
    return env


def plan_jobs(
    tasks: list[Task], agents: list[str], attempts: int, device: str | None
) -> tuple[list[Job], list[str]]:
    """Jobs for every task that can run here, and the ids of tasks that cannot."""
    jobs: list[Job] = []
    skipped: list[str] = []
    gpus = [d.name for d in devices.list_devices() if d.kind in ("cuda", "rocm")]
    for task in tasks:
        chosen = devices.device_for(task, device)
        if chosen is None:
            skipped.append(task.task_id)
            continue
        for agent_spec in agents:
            for index in range(attempts):
                # With no device asked for, attempts spread over the GPUs here; the judge
                # still times one candidate at a time per GPU (judge/devicelock.py).
                if device is None and chosen in gpus:
                    chosen = gpus[len(jobs) % len(gpus)]
                jobs.append(Job(task, agent_spec, index, chosen))
    return jobs, skipped


def preflight(agents: Sequence[str], model: ModelSettings) -> None:
    """Make every agent and check it can work here, before any attempt starts.

    Raises:
        UnknownNameError: An agent is not known.
        ConfigError: An agent cannot run here (a missing binary or key, no model named, an
            endpoint that does not answer): an attempt would only record its failure.
    """
    for spec in agents:
        made = make_agent(spec)
        check = getattr(made, "preflight", None)
        if callable(check):
            check(model)


def plan_run(config: RunConfig) -> tuple[list[Job], list[str]]:
    """The attempts a run of `config` would make here, and the tasks no device here runs.

    Checks everything a run checks before its first attempt (device, agents, selection) and
    starts nothing: `gauntlet run --dry-run`, and the first step of `start_run`.

    Raises:
        ConfigError: A bad device, agent or selection, or nothing that can run here.
    """
    if config.device is not None:
        devices.check_device(config.device)
    preflight(config.agents, config.model)
    tasks = suites.select(config.suite, config.pattern, config.track)
    jobs, skipped = plan_jobs(tasks, config.agents, config.attempts, config.device)
    if not jobs:
        raise ConfigError(
            f"none of the {len(tasks)} selected tasks can run on "
            f"{config.device or 'the devices here'}; see 'gauntlet devices'"
        )
    return jobs, skipped


def start_run(config: RunConfig, out: Path, progress: Progress | None = None) -> RunStore:
    """Create a run directory and run every attempt."""
    jobs, skipped = plan_run(config)
    if skipped:
        logger.warning("no device here runs %d task(s): %s", len(skipped), ", ".join(skipped))
    secret = config.seed if config.seed is not None else secrets.randbits(62)
    store = RunStore(out)
    run_tasks = sorted({j.task.task_id for j in jobs})
    store.create(
        RunInfo(
            run_id=out.resolve().name,
            created_at=now(),
            suite=config.suite,
            task_ids=run_tasks,
            agents=config.agents,
            model=config.model.model,
            device=config.device or "auto",
            attempts=config.attempts,
            budget=config.budget,
            seed_hash=seed_hash(secret),
            environment=environment(),
            config=config.model_dump(mode="json", exclude={"seed"}),
            state="running",
        )
    )
    secret_path = out / SECRET_FILE
    secret_path.write_text(str(secret))
    secret_path.chmod(0o600)
    with store.lock():
        _execute(store, jobs, config, secret, progress)
        store.set_state("finished")
    return store


def resume_run(
    run_dir: Path,
    parallel: int | None = None,
    progress: Progress | None = None,
    redo: Sequence[str] = (),
) -> RunStore:
    """Finish a run: make every attempt of its plan that `attempts.jsonl` does not hold yet.

    `redo`, globs over task ids, makes those tasks' attempts again even where recorded (after
    a fix to the task or the judge); their old records move to `superseded.jsonl`.
    """
    store = RunStore(run_dir)
    info = store.info()
    try:
        secret = int((run_dir / SECRET_FILE).read_text().strip())
    except (OSError, ValueError) as err:
        raise RecordError(f"cannot read the run's secret seed in '{run_dir}': {err}") from err
    with store.lock():
        return _resume(store, info, secret, parallel, progress, redo)


def _resume(
    store: RunStore,
    info: RunInfo,
    secret: int,
    parallel: int | None,
    progress: Progress | None,
    redo: Sequence[str],
) -> RunStore:
    run_dir = store.root
    store.repair()
    config = RunConfig.model_validate(info.config)
    if parallel is not None:
        config = config.model_copy(update={"parallel": parallel})
    preflight(info.agents, config.model)
    tasks = [suites.load_by_id(task_id) for task_id in info.task_ids]
    jobs, _ = plan_jobs(tasks, info.agents, info.attempts, config.device)
    again: set[str] = set()
    for pattern in redo:
        matched = {j.attempt_id for j in jobs if fnmatch.fnmatchcase(j.task.task_id, pattern)}
        if not matched:
            raise ConfigError(f"--redo '{pattern}' matches no task of the run in '{run_dir}'")
        again |= matched
    if again:
        store.supersede(again)
    done = store.done_ids()
    store.set_state("running")
    _execute(store, [j for j in jobs if j.attempt_id not in done], config, secret, progress)
    store.set_state("finished")
    return store


def _execute(
    store: RunStore, jobs: list[Job], config: RunConfig, secret: int, progress: Progress | None
) -> None:
    lock = threading.Lock()
    stopped = threading.Event()
    finished = 0

    def one(job: Job) -> AttemptRecord | None:
        if stopped.is_set():
            return None
        record = run_attempt(store, job, config, secret)
        with lock:
            if stopped.is_set():
                return None  # cut short by the stop: its record would not be the agent's
            store.append(record)
        return record

    warm = _warm_judge(jobs, config.parallel)
    pool = ThreadPoolExecutor(max_workers=config.parallel, thread_name_prefix="attempt")
    try:
        futures = [pool.submit(one, job) for job in jobs]
        for future in as_completed(futures):
            record = future.result()
            if record is None:
                continue
            finished += 1
            logger.info(
                "attempt %s finished: %s",
                record.attempt_id,
                record.status,
                extra={"task_id": record.task_id, "attempt_id": record.attempt_id},
            )
            if progress is not None:
                progress(record, finished, len(jobs))
    except KeyboardInterrupt:
        # One Ctrl-C: no new attempt, every running agent and worker killed, nothing half
        # made recorded; what was recorded stays for `--resume`.
        stopped.set()
        pool.shutdown(wait=False, cancel_futures=True)
        with process.stopping():
            pool.shutdown(wait=True)
        logger.warning("run %s interrupted", store.root)
        store.set_state("interrupted")
        raise RunInterrupted(str(store.root), finished, len(jobs)) from None
    finally:
        pool.shutdown(wait=True)
        if warm is not None:
            warm.close()


#: Host cores below which a run keeps no spare workers by default: a spare's imports then take
#: a core from the judgment beside it instead of an idle one (on 2 cores, the runner's tests took
#: 215 s with spares and 143 s without).
SPARES_MIN_CORES = 8


def _warm_judge(jobs: list[Job], parallel: int) -> Judge | None:
    """The run's judge service: spare workers for its devices, one per parallel attempt.

    None for a single attempt (its judgment could use no spare), on a host with fewer than
    `SPARES_MIN_CORES` cores, or with `GAUNTLET_SPARE_WORKERS=0` (which also sets the count).
    """
    wanted = os.environ.get(settings.SPARE_WORKERS_ENV, "").strip()
    default = parallel if (os.cpu_count() or 1) >= SPARES_MIN_CORES else 0
    try:
        count = int(wanted) if wanted else default
    except ValueError as err:
        raise ConfigError(
            f"{settings.SPARE_WORKERS_ENV}={wanted!r} is not a number of workers"
        ) from err
    if count <= 0 or len(jobs) <= 1:
        return None
    judge = Judge(spare_workers=count)
    for device in sorted({job.device for job in jobs if job.device}):
        judge.warm(device)
    return judge


def run_attempt(store: RunStore, job: Job, config: RunConfig, secret: int) -> AttemptRecord:
    """One attempt, start to record. Never raises for what the agent or submission does."""
    from gauntlet.workspace import build_workspace, workspace_changes

    started = now()
    folder = store.attempt_dir(job.attempt_id)
    if folder.exists():
        shutil.rmtree(folder)  # leftovers of an attempt that never got recorded
    folder.mkdir(parents=True)
    ws_root = Path(tempfile.mkdtemp(prefix=f"gauntlet-ws-{job.attempt_id[:40]}-"))
    budget = config.budget
    if job.task.spec.budget.turns and not budget.turns:
        budget = budget.model_copy(update={"turns": job.task.spec.budget.turns})
    try:
        workspace = build_workspace(
            job.task, ws_root / "workspace", device=job.device, budget=budget
        )
        ctx = AgentContext(
            task=job.task,
            workspace=workspace.path,
            brief=workspace.brief,
            budget=budget,
            model=config.model,
            device=job.device,
            transcript=folder / "transcript.jsonl",
            seed=job.index,
        )
        result = _run_agent(job, ctx)
        changes = workspace_changes(workspace)
        verdict = None
        status: str
        reason = ""
        contract = set(job.task.spec.submission.files)
        if result.status != "finished" and not contract & set(changes):
            # It never ran, crashed or was stopped before writing its submission: the files
            # are the untouched template, whose verdict would be the baseline's, not the
            # agent's.
            status = "agent_error"
            reason = (
                f"the agent ended ({result.status}) without changing its submission: "
                f"{result.message}"
            )
        else:
            try:
                verdict = judge(
                    job.task,
                    workspace.path,
                    device=job.device,
                    seed=secret,
                    mode="final",
                    time_cap_s=config.time_cap_s,
                    compile_reference=config.compile_reference,
                )
                status, reason = verdict.status, verdict.reason
            except GauntletError as err:
                logger.error("judge failed on %s: %s", job.attempt_id, err)
                status, reason = "judge_error", f"the judge failed: {err}"
            if result.status == "error" and verdict is not None and (
                verdict.status == "no_submission"
            ):
                status, reason = "agent_error", f"the agent failed: {result.message}"
        kept = _keep_submission(job.task, workspace.path, folder / "submission")
        if config.keep_workspaces:
            shutil.copytree(workspace.path, folder / "workspace", symlinks=True)
    finally:
        shutil.rmtree(ws_root, ignore_errors=True)
    return AttemptRecord(
        run_id=store.root.resolve().name,
        attempt_id=job.attempt_id,
        task_id=job.task.task_id,
        track=job.task.spec.track,
        level=job.task.spec.level,
        platform=job.task.spec.platform,
        agent=job.agent,
        model=config.model.model,
        index=job.index,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        verdict=verdict,
        usage=result.usage,
        agent_status=result.status,
        agent_message=result.message,
        sandbox=result.sandbox,
        started_at=started,
        finished_at=now(),
        workspace_changes=changes,
        submission_files=kept,
    )


def _run_agent(job: Job, ctx: AgentContext) -> AgentResult:
    result = run_in_child(job.agent, ctx)
    if result.status == "error" and not process.is_stopping():
        # (An agent killed by a stopping run is not news: the run says it stopped.)
        logger.warning("agent %s failed on %s: %s", job.agent, job.attempt_id, result.message)
    if result.sandbox is None and result.status in ("timeout", "error"):
        # A child killed at its budget, or dead, reports nothing: its sandbox is the agent's,
        # resolved here as the child resolved it (agents that start no process have none).
        kind = getattr(make_agent(job.agent), "sandbox_kind", None)
        result = result.model_copy(update={"sandbox": kind})
    return result


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
