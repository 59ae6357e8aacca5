"""The Ray engine: each attempt as two Ray tasks, its agent stage and then its judge stage.

The agent stage holds one CPU and no GPU, so no GPU is held while an agent thinks (its feedback
tools reach the GPU through the device lock, as a local run's do). The judge stage starts when
the agent stage's outcome exists and holds what its device needs: `gpus_per_judgment` of a GPU
(Ray sets `CUDA_VISIBLE_DEVICES` to it, and the judgment takes that physical GPU's device lock,
so fractions on one GPU still time one candidate at a time), or one CPU for the `cpu` device
and the simulators. Task folders travel through Ray's object store (one `ray.put` per task) and
every result comes back as bytes: no worker reads or writes the run directory.

A stage whose worker process or node dies is run again by Ray, at most `RETRIES` times; past
that the attempt is recorded as a `judge_error` naming the loss, so no attempt is lost. Each
attempt's outcome is taken from its one judge-stage object, so none is yielded twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from gauntlet import process
from gauntlet.engines.attempt import (
    AgentOutcome,
    AttemptOutcome,
    AttemptSpec,
    JudgeSettings,
    agent_stage,
    attempt_record,
    judge_stage,
)
from gauntlet.engines.bundle import TaskBundle, bundle_task, empty_archive, task_from_bundle
from gauntlet.engines.executor import AttemptWork, Executor
from gauntlet.errors import ConfigError
from gauntlet.store import Placement, now

logger = logging.getLogger(__name__)

#: Times Ray runs a stage again after its worker process or node died (not after an error of
#: ours: that is raised to the run).
RETRIES = 2
#: Seconds the stages cancelled by a stop get to kill what they started before Ray kills them.
STOP_GRACE_S = 20.0

T = TypeVar("T")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ConfigError(
            "the ray engine needs Ray, which is not installed here; install it with "
            "'pip install \"kernel-gauntlet[ray]\"' (the dev extra of 'make' has it)"
        ) from err
    return ray


def _killing_children_on_cancel(work: Callable[[], T]) -> T:
    """Run a stage; when Ray cancels it (a KeyboardInterrupt here), kill all it started."""
    try:
        return work()
    except KeyboardInterrupt:
        with process.stopping():
            pass
        raise


def _agent_task(bundle: TaskBundle, spec: AttemptSpec) -> AgentOutcome:
    """The agent stage, on a Ray worker."""
    return _killing_children_on_cancel(lambda: agent_stage(task_from_bundle(bundle), spec))


def _judge_task(
    bundle: TaskBundle, spec: AttemptSpec, settings: JudgeSettings, agent: AgentOutcome
) -> AttemptOutcome:
    """The judge stage, on a Ray worker; on a GPU, the one Ray assigned it."""
    import ray

    gpu = None
    kind = spec.device.split(":")[0]
    if kind in ("cuda", "rocm"):
        # Ray made only the assigned GPU visible to this process: it is device 0 here, and the
        # judge's workers and device lock resolve it to the physical GPU.
        gpu = ",".join(str(i) for i in ray.get_gpu_ids())
        spec = spec.model_copy(update={"device": f"{kind}:0"})
    task = task_from_bundle(bundle)
    return _killing_children_on_cancel(
        lambda: judge_stage(task, spec, settings, agent, judge_gpu=gpu)
    )


class RayExecutor(Executor):
    """Attempts as Ray tasks on the cluster at `address`, or on a local Ray started here."""

    engine = "ray"
    judges_here = False

    def __init__(
        self,
        address: str | None = None,
        *,
        gpus_per_judgment: float = 1.0,
        in_flight: int | None = None,
        num_cpus: int | None = None,
    ) -> None:
        """Join Ray (or start a local one, with `num_cpus` CPUs when given).

        Args:
            address: A Ray cluster's address (`ray://...`, `HOST:PORT`, `auto`); None starts a
                local Ray here, or uses the one this process has already joined.
            gpus_per_judgment: The share of a GPU each judgment holds (0 to 1).
            in_flight: Attempts submitted at once; None: the cluster's CPUs.
            num_cpus: CPUs of a local Ray started here (None: all of this machine's).
        """
        if not 0 < gpus_per_judgment <= 1:
            raise ConfigError(f"gpus per judgment must be in (0, 1], not {gpus_per_judgment}")
        ray = _import_ray()
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            ray.init(
                address=address,
                num_cpus=num_cpus if address is None else None,
                include_dashboard=False if address is None else None,
                # Workers' logs stay in Ray's session folder: the run prints its own progress.
                log_to_driver=False,
            )
            self._started = True
        self._gpus_per_judgment = gpus_per_judgment
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self._in_flight = in_flight or max(cpus, 1)
        self._agent = ray.remote(_agent_task)
        self._judge_cpu = ray.remote(_judge_task)
        # A GPU judgment gets a fresh worker process: CUDA keeps the devices a process first
        # saw, so a reused worker would judge on the GPU of its first assignment.
        self._judge_gpu = ray.remote(max_calls=1)(_judge_task)
        self._running: dict[Any, tuple[AttemptWork, Any]] = {}
        """judge-stage object -> (the attempt, its agent-stage object)"""

    def outcomes(self, work: Sequence[AttemptWork]) -> Iterator[AttemptOutcome]:
        """Each attempt's outcome as its judge stage ends; at most `in_flight` submitted."""
        ray = self._ray
        bundles: dict[str, Any] = {}
        queue = list(reversed(work))
        while queue or self._running:
            while queue and len(self._running) < self._in_flight:
                item = queue.pop()
                task_id = item.task.task_id
                if task_id not in bundles:
                    bundles[task_id] = ray.put(bundle_task(item.task))
                self._submit(item, bundles[task_id])
            ready, _ = ray.wait(list(self._running), num_returns=1)
            item, _agent_ref = self._running.pop(ready[0])
            try:
                outcome: AttemptOutcome = ray.get(ready[0])
            except ray.exceptions.RayTaskError:
                raise  # our own code failed in the stage: as a local run, the run stops
            except ray.exceptions.TaskCancelledError:
                continue
            except ray.exceptions.RayError as err:
                outcome = _lost(item, err)
            yield outcome

    def _submit(self, item: AttemptWork, bundle: Any) -> None:
        name = item.spec.attempt_id
        agent_ref = self._agent.options(
            num_cpus=1, max_retries=RETRIES, retry_exceptions=False, name=f"agent {name}"
        ).remote(bundle, item.spec)
        on_gpu = item.spec.device.startswith(("cuda:", "rocm:"))
        judge = self._judge_gpu if on_gpu else self._judge_cpu
        resources = {"num_gpus": self._gpus_per_judgment} if on_gpu else {}
        judge_ref = judge.options(
            num_cpus=1,
            max_retries=RETRIES,
            retry_exceptions=False,
            name=f"judge {name}",
            **resources,
        ).remote(bundle, item.spec, item.judge, agent_ref)
        self._running[judge_ref] = (item, agent_ref)

    def stop(self) -> None:
        """Cancel every submitted stage: each kills what it started, then Ray kills it."""
        ray = self._ray
        refs = [
            ref
            for judge_ref, (_, agent_ref) in self._running.items()
            for ref in (judge_ref, agent_ref)
        ]
        self._running.clear()
        for ref in refs:
            ray.cancel(ref, force=False)
        deadline = time.monotonic() + STOP_GRACE_S
        left = refs
        while left and time.monotonic() < deadline:
            _, left = ray.wait(left, num_returns=len(left), timeout=1.0)
        for ref in left:
            ray.cancel(ref, force=True)

    def close(self) -> None:
        """Leave Ray; a local Ray started here is shut down."""
        if self._started:
            self._ray.shutdown()
            self._started = False


def _lost(item: AttemptWork, err: Exception) -> AttemptOutcome:
    """The record of an attempt whose Ray worker or node died more often than `RETRIES`."""
    task = item.task
    spec = item.spec
    message = f"{type(err).__name__}: {err}"
    logger.error(
        "attempt %s lost its Ray worker %d times: %s", spec.attempt_id, RETRIES + 1, message
    )
    record = attempt_record(
        task,
        spec,
        status="judge_error",
        reason=f"the Ray worker or node making this attempt died {RETRIES + 1} times "
        f"(the last: {message[:2000]}); redo it with 'gauntlet run --resume RUN --redo'",
        started_at=now(),
        finished_at=now(),
        placement=Placement(engine="ray"),
    )
    return AttemptOutcome(record=record, files=empty_archive())
