"""`gauntlet run --agent toolcall --model M --base-url URL` end to end, as a user runs it.

The command line starts the run; the agent runs in its own child process and talks over HTTP to
a scripted loopback OpenAI-compatible server in this test; the judge records the verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI, tool_call

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tasks" / "accel" / "npu" / "relu"


def test_a_toolcall_run_through_the_command_line(tmp_path: Path) -> None:
    expert = (TASK / "expert.asm").read_text()
    script = [
        tool_call("read_file", path="TASK.md"),
        tool_call("write_file", path="kernel.asm", content=expert),
        tool_call("submit"),
    ]
    out = tmp_path / "run"
    with FakeOpenAI(script) as server:
        done = subprocess.run(  # noqa: TID251 - the CLI as a user runs it
            [
                sys.executable,
                "-m",
                "gauntlet",
                "run",
                "--agent",
                "toolcall",
                "--model",
                "fake-model",
                "--base-url",
                server.base_url,
                "--tasks",
                "accel/npu/relu",
                "--out",
                str(out),
                "--seed",
                "3",
            ],
            env={**os.environ, "OPENAI_API_KEY": "test-key"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    (line,) = (out / "attempts.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["agent"] == "toolcall" and record["model"] == "fake-model"
    assert record["status"] == "pass", record["reason"]
    assert record["usage"]["turns"] >= 3
    assert (out / "attempts" / record["attempt_id"] / "transcript.jsonl").is_file()
