"""`Judge`: the judge as a warm service for many judgments (a run, a search loop, an API user).

    with gauntlet.Judge(device="cuda:0") as judge:
        for candidate in candidates:
            verdict = judge.eval("triton2triton/softmax", candidate, mode="feedback")

While open it keeps spare workers started (`spares.py`) for the devices it judges on, so a
judgment does not wait for PyTorch's import (its verdict's `environment` says how its workers
came: `reference_worker`, `candidate_worker`); the reference results stay cached across
judgments of a task (per seed and trial) as in every judgment. Each judgment is the full
protocol of `pipeline.judge`, with the same defenses: spares are fresh processes, confined from
their start, that run one judgment each. `mode="feedback"` judges the visible configs only.

`eval` may be called from several threads at once (the runner's attempts, a search agent's
candidates, `scripts/bench_judge.py --threads`): a judgment keeps its state to itself, what
judgments share (the spare pool, the reference and baseline caches, the process registry) is
locked, and on a GPU the device's lock (`devicelock.py`) lets `GAUNTLET_JUDGMENTS_PER_GPU` of
them work side by side, each timed alone. Give it `spare_workers` for as many at once.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from types import TracebackType

from gauntlet import devices, settings, suites
from gauntlet.errors import ConfigError
from gauntlet.judge import spares
from gauntlet.judge.pipeline import ConfigSet, judge
from gauntlet.judge.timing import DEFAULT_TIME_CAP_S
from gauntlet.judge.verdict import Mode, Verdict
from gauntlet.task import Task

#: Python-worker devices (the simulated accelerators' judge runs no PyTorch worker).
_WORKER_KINDS = ("cpu", "cuda", "rocm")


class Judge:
    """A judge kept warm across judgments; a context manager (`close` stops its workers)."""

    def __init__(
        self,
        device: str | None = None,
        *,
        spare_workers: int = 1,
        workdir: Path | None = None,
        time_cap_s: float = DEFAULT_TIME_CAP_S,
        compile_reference: bool = False,
    ) -> None:
        """A judge for `device` (default: the best device each task can use).

        `spare_workers`: started workers kept per role and device (one per parallel judgment);
        where back-to-back judgments outrun their candidate spares' imports, the pool keeps
        more candidate spares ahead (`spares.SparePool.take`).
        """
        if device is not None:
            devices.check_device(device)
        self.device = device
        self.time_cap_s = time_cap_s
        self.compile_reference = compile_reference
        self._pool = spares.SparePool(workdir or settings.CACHE_DIR / "judge", spare_workers)
        self._replaced = spares.activate(self._pool)
        if device is not None:
            self.warm(device)

    def warm(self, device: str, wait_s: float = 0.0, *, imported: bool = False) -> bool:
        """Start spare workers for `device` now (else after its first judgment).

        `wait_s`: wait up to that long for them to have started (a judgment right after then
        gets them, their imports under way), or with `imported` for their imports to be done
        (a judgment right after then waits for none). Returns whether they were in time.
        """
        if devices.kind_of(device) not in _WORKER_KINDS:
            return True
        self._pool.warm(device)
        if wait_s <= 0:
            return True
        if imported:
            return self._pool.wait_imported(device, wait_s)
        return self._pool.wait_started(device, wait_s)

    def __enter__(self) -> Judge:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def spares_taken(self) -> int:
        """Workers of this judge's judgments that came started from its spares."""
        return self._pool.taken

    def close(self) -> None:
        """Stop the spare workers (the judge then works cold, as `gauntlet.judge` does)."""
        if spares.active() is self._pool:
            spares.activate(self._replaced)
        self._pool.close()

    def eval(
        self,
        task: Task | str,
        submission: Path | str,
        *,
        configs: ConfigSet = "all",
        mode: Mode = "final",
        seed: int | None = None,
    ) -> Verdict:
        """Judge the submission (a folder with the contract's files) and return its verdict.

        `task` is a `Task` or a task id; `seed` (default: a fresh secret one) draws the hidden
        configs and every input.

        Raises:
            ConfigError: The task cannot run on this judge's device, or no submission is there.
            JudgeError: The judge's own machinery failed (never for what a submission does).
        """
        loaded = suites.load_by_id(task) if isinstance(task, str) else task
        device = devices.device_for(loaded, self.device)
        if device is None:
            raise ConfigError(
                f"task '{loaded.task_id}' runs on {loaded.spec.device_kinds()}, not on "
                f"{self.device or 'any device here'}"
            )
        folder = Path(submission)
        if not folder.is_dir():
            raise ConfigError(f"submission folder '{folder}' does not exist")
        return judge(
            loaded,
            folder,
            device=device,
            configs=configs,
            seed=seed if seed is not None else secrets.randbits(62),
            mode=mode,
            time_cap_s=self.time_cap_s,
            compile_reference=self.compile_reference,
        )
