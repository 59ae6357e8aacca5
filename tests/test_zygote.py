"""The zygote (`gauntlet.zygote`): children forked from a pre-imported Python, real processes."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gauntlet import process
from gauntlet.judge import judge, python_backend, workers
from gauntlet.judge.backend import BuildResult
from gauntlet.zygote import Zygote, ZygoteError
from tests.support.fixtures import SCALE_ADD
from tests.support.processes import gone

ENV = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """A zygote with nothing preloaded: what it forks is what any zygote forks."""
    started = Zygote((), ENV, tmp_path_factory.mktemp("zygote-home"), timeout_s=60)
    yield started
    started.close()


def _module(folder: Path, code: str) -> Path:
    """`folder` holding `probe.py` with `code`: `python -m probe` there runs it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.py").write_text(textwrap.dedent(code))
    return folder


def _fork(zygote: Zygote, folder: Path, *args: str, **kwargs: object) -> process.Child:
    env = {**ENV, "HOME": str(folder), "TMPDIR": str(folder)}
    argv = [sys.executable, "-m", "probe", *args]
    return process.Child(argv, env=env, cwd=folder, zygote=zygote, **kwargs)  # type: ignore[arg-type]


def test_a_child_runs_the_module_as_python_m_would(zygote: Zygote, tmp_path: Path) -> None:
    folder = _module(
        tmp_path / "a",
        """
        import json, os, sys, tempfile
        print(json.dumps({
            "argv": sys.argv[1:], "cwd": os.getcwd(), "path0": sys.path[0],
            "tmp": tempfile.gettempdir(), "env": dict(os.environ), "name": __name__,
            "stdin": sys.stdin.read(),
        }))
        sys.stderr.write("to stderr\\n")
        sys.exit(7)
        """,
    )
    finished = _fork(zygote, folder, "x", "--y").wait(30)
    assert finished.returncode == 7, finished.stderr
    seen = json.loads(finished.stdout)
    assert seen["argv"] == ["x", "--y"]
    assert seen["cwd"] == seen["path0"] == seen["tmp"] == str(folder)
    assert seen["env"] == {**ENV, "HOME": str(folder), "TMPDIR": str(folder)}
    assert seen["name"] == "__main__"
    assert seen["stdin"] == ""
    assert finished.stderr == "to stderr\n"


