"""Shared behaviour of the fake CLI agents (stdlib only: it also runs under bwrap).

The scenario is the model name the harness passes (`--model`, `-m`): `solve` edits the
kernel and calls `gauntlet-ws check`; `spend` keeps reporting usage and never ends; `fail`
exits with an error; `runaway` writes a partial kernel, starts children and hangs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def option(argv: list[str], *names: str, default: str = "") -> str:
    for index, word in enumerate(argv[:-1]):
        if word in names:
            return argv[index + 1]
    return default


def emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def model_call(message_id: str, usage: dict, tokens_out: int) -> None:
    """Claude Code's raw stream events of one model call: its start, a fragment, its end."""
    start = {"type": "message_start", "message": {"id": message_id, "usage": usage}}
    emit({"type": "stream_event", "event": start})
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "."}}
    emit({"type": "stream_event", "event": text})
    end = {"type": "message_delta", "usage": {"output_tokens": tokens_out}}
    emit({"type": "stream_event", "event": end})


def side_line(path: Path, record: dict) -> None:
    """Append a line to a side file the harness follows (Codex's rollout, aider's analytics)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def facts(argv: list[str]) -> dict:
    """What the harness gave us: command line, environment, folder."""
    return {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}


def edit_kernel(marker: str) -> None:
    kernel = Path("kernel.py")
    brief = Path("TASK.md").read_text()
    assert "gauntlet-ws" in brief
    kernel.write_text(kernel.read_text() + f"\n# edited by {marker}\n")


def workspace_tool(*args: str) -> tuple[int, str]:
    done = subprocess.run(["gauntlet-ws", *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def runaway(marker: str) -> None:
    """Write a partial submission, start children (one in its own group) and hang."""
    edit_kernel(f"{marker} (partial)")
    token = f"fake-runaway-{os.getpid()}"
    children = []
    for own_group in (False, True):
        code = f"import os, time\nif {own_group}: os.setpgid(0, 0)\nwhile True: time.sleep(1)"
        children.append(subprocess.Popen([sys.executable, "-c", code, token]))  # noqa: TID251
    say(json.dumps({"type": "text", "children": [c.pid for c in children], "token": token}))
    while True:
        time.sleep(1)


def spend(report) -> None:  # noqa: ANN001
    """Report usage forever, one model call at a time."""
    turn = 0
    while True:
        turn += 1
        report(turn)
        time.sleep(0.05)


def fail() -> None:
    sys.stderr.write("fake agent: the model endpoint refused the key\n")
    sys.exit(3)
