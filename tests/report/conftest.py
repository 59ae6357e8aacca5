from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.report import write_report
from tests.support.rundirs import FAST_BOOTSTRAP, sample_run


@pytest.fixture(scope="session")
def sample_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sample run directory and its report, written with `FAST_BOOTSTRAP`."""
    run_dir = sample_run(tmp_path_factory.mktemp("report") / "run")
    return run_dir, write_report(run_dir, bootstrap=FAST_BOOTSTRAP)