def test_an_uncaught_exception_and_a_signal_end_it_as_they_would_end_python(
    zygote: Zygote, tmp_path: Path
) -> None:
    raising = _module(tmp_path / "raise", "raise RuntimeError('boom')\n")
    finished = _fork(zygote, raising).wait(30)
    assert finished.returncode == 1
    assert "RuntimeError: boom" in finished.stderr
    killed = _module(tmp_path / "kill", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert _fork(zygote, killed).wait(30).returncode == -signal.SIGTERM


def test_passed_descriptors_keep_their_numbers(zygote: Zygote, tmp_path: Path) -> None:
    read, write = os.pipe()
    folder = _module(tmp_path / "fd", "import os, sys\nos.write(int(sys.argv[1]), b'through')\n")
    try:
        finished = _fork(zygote, folder, str(write), pass_fds=(write,)).wait(30)
        assert finished.returncode == 0, finished.stderr
        assert os.read(read, 100) == b"through"
    finally:
        os.close(read)
        os.close(write)


def test_its_group_can_be_signalled_as_soon_as_the_spawn_returns(
    zygote: Zygote, tmp_path: Path
) -> None:
    # The zygote answers once the child leads its own session: a kill at once finds it.
    folder = _module(tmp_path / "sleep", "import time\ntime.sleep(60)\n")
    for _ in range(5):
        child = _fork(zygote, folder)
        os.killpg(child.pid, signal.SIGKILL)
        assert child.wait(10).returncode == -signal.SIGKILL


def test_a_timeout_kills_the_child_and_what_it_started(zygote: Zygote, tmp_path: Path) -> None:
    folder = _module(
        tmp_path / "tree",
        """
        import subprocess, sys, time
        helper = subprocess.Popen(["sleep", "60"])
        print(helper.pid, flush=True)
        time.sleep(60)
        """,
    )
    child = _fork(zygote, folder)
    deadline = time.monotonic() + 20
    while not child.tree() and time.monotonic() < deadline:
        time.sleep(0.05)
    helpers = child.tree()
    assert helpers
    finished = child.wait(0.5)
    assert finished.timed_out
    assert all(gone(pid, 5) for pid in helpers)


def test_a_dead_zygote_takes_its_children_and_refuses_spawns(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    zygote = Zygote((), ENV, tmp_path / "home", timeout_s=60)
    folder = _module(tmp_path / "sleep", "import time\ntime.sleep(60)\n")
    child = _fork(zygote, folder)
    os.kill(zygote.child.pid, signal.SIGKILL)
    finished = child.wait(10)
    assert finished.returncode == -signal.SIGKILL
    assert gone(child.pid, 5)
    assert not zygote.alive()
    with pytest.raises(ZygoteError, match="zygote is gone"):
        _fork(zygote, folder)
    zygote.close()


def test_an_owner_that_dies_takes_the_zygote_and_its_children(tmp_path: Path) -> None:
    folder = _module(tmp_path / "sleep", "import time\ntime.sleep(60)\n")
    owner = _module(
        tmp_path / "owner",
        f"""
        import os, sys, time
        from pathlib import Path
        from gauntlet import process
        from gauntlet.zygote import Zygote
        zygote = Zygote((), {ENV!r}, Path({str(tmp_path / "home")!r}), timeout_s=60)
        argv = [sys.executable, "-m", "probe"]
        child = process.Child(argv, env={ENV!r}, cwd=Path({str(folder)!r}), zygote=zygote)
        print(zygote.child.pid, child.pid, flush=True)
        time.sleep(60)
        """,
    )
    (tmp_path / "home").mkdir()
    env = {**ENV, "PYTHONPATH": str(Path(workers.__file__).resolve().parents[2])}
    started = process.Child([sys.executable, str(owner / "probe.py")], env=env, cwd=owner)
    deadline = time.monotonic() + 60
    line = ""
    while not line and time.monotonic() < deadline and started.poll() is None:
        time.sleep(0.05)
        with open(f"/proc/{started.pid}/fd/1", "rb") as out:
            line = out.read().decode()
    pids = [int(p) for p in line.split()]
    assert len(pids) == 2, started.wait(0).stderr
    started.kill_group()
    started.wait(5)
    assert all(gone(pid, 10) for pid in pids)


def test_a_failed_preload_is_a_zygote_error_that_says_why(tmp_path: Path) -> None:
    with pytest.raises(ZygoteError, match="no_such_module_here"):
        Zygote(("no_such_module_here:f",), ENV, tmp_path, timeout_s=60)


def test_a_preload_after_which_a_fork_finds_cuda_unusable_is_refused(tmp_path: Path) -> None:
    # A preload that asked the CUDA driver anything (`torch.cuda.is_available()`) leaves
    # `torch.cuda.is_initialized()` false, yet every child forked after it fails to start CUDA:
    # the zygote asks a forked probe, as PyTorch would tell that child. No GPU here, so the
    # preload makes PyTorch say so.
    (tmp_path / "poisons.py").write_text(
        "import torch\n\n\ndef cuda_forks():\n    torch.cuda._is_in_bad_fork = lambda: True\n"
    )
    with pytest.raises(ZygoteError, match="the preload initialised CUDA"):
        Zygote(("poisons:cuda_forks",), ENV, tmp_path, timeout_s=60)


def test_the_judges_zygote_is_started_again_once_it_died() -> None:
    first = workers.worker_zygote("cpu")
    assert first is not None
    assert workers.worker_zygote("cpu") is first
    os.kill(first.child.pid, signal.SIGKILL)
    first.child.wait(10)
    second = workers.worker_zygote("cpu")
    assert second is not None and second is not first and second.alive()


def test_where_no_zygote_starts_the_workers_start_on_their_own_and_judge_alike(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A kernel without pidfd_open, a preload that fails: the judge says why, once, and each
    # worker is a program of its own again.
    tries: list[str] = []

    def refuse(*args: object, **kwargs: object) -> Zygote:
        tries.append("start")
        raise ZygoteError("the zygote did not start: refused by the test")

    monkeypatch.setattr(workers, "Zygote", refuse)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "a-key-of-this-test-alone")
    task = SCALE_ADD()
    with caplog.at_level(logging.WARNING, logger="gauntlet.judge.workers"):
        verdict = judge(task, task.root / "expert", device="cpu", seed=8110)
    assert verdict.status == "pass", verdict.reason
    assert tries == ["start"]
    assert "judge workers start without a zygote" in caplog.text
    assert "refused by the test" in caplog.text


def test_a_zygote_found_dead_at_the_spawn_is_replaced_once(monkeypatch: pytest.MonkeyPatch) -> None:
    dead = workers.worker_zygote("cpu")
    assert dead is not None
    os.kill(dead.child.pid, signal.SIGKILL)
    dead.child.wait(10)
    real = workers.worker_zygote
    handed: list[Zygote | None] = []

    def dead_first(kind: str) -> Zygote | None:
        handed.append(dead if not handed else real(kind))
        return handed[-1]

    monkeypatch.setattr(workers, "worker_zygote", dead_first)
    task = SCALE_ADD()
    verdict = judge(task, task.root / "expert", device="cpu", seed=8111)
    assert verdict.status == "pass", verdict.reason
    assert handed[0] is dead and all(z is not dead for z in handed[1:])
    assert "rejudged" not in verdict.environment


def test_a_judgment_starts_the_zygote_while_its_submission_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The zygote's imports overlap the build (a CUDA build takes seconds to a minute): the
    # build below returns only once a new zygote serves, which nothing but the build asked for.
    old = workers.worker_zygote("cpu")
    assert old is not None
    os.kill(old.child.pid, signal.SIGKILL)
    old.child.wait(10)
    real = python_backend.PythonBackend.build
    served: list[bool] = []

    def build(self: python_backend.PythonBackend, *args: Any) -> BuildResult:
        result = real(self, *args)
        deadline = time.monotonic() + 60
        while not any(z.alive() for z in workers._zygotes.values()):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        served.append(any(z.alive() for z in workers._zygotes.values()))
        return result

    monkeypatch.setattr(python_backend.PythonBackend, "build", build)
    task = SCALE_ADD()
    verdict = judge(task, task.root / "expert", device="cpu", seed=8112)
    assert verdict.status == "pass", verdict.reason
    assert served == [True]
