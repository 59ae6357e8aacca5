"""A gate around `Judge.eval` for tests of judgments made at once: they end in reverse order."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from gauntlet.judge.service import Judge
from gauntlet.judge.verdict import Verdict
from gauntlet.task import Task


class ReverseFinish:
    """`Judge.eval` gated: in each group of judgments, the last to start returns first.

    `groups` are the sizes of the batches' judged candidates, in order; a judgment waits for
    those of its group that began after it, so a group can only finish if all its judgments
    were in flight at once.
    """

    def __init__(self, groups: list[int]) -> None:
        self.sizes = groups
        self.started = 0
        self.returned: list[int] = []
        """Start numbers in the order their verdicts were returned."""
        self.most_at_once = 0
        self._in_flight = 0
        self._changed = threading.Condition()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = Judge.eval

        def gated(self_: Judge, task: Task | str, submission: Path | str, **kw: Any) -> Verdict:
            with self._changed:
                number = self.started
                self.started += 1
                self._in_flight += 1
                self.most_at_once = max(self.most_at_once, self._in_flight)
            verdict = original(self_, task, submission, **kw)
            first, size = self._group(number)
            with self._changed:
                later = set(range(number + 1, first + size))
                ended = self._changed.wait_for(lambda: later <= set(self.returned), timeout=60)
                assert ended, f"judgment {number}: the ones begun after it never returned"
                self.returned.append(number)
                self._in_flight -= 1
                self._changed.notify_all()
            return verdict

        monkeypatch.setattr(Judge, "eval", gated)

    def _group(self, number: int) -> tuple[int, int]:
        first = 0
        for size in self.sizes:
            if number < first + size:
                return first, size
            first += size
        return number, 1  # past the groups named: ungated
