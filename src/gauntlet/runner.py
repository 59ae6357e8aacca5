"""A run: tasks x agents x attempts, each attempt judged and appended to the run directory.

Per attempt: build the workspace, let the agent work in it, judge the contract's files from it
with the run's secret seed, keep the submission and transcript under `attempts/<id>/`, and
append the record. An engine (`engines/`) executes the attempts: `local`, a thread pool here
(`--parallel N`), or `ray`, Ray tasks on a cluster; either hands back each attempt's record and
files, and the runner alone records them. `resume_run` skips attempts already recorded, so a
killed run loses no finished attempt.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import platform
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gauntlet import devices, process, settings, suites
from gauntlet.agents.base import Budget, ModelSettings, make_agent
from gauntlet.engines import (
    AttemptSpec,
    AttemptWork,
    EngineName,
    Executor,
    JudgeSettings,
    LocalExecutor,
    make_attempt,
)
from gauntlet.errors import ConfigError, RecordError, RunInterrupted
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
    engine: EngineName = "local"
    """Where attempts execute: `local` (a thread pool here) or `ray` (Ray tasks)."""
    ray_address: str | None = None
    """The Ray cluster to join (`--ray-address`); None starts a local Ray."""
    gpus_per_judgment: float = Field(default=1.0, gt=0, le=1)
    """With Ray, the share of a GPU each judgment holds (fractions share one GPU, still one
    timing at a time by the device lock)."""


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


#: Tasks per block of `execution_order`, per parallel attempt.
BLOCK_TASKS_PER_SLOT = 4


def execution_order(jobs: list[Job], parallel: int) -> list[Job]:
    """The order to start `jobs` in: no two attempts of one task side by side where avoidable.

    Tasks are taken in blocks of `BLOCK_TASKS_PER_SLOT * parallel`; within a block, every task's
    first attempt (first agent, first index), then every task's second, and so on. Attempts
    running together are then of different tasks, and each later attempt of a task starts once
    its earlier ones are done: the judge computes a task's references and baseline runs once
    and reuses them (kept in the judging process), and the task's own files judged once are not
    judged again (`engines/verdicts.py`), where side by side both would do the work. A block
    stays small, so what is kept spans a few tasks, not the run.
    """
    by_task: dict[str, list[Job]] = {}
    for job in jobs:
        by_task.setdefault(job.task.task_id, []).append(job)
    groups = list(by_task.values())
    width = BLOCK_TASKS_PER_SLOT * max(parallel, 1)
    ordered: list[Job] = []
    for start in range(0, len(groups), width):
        block = groups[start : start + width]
        for step in range(max(len(g) for g in block)):
            ordered += [g[step] for g in block if step < len(g)]
    return ordered


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
            engines=[config.engine],
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
    engine: dict[str, object] | None = None,
) -> RunStore:
    """Finish a run: make every attempt of its plan that `attempts.jsonl` does not hold yet.

    `redo`, globs over task ids, makes those tasks' attempts again even where recorded (after
    a fix to the task or the judge); their old records move to `superseded.jsonl`. `engine`
    overrides the run's engine options (`engine`, `ray_address`, `gpus_per_judgment`).
    """
    store = RunStore(run_dir)
    info = store.info()
    try:
        secret = int((run_dir / SECRET_FILE).read_text().strip())
    except (OSError, ValueError) as err:
        raise RecordError(f"cannot read the run's secret seed in '{run_dir}': {err}") from err
    with store.lock():
        return _resume(store, info, secret, parallel, progress, redo, engine or {})


def _resume(
    store: RunStore,
    info: RunInfo,
    secret: int,
    parallel: int | None,
    progress: Progress | None,
    redo: Sequence[str],
    engine: dict[str, object],
) -> RunStore:
    run_dir = store.root
    store.repair()
    given = {**info.config, **engine}
    if parallel is not None:
        given["parallel"] = parallel
    config = RunConfig.model_validate(given)
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
        for attempt_id in again:  # made again from the start, search state included
            shutil.rmtree(store.attempt_dir(attempt_id), ignore_errors=True)
    done = store.done_ids()
    store.set_state("running")
    store.add_engine(config.engine)
    _execute(store, [j for j in jobs if j.attempt_id not in done], config, secret, progress)
    store.set_state("finished")
    return store


def _execute(
    store: RunStore, jobs: list[Job], config: RunConfig, secret: int, progress: Progress | None
) -> None:
    judging = _judge_settings(config, secret)
    ordered = execution_order(jobs, config.parallel)
    work = [AttemptWork(j.task, _spec(store, j, config), judging) for j in ordered]
    recorded = store.done_ids()
    finished = 0
    with _executor(config) as executor:
        warm = _warm_judge(jobs, config.parallel) if executor.judges_here else None
        try:
            for outcome in executor.outcomes(work):
                record = outcome.record
                if record.attempt_id in recorded:
                    # An engine that made an attempt twice (a retry racing a slow first try):
                    # the log keeps the first.
                    logger.warning("attempt %s came back twice; kept once", record.attempt_id)
                    continue
                if outcome.files is not None:
                    store.write_attempt_files(record.attempt_id, outcome.files)
                store.append(record)
                recorded.add(record.attempt_id)
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
            executor.stop()
            logger.warning("run %s interrupted", store.root)
            store.set_state("interrupted")
            raise RunInterrupted(str(store.root), finished, len(jobs)) from None
        finally:
            if warm is not None:
                warm.close()


def _executor(config: RunConfig) -> Executor:
    """The engine that executes the run's attempts."""
    if config.engine == "ray":
        from gauntlet.engines.ray import RayExecutor

        return RayExecutor(
            config.ray_address,
            gpus_per_judgment=config.gpus_per_judgment,
            in_flight=config.parallel if config.parallel > 1 else None,
        )
    return LocalExecutor(config.parallel)


def _judge_settings(config: RunConfig, secret: int) -> JudgeSettings:
    return JudgeSettings(
        seed=secret, time_cap_s=config.time_cap_s, compile_reference=config.compile_reference
    )


def _spec(store: RunStore, job: Job, config: RunConfig) -> AttemptSpec:
    """What the engine's worker gets of an attempt; on this machine, its folder of the run."""
    return AttemptSpec(
        run_id=store.root.resolve().name,
        attempt_id=job.attempt_id,
        agent=job.agent,
        index=job.index,
        device=job.device,
        model=config.model,
        budget=config.budget,
        keep_workspace=config.keep_workspaces,
        engine=config.engine,
        attempt_dir=store.attempt_dir(job.attempt_id) if config.engine == "local" else None,
    )


def _warm_judge(jobs: list[Job], parallel: int) -> Judge | None:
    """The run's judge service: spare workers for its devices, one per parallel attempt.

    None for a single attempt (its judgment could use no spare), on a host with fewer than
    `settings.SPARES_MIN_CORES` cores, or with `GAUNTLET_SPARE_WORKERS=0` (which also sets the
    count).
    """
    wanted = os.environ.get(settings.SPARE_WORKERS_ENV, "").strip()
    default = parallel if (os.cpu_count() or 1) >= settings.SPARES_MIN_CORES else 0
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
    """One attempt here, start to record, its files in the run directory.

    The caller appends the record. Never raises for what the agent or submission does.
    """
    local = config.model_copy(update={"engine": "local"})
    outcome = make_attempt(job.task, _spec(store, job, local), _judge_settings(config, secret))
    return outcome.record
