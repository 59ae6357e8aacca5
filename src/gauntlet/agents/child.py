"""Every agent runs in a child process of its own, so its wall budget is enforced from outside.

The runner calls `run_in_child(spec, ctx)`: the context goes to a file, `python -m
gauntlet.agents.child CONTEXT RESULT` makes the agent and runs it, and the result comes back as a
file. Past the wall budget (plus a grace period for the agent's own clean stop) the child's
whole process tree is killed, whatever it was doing — a model call, a judge call, a tool — and
the attempt records a `timeout`; whatever the workspace holds then is judged. The one exception
is an agent that only copies the task's own files (`baseline`, `expert`): it declares
`in_process` and runs in the harness (`engines/attempt.py`), sparing a Python start a task.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from pydantic import ValidationError

from gauntlet import process
from gauntlet.agents.base import AgentContext, AgentResult, Usage, make_agent
from gauntlet.errors import ConfigError
from gauntlet.task import Task

#: Seconds past the wall budget that an agent gets to stop by itself before it is killed.
GRACE_S = 30.0


def run_in_child(spec: str, ctx: AgentContext) -> AgentResult:
    """Run agent `spec` on `ctx` in a child process, killed at the wall budget plus grace."""
    with tempfile.TemporaryDirectory(prefix="gauntlet-agent-") as tmp:
        context_path = Path(tmp) / "context.json"
        result_path = Path(tmp) / "result.json"
        context_path.write_text(
            json.dumps(
                {
                    "spec": spec,
                    "task_root": str(ctx.task.root),
                    "task": ctx.task.spec.model_dump(mode="json"),
                    "context": ctx.model_dump(mode="json", exclude={"task"}),
                }
            )
        )
        started = time.monotonic()
        # die_with_parent: a harness killed with `kill -9` takes its agents along (each its
        # client and sandbox, `CLIAgent`), since a result nobody reads is worth no work.
        child = process.Child(
            [sys.executable, "-m", "gauntlet.agents.child", str(context_path), str(result_path)],
            die_with_parent=True,
        )
        finished = child.wait(timeout_s=ctx.budget.wall_s + GRACE_S, kill_tree=True)
        wall_s = round(time.monotonic() - started, 3)
        if finished.timed_out:
            return AgentResult(
                status="timeout",
                usage=Usage(wall_s=wall_s),
                message=f"killed at the wall budget of {ctx.budget.wall_s:g} s "
                f"(+{GRACE_S:g} s grace), with everything it started",
                transcript=ctx.transcript if ctx.transcript.exists() else None,
            )
        try:
            return AgentResult.model_validate_json(result_path.read_text())
        except (OSError, ValidationError) as err:
            how = finished.signal_name or f"exit code {finished.returncode}"
            return AgentResult(
                status="error",
                usage=Usage(wall_s=wall_s),
                message=f"the agent's process ended ({how}) without a result ({err}):\n"
                f"{finished.stderr[-3000:]}",
            )


def main(argv: list[str]) -> int:
    """Child entry point: rebuild the context, run the agent, write its result."""
    context_path, result_path = Path(argv[0]), Path(argv[1])
    raw = json.loads(context_path.read_text())
    task = Task.model_validate({"spec": raw["task"], "root": Path(raw["task_root"])})
    ctx = AgentContext.model_validate({**raw["context"], "task": task})
    try:
        result = make_agent(raw["spec"]).run(ctx)
    except ConfigError as err:
        # The agent cannot be made here (its binary or key missing on this host, as on a Ray
        # node without the client): the remedy, not a traceback.
        result = AgentResult(status="error", message=f"the agent could not start: {err}")
    except Exception:  # noqa: BLE001 - an agent's failure is recorded, never a dead run
        result = AgentResult(status="error", message=traceback.format_exc(limit=8)[-4000:])
    result_path.write_text(result.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
