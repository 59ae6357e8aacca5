"""The per-GPU lock serialises holders across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gauntlet import settings
from gauntlet.judge import devicelock


def test_a_second_process_waits_for_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The holder is another run with a cache folder of its own: the lock is the machine's.
    monkeypatch.setattr(settings, "LOCK_DIR", tmp_path / "locks")
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path / "ours")
    holder = (
        "import time\n"
        "from gauntlet.judge import devicelock\n"
        "with devicelock.exclusive('cuda:0'):\n"
        "    print('held', flush=True); time.sleep(1.0)\n"
    )
    env = {
        **os.environ,
        "GAUNTLET_LOCK_DIR": str(tmp_path / "locks"),
        "GAUNTLET_CACHE_DIR": str(tmp_path / "theirs"),
    }
    proc = subprocess.Popen(  # noqa: TID251
        [sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    with devicelock.exclusive("cuda:0") as waited:
        assert waited > 0.3
    proc.wait(timeout=10)
    with devicelock.exclusive("cuda:1") as waited:
        assert waited < 0.3


def test_the_lock_names_the_physical_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert devicelock.physical("cuda:0") == "cuda:3"
    assert devicelock.physical("cuda:1") == "cuda:1"
    assert devicelock.physical("cpu") == "cpu"
    # A process that sees only GPU 3 (a Ray GPU task) holds what `cuda:3` elsewhere waits for.
    holder = (
        "import os, time; from gauntlet import settings; from pathlib import Path;"
        f"settings.CACHE_DIR = Path({str(tmp_path)!r});"
        "from gauntlet.judge import devicelock\n"
        "with devicelock.exclusive('cuda:0'):\n"
        "    print('held', flush=True); time.sleep(1.0)\n"
    )
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "3"}
    proc = subprocess.Popen(  # noqa: TID251
        [sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with devicelock.exclusive("cuda:0") as waited:
        assert waited < 0.3
    with devicelock.exclusive("cuda:3") as waited:
        assert waited > 0.3
    proc.wait(timeout=10)
