"""The per-GPU lock serialises holders across processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gauntlet import settings
from gauntlet.judge import devicelock


def test_a_second_process_waits_for_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path)
    holder = (
        "import time, sys; from gauntlet import settings; from pathlib import Path;"
        f"settings.CACHE_DIR = Path({str(tmp_path)!r});"
        "from gauntlet.judge import devicelock\n"
        "with devicelock.exclusive('cuda:0'):\n"
        "    print('held', flush=True); time.sleep(1.0)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)  # noqa: TID251
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    with devicelock.exclusive("cuda:0") as waited:
        assert waited > 0.3
    proc.wait(timeout=10)
    with devicelock.exclusive("cuda:1") as waited:
        assert waited < 0.3
