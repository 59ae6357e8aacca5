"""The seam between a run and where its attempts execute.

The runner hands an `Executor` its attempts and receives each one's `AttemptOutcome` as it
finishes; the runner alone records them. `LocalExecutor` (`local.py`) runs them here on a
thread pool, `RayExecutor` (`ray.py`) as Ray tasks on a local or remote Ray cluster.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar, Literal

from gauntlet.engines.attempt import AttemptOutcome, AttemptSpec, JudgeSettings
from gauntlet.task import Task

EngineName = Literal["local", "ray"]
ENGINES: tuple[EngineName, ...] = ("local", "ray")


@dataclass(frozen=True)
class AttemptWork:
    """One attempt to make: its task, what it is, and how the judge stage judges it."""

    task: Task
    spec: AttemptSpec
    judge: JudgeSettings


class Executor(ABC):
    """Where a run's attempts execute. Use it as a context manager (`close` on exit)."""

    engine: ClassVar[EngineName]
    judges_here: ClassVar[bool]
    """Whether judgments run in this process's children (so a warm `Judge` here helps)."""

    @abstractmethod
    def outcomes(self, work: Sequence[AttemptWork]) -> Iterator[AttemptOutcome]:
        """Make every attempt; yield each outcome as it finishes, in any order, each once.

        Raises:
            GauntletError: The engine itself failed (an attempt's own failures are records).
        """

    @abstractmethod
    def stop(self) -> None:
        """Stop at once (Ctrl-C).

        No new attempt starts, every running one is killed with all it started, and outcomes
        not yet yielded are dropped.
        """

    def close(self) -> None:
        """Release what the engine holds (threads, a Ray it started)."""
        return None

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
