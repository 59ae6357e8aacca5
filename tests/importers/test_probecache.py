"""Probe results kept between runs: reused by a later import, keyed by what the probe reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.importers import kernelbench
from gauntlet.importers.kbprobe import CheckRequest
from gauntlet.importers.kernelbench import ImportOptions, import_problem
from gauntlet.importers.probecache import ProbeCache, probe_key

ROOT = Path(__file__).parent / "kernelbench"
PROBLEM = ROOT / "KernelBench" / "level1" / "1_Linear_Scale.py"
OPTIONS = ImportOptions(levels=[1], track="torch2triton", max_bytes=1 << 20, max_flops=2e7)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_later_import_reuses_every_finished_probe_and_writes_the_same_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = tmp_path / "call1" / "probes.jsonl"
    first = import_problem(1, PROBLEM, tmp_path / "a", OPTIONS, ProbeCache(kept))
    assert first.outcome == "imported"
    assert len(kept.read_text().splitlines()) == 2  # analyze, then one check

    def no_probe(*_: object) -> str:
        raise AssertionError("a kept probe ran again")

    monkeypatch.setattr(kernelbench, "_run_probe", no_probe)
    cache = ProbeCache(tmp_path / "call2" / "probes.jsonl", earlier=[kept])
    again = import_problem(1, PROBLEM, tmp_path / "b", OPTIONS, cache)
    assert again == first
    assert _files(tmp_path / "b") == _files(tmp_path / "a")
    assert not (tmp_path / "call2" / "probes.jsonl").exists()  # nothing new to keep


def test_a_check_is_keyed_by_the_task_files_not_the_folders_path(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "task.toml").write_text('id = "x"\n')
    key_a = probe_key("check", CheckRequest(task_dir="a"), tmp_path / "a")
    assert key_a == probe_key("check", CheckRequest(task_dir="b"), tmp_path / "b")
    (tmp_path / "b" / "task.toml").write_text('id = "y"\n')
    assert key_a != probe_key("check", CheckRequest(task_dir="b"), tmp_path / "b")


def test_a_line_torn_by_a_stopped_run_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "probes.jsonl"
    ProbeCache(path).put("k1", '{"refused": null}')
    with path.open("a") as stream:
        stream.write('{"key": "k2", "resu')
    cache = ProbeCache(path)
    assert (cache.get("k1"), cache.get("k2")) == ('{"refused": null}', None)
