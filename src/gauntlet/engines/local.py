"""The local engine: attempts on a thread pool of `parallel` threads in this process.

The heavy work happens in child processes (agents, judge workers), so threads only wait. Both
stages of an attempt run one after the other in its thread. The run's attempts share one
`TrustedVerdicts`: the task's own files are judged once in the run where that verdict cannot
vary (`verdicts.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from gauntlet import process
from gauntlet.engines.attempt import AttemptOutcome, make_attempt
from gauntlet.engines.executor import AttemptWork, Executor
from gauntlet.engines.verdicts import TrustedVerdicts


class LocalExecutor(Executor):
    """Attempts on `parallel` threads here."""

    engine = "local"
    judges_here = True

    def __init__(self, parallel: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="attempt")
        self._stopped = threading.Event()
        self._verdicts = TrustedVerdicts()
        """The task's own files' verdicts, judged once in this run (`verdicts.py`)."""

    def outcomes(self, work: Sequence[AttemptWork]) -> Iterator[AttemptOutcome]:
        """Each attempt's outcome as it finishes; an exception of the runner's own code ends it."""
        futures = [self._pool.submit(self._one, item) for item in work]
        for future in as_completed(futures):
            outcome = future.result()
            if outcome is not None:
                yield outcome

    def _one(self, item: AttemptWork) -> AttemptOutcome | None:
        if self._stopped.is_set():
            return None
        outcome = make_attempt(item.task, item.spec, item.judge, verdicts=self._verdicts)
        if self._stopped.is_set():
            return None  # cut short by the stop: its record would not be the agent's
        return outcome

    def stop(self) -> None:
        """No new attempt; every running agent and judge worker killed with what it started."""
        self._stopped.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with process.stopping():
            self._pool.shutdown(wait=True)

    def close(self) -> None:
        """Wait for the threads (none is left running after `stop`)."""
        self._pool.shutdown(wait=True)
