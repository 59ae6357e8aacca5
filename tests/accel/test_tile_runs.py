"""The tile simulator on the tile tasks' own programs, against what it did before its speed work.

`golden/tile_runs.json` (see `tests/support/tile_runs.py`) pins the outputs, the profile, the
fault and every tile's final state of each task's baseline and expert on its visible and fixed
hidden configs, and of fault variants of each expert. It may only be re-recorded for a
deliberate change of the simulator's semantics or of the tasks' programs. The hidden configs
(the largest runs) are checked under `--runslow`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import tile_runs

GOLDEN: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "golden" / "tile_runs.json").read_text(encoding="utf-8")
)


def test_the_golden_file_covers_every_task_and_fault_kind() -> None:
    assert sorted(GOLDEN) == tile_runs.NAMES
    kinds = {(run["fault"] or {}).get("kind") for runs in GOLDEN.values() for run in runs.values()}
    assert {None, "step_limit", "dma_race", "stream_race", "deadlock"} <= kinds


def _check(name: str, hidden: bool) -> None:
    task = tile_runs.load_task(tile_runs.TILE / name)
    hidden_labels = {c.name for c in task.spec.configs.hidden.fixed}
    wanted = {
        key: run for key, run in GOLDEN[name].items() if (key.split()[1] in hidden_labels) == hidden
    }
    got = tile_runs.task_digests(name, hidden=hidden)
    assert set(got) == set(wanted)
    for key in sorted(wanted):
        assert got[key] == wanted[key], f"{name} {key}"


@pytest.mark.parametrize("name", tile_runs.NAMES)
def test_visible_configs_and_faults_match_the_golden_runs(name: str) -> None:
    _check(name, hidden=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", tile_runs.NAMES)
def test_hidden_configs_match_the_golden_runs(name: str) -> None:
    _check(name, hidden=True)
