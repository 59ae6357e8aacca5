"""What a kept reference worker resets between judgments (`resident.py`), in this process."""

from __future__ import annotations

import os
import random
import resource
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from gauntlet.judge import resident


@pytest.fixture
def state() -> Iterator[resident.ProcessState]:
    """This process's state as a reference worker's first judgment finds it; put back after."""
    captured = resident.ProcessState()
    try:
        yield captured
    finally:
        captured.restore(Path("/nonexistent"))


def test_restore_puts_back_what_task_code_changed(
    tmp_path: Path, state: resident.ProcessState
) -> None:
    settings = [read() for read, _, _ in state.settings]
    (tmp_path / "kept_by_the_task.py").write_text("CALLS = []\n")
    sys.path.insert(0, str(tmp_path))
    import kept_by_the_task  # noqa: F401 - a module of the task's folder, with state

    sys.modules["_gauntlet_reference"] = type(sys)("_gauntlet_reference")
    os.environ["GAUNTLET_LEFT_BY_A_TASK"] = "1"
    warnings.simplefilter("error")
    torch.set_default_dtype(torch.float64)
    torch.set_float32_matmul_precision("high")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = not torch.backends.cudnn.allow_tf32
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_grad_enabled(False)
    torch.manual_seed(1234)
    random.seed(1234)

    idle = state.restore(tmp_path)

    assert "kept_by_the_task" not in sys.modules and "_gauntlet_reference" not in sys.modules
    assert str(tmp_path) not in sys.path
    assert "GAUNTLET_LEFT_BY_A_TASK" not in os.environ
    assert warnings.filters == state.warnings
    assert [read() for read, _, _ in state.settings] == settings
    assert torch.get_default_dtype() == torch.float32
    # PyTorch's generator as a fresh worker's (seeded 0); Python's drawn anew.
    drawn = torch.rand(4)
    torch.manual_seed(0)
    assert torch.equal(drawn, torch.rand(4))
    random.seed(1234)
    expected = random.random()
    random.seed(1234)
    state.restore(tmp_path)
    assert random.random() != expected
    assert idle.host_bytes > 0 and idle.device_bytes == 0


def test_restore_keeps_modules_of_other_folders(
    tmp_path: Path, state: resident.ProcessState
) -> None:
    assert "tabnanny" not in state.modules
    import tabnanny  # noqa: F401 - a library module first loaded during a judgment stays

    state.restore(tmp_path)
    assert "tabnanny" in sys.modules


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def test_a_judgments_memory_limit_is_lifted_after_it() -> None:
    before = resource.getrlimit(resource.RLIMIT_AS)
    mapped = _mapped_bytes() + (1 << 30)
    with resident.memory_limited(64 << 20, mapped_bytes=mapped):
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        assert soft == mapped + (64 << 20) and hard == before[1]
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    with resident.memory_limited(0, mapped_bytes=mapped):
        assert resource.getrlimit(resource.RLIMIT_AS) == before
