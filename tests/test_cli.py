"""The command line as users run it: exit codes, JSON, tables, errors without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gauntlet._cli.run import parse_duration
from gauntlet.errors import ConfigError
from tests.support.fixtures import TASKS

SCALE_ADD_DIR = TASKS / "triton2triton" / "scale_add"
CORPUS = Path(__file__).parent / "judge" / "corpus"


def gauntlet(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GAUNTLET_TASKS_DIR": str(TASKS), "COLUMNS": "200"}
    return subprocess.run(  # noqa: TID251 - the CLI as a user runs it
        [sys.executable, "-m", "gauntlet", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_eval_of_a_task_folder_by_absolute_path_passes_with_exit_0_and_json() -> None:
    done = gauntlet(
        "eval",
        str(SCALE_ADD_DIR.resolve()),
        str(SCALE_ADD_DIR / "expert" / "kernel.py"),
        "--configs",
        "visible",
        "--json",
        "--seed",
        "1",
    )
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["status"] == "pass" and verdict["kind"] == "verdict"


def test_eval_failed_gate_exits_1_with_the_reason() -> None:
    done = gauntlet(
        "eval", "triton2triton/scale_add", str(CORPUS / "wrong_result.py"), "--configs", "visible"
    )
    assert done.returncode == 1
    assert "incorrect" in done.stdout and "mismatch at index" in done.stdout


def test_bad_usage_exits_2_without_traceback() -> None:
    missing = gauntlet("eval", "triton2triton/scale_add", "/nonexistent/kernel.py")
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    unknown = gauntlet("eval", "triton2triton/nope", "kernel.py")
    assert unknown.returncode == 2 and "unknown task 'triton2triton/nope'" in unknown.stderr
    bad_option = gauntlet("eval", "triton2triton/scale_add", "k.py", "--configs", "some")
    assert bad_option.returncode == 2
    no_time = gauntlet("eval", "triton2triton/scale_add", "k.py", "--time-cap", "0")
    assert no_time.returncode == 2 and "Traceback" not in no_time.stderr
    redo = gauntlet("run", "--redo", "cuda2cuda/gemv", "--agent", "baseline")
    assert redo.returncode == 2 and "--redo needs --resume RUN_DIR" in redo.stderr


def test_malformed_task_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text('id = "x/y"\n')
    done = gauntlet("eval", str(tmp_path), "kernel.py")
    assert done.returncode == 2
    assert "task.toml" in done.stderr and "required key is missing" in done.stderr


def test_tasks_list_json_and_show() -> None:
    listed = gauntlet("tasks", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "triton2triton/scale_add" in [t["id"] for t in json.loads(listed.stdout)]
    shown = gauntlet("tasks", "show", "triton2triton/scale_add")
    assert shown.returncode == 0 and "C1" in shown.stdout and "kernel.py" in shown.stdout
    unknown_suite = gauntlet("tasks", "--suite", "nothing")
    assert unknown_suite.returncode == 2 and "unknown suite 'nothing'" in unknown_suite.stderr


def test_tasks_check_passes_the_fixture() -> None:
    done = gauntlet("tasks", "check", "triton2triton/scale_add", "--device", "cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    for check in ("baseline passes", "expert passes", "zero and identity outputs fail"):
        assert check in done.stdout


def test_devices_lists_the_cpu() -> None:
    done = gauntlet("devices")
    assert done.returncode == 0 and "cpu" in done.stdout


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("1.5h", 5400), ("1h30m", 5400), ("2h5m10s", 7510), ("600", 600)],
)
def test_budgets_read_every_usual_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "0m", "soon", "30x", "1m1h", "5m5m", "-3m", ""])
def test_a_bad_budget_is_a_clear_error(text: str) -> None:
    with pytest.raises(ConfigError, match=f"budget '{text}'"):
        parse_duration(text)


def test_a_bad_budget_exits_2_and_budgets_reach_the_run_which_logs_a_line_per_attempt(
    tmp_path: Path,
) -> None:
    zero = gauntlet("run", "--budget", "0", "--agent", "baseline", "--out", str(tmp_path / "a"))
    assert zero.returncode == 2 and "must be more than zero" in zero.stderr
    assert "Traceback" not in zero.stderr
    out = tmp_path / "run"
    done = gauntlet(
        "run",
        "--agent",
        "baseline",
        "--device",
        "cpu",
        "--budget",
        "1h30m",
        "--tokens",
        "5000",
        "--cost",
        "0.5",
        "--out",
        str(out),
        "--seed",
        "1",
    )
    assert done.returncode == 0, done.stderr
    # Its output is no terminal: a line per attempt, not a live table.
    assert "[1/1] triton2triton/scale_add [baseline] pass" in done.stdout
    budget = json.loads((out / "run.json").read_text())["budget"]
    assert budget == {"wall_s": 5400.0, "turns": 0, "tokens": 5000, "cost_usd": 0.5}


def test_version_and_bad_paths_and_devices_exit_as_documented() -> None:
    version = gauntlet("--version")
    assert version.returncode == 0 and version.stdout.startswith("gauntlet ")
    for args in (["report", "/nonexistent/run"], ["leaderboard", "/nonexistent/run"]):
        done = gauntlet(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert "does not exist" in done.stderr and "Traceback" not in done.stderr
    not_a_run = gauntlet("run", "--resume", str(TASKS))
    assert not_a_run.returncode == 2 and "is not a run directory" in not_a_run.stderr
    nosuch = gauntlet("tasks", "--device", "nosuch")
    assert nosuch.returncode == 2 and "device 'nosuch' is not available here" in nosuch.stderr


def test_dry_run_lists_the_attempts_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = gauntlet("run", "--dry-run", "--agent", "baseline", "--attempts", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "dry run: 2 attempts" in done.stdout
    assert done.stdout.count("triton2triton/scale_add") == 2
    assert not out.exists()


def test_tasks_check_skips_what_no_device_here_runs(tmp_path: Path) -> None:
    done = gauntlet("tasks", "check", "cuda2cuda/scale_add_cuda")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped: no device here runs" in done.stdout and "FAIL" not in done.stdout


def test_repeated_tasks_globs_add_up() -> None:
    from gauntlet import suites

    both = suites.select(None, ["triton2triton/*", "cuda2cuda/*"], root=TASKS)
    assert {t.task_id for t in both} == {"triton2triton/scale_add", "cuda2cuda/scale_add_cuda"}
    one = suites.select(None, "cuda2cuda/*", root=TASKS)
    assert [t.task_id for t in one] == ["cuda2cuda/scale_add_cuda"]
    with pytest.raises(ConfigError, match="pattern 'x/\\*', 'y/\\*'"):
        suites.select(None, ["x/*", "y/*"], root=TASKS)
