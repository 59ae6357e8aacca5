"""Suites: which tasks a suite's patterns take (`suites.in_suite`), the suite `make run` runs,
and the suites the importers add to a tasks folder's suites.toml (`suites.add_suite`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gauntlet import suites
from gauntlet.errors import ConfigError
from gauntlet.importers.report import ImportReport, ProblemReport

ROOT = Path(__file__).resolve().parents[1]


def test_the_last_matching_pattern_decides_and_a_bang_takes_tasks_out() -> None:
    patterns = ["*", "!accel/tile/*", "accel/tile/gemm"]
    assert suites.in_suite("accel/npu/gemm", patterns)
    assert not suites.in_suite("accel/tile/relu", patterns)
    assert suites.in_suite("accel/tile/gemm", patterns)
    assert not suites.in_suite("smoke/a", ["!smoke/*"])
    assert suites.in_suite("smoke/a", ["other/*", "smoke/*"])


def test_make_run_takes_every_task_but_most_tile_tasks_which_their_suite_keeps() -> None:
    table = suites.suites()
    assert "--suite standard" in (ROOT / "Makefile").read_text(encoding="utf-8")
    ids = suites.task_ids()
    standard = [i for i in ids if suites.in_suite(i, table["standard"])]
    tile = [i for i in ids if i.startswith("accel/tile/")]
    assert [i for i in ids if i not in standard] == [i for i in tile if i not in standard]
    assert 3 <= len([i for i in tile if i in standard]) <= 4 < len(tile)
    assert all(suites.in_suite(i, table["accel-tile"]) for i in tile)


def test_a_suite_is_appended_once_and_never_rewritten(tmp_path: Path) -> None:
    (tmp_path / "suites.toml").write_text('smoke = ["a/*"]', encoding="utf-8")
    assert suites.add_suite("kb-l1", ["imported/kb/l1/*"], tmp_path)
    assert not suites.add_suite("kb-l1", ["imported/kb/l1/*"], tmp_path)
    assert suites.suites(tmp_path) == {
        "all": ["*"],
        "smoke": ["a/*"],
        "kb-l1": ["imported/kb/l1/*"],
    }
    with pytest.raises(ConfigError, match="suite 'kb-l1' is already"):
        suites.add_suite("kb-l1", ["elsewhere/*"], tmp_path)


def test_each_source_names_its_suites() -> None:
    def report(source: str, problems: list[tuple[str, str | None]]) -> ImportReport:
        lines = [
            ProblemReport(problem=p, outcome="imported" if t else "refused", task_id=t)
            for p, t in problems
        ]
        return ImportReport(source=source, path="", out="", created=datetime.now(UTC),
                            problems=lines)  # fmt: skip

    kb = report("kernelbench", [("level1/1_A.py", "kb/l1/1_a"), ("level3/2_B.py", None)])
    assert kb.suites("imported/kb") == {"kb-l1": ["imported/kb/l1/*"]}
    rkb = report("robust-kbench", [("layernorm/func_forward.py", "rkb/layernorm")])
    assert rkb.suites("imported/rkb") == {"rkb": ["imported/rkb/*"]}
