"""Agents that need no model: `baseline`, `expert` and `replay:DIR`.

They write prepared files into the workspace under the contract's names and stop; the judge
then treats them like any other submission. `baseline` and `expert` only copy the task's own
files, which takes no budget to speak of, so they run in the harness (`in_process`) instead of a
child process of their own (about 0.6 s of CPU an attempt, seconds on a busy machine); `replay`
reads a folder the user names, so it stays in its child, under its wall budget.
"""

from __future__ import annotations

import time
from pathlib import Path

from gauntlet.agents.base import AgentContext, AgentResult, Usage, agent
from gauntlet.errors import ConfigError


def _write(ctx: AgentContext, files: dict[str, str], started: float, note: str) -> AgentResult:
    for name, text in files.items():
        target = ctx.workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    ctx.transcript.parent.mkdir(parents=True, exist_ok=True)
    ctx.transcript.write_text(f"{note}: wrote {', '.join(sorted(files))}\n", encoding="utf-8")
    return AgentResult(
        status="finished",
        usage=Usage(wall_s=time.monotonic() - started),
        message=note,
        transcript=ctx.transcript,
    )


class BaselineAgent:
    """Submits the task's baseline unchanged: the zero point of every score."""

    name = "baseline"
    in_process = True
    """It copies the task's own files: run in the harness, with no child process."""

    def run(self, ctx: AgentContext) -> AgentResult:
        """Write the baseline under the contract's file names."""
        return _write(ctx, ctx.task.baseline_files(), time.monotonic(), "submitted the baseline")


class ExpertAgent:
    """Submits the task's shipped expert solution."""

    name = "expert"
    in_process = True
    """It copies the task's own files: run in the harness, with no child process."""

    def run(self, ctx: AgentContext) -> AgentResult:
        """Write the expert's files, or stop with nothing where the task ships none."""
        started = time.monotonic()
        files = ctx.task.expert_files()
        if files is None:
            return AgentResult(
                status="finished",
                usage=Usage(wall_s=time.monotonic() - started),
                message=f"task '{ctx.task.task_id}' ships no expert solution",
            )
        return _write(ctx, files, started, "submitted the expert solution")


class ReplayAgent:
    """Submits prepared files: `DIR/<task id>/<files>`, or `DIR/<files>` for a single task."""

    name = "replay"

    def __init__(self, folder: str) -> None:
        if not folder:
            raise ConfigError("agent 'replay' needs a folder: use 'replay:DIR'")
        self.folder = Path(folder).expanduser()
        if not self.folder.is_dir():
            raise ConfigError(f"replay folder '{self.folder}' does not exist")

    def run(self, ctx: AgentContext) -> AgentResult:
        """Copy the task's prepared files; a task with none gets no submission."""
        started = time.monotonic()
        names = ctx.task.spec.submission.files
        for candidate in (self.folder / ctx.task.task_id, self.folder):
            if all((candidate / n).is_file() for n in names):
                files = {n: (candidate / n).read_text(encoding="utf-8") for n in names}
                return _write(ctx, files, started, f"replayed {candidate}")
        return AgentResult(
            status="finished",
            usage=Usage(wall_s=time.monotonic() - started),
            message=f"no prepared files for '{ctx.task.task_id}' under {self.folder}",
        )


@agent("baseline")
def _baseline(argument: str) -> BaselineAgent:
    return BaselineAgent()


@agent("expert")
def _expert(argument: str) -> ExpertAgent:
    return ExpertAgent()


@agent("replay")
def _replay(argument: str) -> ReplayAgent:
    return ReplayAgent(argument)
