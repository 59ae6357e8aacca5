"""The import report: every problem of a source, imported, rewritten (how) or refused (why)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["imported", "rewritten", "refused"]


class ProblemReport(BaseModel):
    """What became of one problem."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problem: str
    """The problem's path in its source (`level1/23_Softmax.py`)."""
    outcome: Outcome
    task_id: str | None = None
    """The task written (None when refused)."""
    rewrites: list[str] = Field(default_factory=list)
    """How the task departs from the problem as published (empty for `imported`)."""
    reason: str | None = None
    """Why it was refused."""
    notes: list[str] = Field(default_factory=list)
    """What the task keeps that one should know (sizes reduced, training-mode batch norm)."""
    source_findings: list[str] = Field(default_factory=list)
    """The degeneracy gate under the source's own inputs, weights and tolerance: answers that
    do no work and pass the problem as published."""


class ImportReport(BaseModel):
    """One import run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    source: Literal["kernelbench", "robust-kbench", "gpumode"]
    path: str
    """Where the problems were read."""
    out: str
    """Where the tasks were written."""
    created: datetime
    problems: list[ProblemReport]

    def suites(self, id_prefix: str) -> dict[str, list[str]]:
        """The suite of each source (`kb-l1`.., `rkb`, `gpumode`) and its id patterns.

        KernelBench's per level, present where the level has a task.
        """
        if self.source != "kernelbench":
            # robust-kbench's tasks lie at OUT/<name>, GPU MODE's at OUT/<set>/<problem>.
            name, pattern = ("rkb", "*") if self.source == "robust-kbench" else ("gpumode", "*/*")
            return (
                {name: [f"{id_prefix}/{pattern}"]} if any(p.task_id for p in self.problems) else {}
            )
        levels = sorted({p.problem.split("/")[0] for p in self.problems if p.task_id})
        return {f"kb-l{lv.removeprefix('level')}": [f"{id_prefix}/l{lv.removeprefix('level')}/*"]
                for lv in levels}  # fmt: skip

    def counts(self) -> dict[str, int]:
        """Problems per outcome."""
        found = Counter(p.outcome for p in self.problems)
        return {k: found.get(k, 0) for k in ("imported", "rewritten", "refused")}

    def reasons(self) -> dict[str, int]:
        """Refusals per reason, the reason cut at its first colon (its kind)."""
        return dict(
            Counter(
                (p.reason or "").split(":")[0] for p in self.problems if p.outcome == "refused"
            ).most_common()
        )
