"""The line-streaming and tree-killing additions to gauntlet.process, with real processes."""

from __future__ import annotations

import sys
import time

import psutil

from gauntlet import process


def test_lines_reach_the_callback_as_they_come_and_the_capture_is_capped() -> None:
    lines: list[str] = []
    code = "import sys\nfor i in range(2000): print(f'line {i}', flush=True)\nsys.stderr.write('e')"
    child = process.Child(
        [sys.executable, "-c", code], on_stdout_line=lines.append, output_limit=100
    )
    finished = child.wait(timeout_s=30)
    assert lines == [f"line {i}" for i in range(2000)]
    assert finished.stdout.startswith("line 0\nline 1\n")
    assert "[... output cut at 100 bytes ...]" in finished.stdout
    assert finished.stderr == "e" and finished.returncode == 0


def test_a_child_that_writes_before_reading_stdin_does_not_block() -> None:
    code = "import sys\nprint('x' * 200_000, flush=True)\nprint(len(sys.stdin.read()))"
    lines: list[str] = []
    child = process.Child(
        [sys.executable, "-c", code], stdin_data=b"y" * 300_000, on_stdout_line=lines.append
    )
    assert not child.wait(timeout_s=30).timed_out
    assert lines[-1] == "300000"


def test_kill_tree_reaches_descendants_that_left_the_group() -> None:
    token = f"gauntlet-left-group-{time.monotonic_ns()}"
    code = (
        "import os, subprocess, sys, time\n"
        "for own in (False, True):\n"
        "    subprocess.Popen([sys.executable, '-c', "
        "f'import os, time\\nif {own}: os.setpgid(0, 0)\\nwhile True: time.sleep(1)', "
        f"'{token}'])\n"
        "while True: time.sleep(1)\n"
    )

    def alive() -> list[psutil.Process]:
        found = [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]
        return [p for p in found if p.status() != psutil.STATUS_ZOMBIE]

    child = process.Child([sys.executable, "-c", code])
    deadline = time.monotonic() + 20
    while len(alive()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(alive()) == 2
    finished = child.wait(timeout_s=0.2, kill_tree=True)
    assert finished.timed_out and finished.signal_name == "SIGKILL"
    deadline = time.monotonic() + 10
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive() == []
