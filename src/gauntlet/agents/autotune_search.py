"""The `autotune` agent's search over a task's knob space: a grid, or a model-based search.

A space small enough for the judge-call budget is searched whole, the template's own point
first (a grid). A larger one gets a model-based search, seeded and deterministic: the template's
point, a few random points, then the untried point an additive model of log-speedup (ridge
regression over one-hot knob values) ranks best, plus a bonus for values tried rarely (so every
value gets a look before the model is trusted). Points that failed the judge score below every
point that passed, so the model learns to avoid their values.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Collection, Mapping, Sequence
from typing import Literal

import numpy as np

from gauntlet import expr
from gauntlet.knobs import Value

SearchKind = Literal["grid", "model"]
Point = tuple[int, ...]
"""A point of the space: per knob (in declaration order), the index of its value."""

#: Untried points the model ranks per proposal at most (a seeded sample of larger spaces).
MODEL_CANDIDATES = 4096
#: Weight of the bonus for rarely tried values, in units of log-speedup.
EXPLORATION = 0.15
#: Ridge regularization of the additive model.
RIDGE = 0.1


class KnobSpace:
    """The points of a knob space that satisfy its constraint."""

    def __init__(self, knobs: Mapping[str, Sequence[Value]], constraint: str | None = None):
        self.names = list(knobs)
        self.values = [list(v) for v in knobs.values()]
        ranges = [range(len(v)) for v in self.values]
        self.points: list[Point] = [
            p
            for p in itertools.product(*ranges)
            if constraint is None or expr.evaluate(constraint, self.assignment(p))
        ]

    def assignment(self, point: Point) -> dict[str, Value]:
        """Knob name -> value at `point`."""
        return {
            n: self.values[k][i] for k, (n, i) in enumerate(zip(self.names, point, strict=True))
        }

    def point_of(self, assignment: Mapping[str, Value]) -> Point:
        """The point of a knob assignment (every knob named, each value one of its values)."""
        return tuple(self.values[k].index(assignment[n]) for k, n in enumerate(self.names))

    def __len__(self) -> int:
        return len(self.points)


class Search:
    """Proposes the points to judge from the results so far (and those being judged)."""

    def __init__(self, space: KnobSpace, start: Point, calls: int, seed: int) -> None:
        self.space = space
        self.start = start
        self.kind: SearchKind = "grid" if len(space) <= calls else "model"
        self.initial = min(max(2, calls // 4), 8)
        """Random points after the start before the model proposes (model search)."""
        self._rng = random.Random(seed)
        self.results: dict[Point, float | None] = {}
        """Judged points: log-speedup, or None for a point that did not pass."""

    def record(self, point: Point, log_speedup: float | None) -> None:
        """The judge's result of a proposed point."""
        self.results[point] = log_speedup

    def propose(self, pending: Collection[Point] = ()) -> Point | None:
        """The next point to judge; None when every point has been judged or is `pending`.

        `pending`: points proposed and not yet recorded (judged at once with this one). They
        count as tried: the grid's order and the random draws are what proposing them one at a
        time would give; only the model ranks without their results.
        """
        untried = [p for p in self.space.points if p not in self.results and p not in pending]
        if not untried:
            return None
        if self.start not in self.results and self.start not in pending:
            return self.start
        if self.kind == "grid":
            return untried[0]
        if len(self.results) + len(pending) < 1 + self.initial or not self.results:
            # (No result yet: a batch wider than the random start has nothing to model.)
            return self._rng.choice(untried)
        return self._modelled(untried)

    def _modelled(self, untried: list[Point]) -> Point:
        if len(untried) > MODEL_CANDIDATES:
            untried = self._rng.sample(untried, MODEL_CANDIDATES)
        offsets = list(itertools.accumulate([0, *map(len, self.space.values)]))
        width = offsets[-1]

        def features(point: Point) -> np.ndarray:
            row = np.zeros(width + 1)
            row[-1] = 1.0  # the intercept
            for k, i in enumerate(point):
                row[offsets[k] + i] = 1.0
            return row

        judged = list(self.results.items())
        passed = [s for _, s in judged if s is not None]
        # A failure scores a factor of two below the worst pass (0 when none passed yet).
        floor = (min(passed) if passed else 0.0) - math.log(2)
        x = np.stack([features(p) for p, _ in judged])
        y = np.array([floor if s is None else s for _, s in judged])
        weights = np.linalg.solve(x.T @ x + RIDGE * np.eye(width + 1), x.T @ y)
        counts = x[:, :width].sum(axis=0)
        candidates = np.stack([features(p) for p in untried])
        bonus = EXPLORATION * (candidates[:, :width] / np.sqrt(1.0 + counts)).sum(axis=1)
        scores = candidates @ weights + bonus
        return untried[int(np.argmax(scores))]  # argmax keeps the first of equal scores
