"""Folders as bytes: a task bundle unpacks to the same task, and unpacking stays inside."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from gauntlet import settings
from gauntlet.engines.bundle import (
    bundle_task,
    empty_archive,
    pack_folder,
    task_from_bundle,
    unpack,
)
from gauntlet.suites import load_by_id


def test_a_task_bundle_unpacks_once_to_the_same_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path)
    task = load_by_id("accel/npu/relu")
    bundle = bundle_task(task)
    assert bundle_task(task) == bundle  # the same folder packs to the same bytes
    shipped = task_from_bundle(bundle)
    assert shipped.root == tmp_path / "bundled-tasks" / bundle.digest
    assert shipped.spec == task.spec
    names = {p.relative_to(task.root) for p in task.root.rglob("*") if "__pycache__" not in str(p)}
    assert {p.relative_to(shipped.root) for p in shipped.root.rglob("*")} == names
    marker = shipped.root / "marker"
    marker.write_text("unpacked once")
    assert task_from_bundle(bundle).root == shipped.root and marker.exists()


def test_links_and_files_round_trip_and_nothing_lands_outside(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.txt").write_text("a")
    os.symlink("sub/a.txt", source / "inner-link")
    dest = tmp_path / "dest"
    unpack(pack_folder(source), dest)
    assert (dest / "sub" / "a.txt").read_text() == "a"
    assert os.readlink(dest / "inner-link") == "sub/a.txt"

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("../escaped.txt", "/abs.txt", "ok.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"no"))
        link = tarfile.TarInfo("out-link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    hostile = tmp_path / "hostile"
    unpack(buffer.getvalue(), hostile)
    assert not (tmp_path / "escaped.txt").exists()
    assert sorted(p.name for p in hostile.rglob("*")) == ["abs.txt", "ok.txt"]
    unpack(empty_archive(), tmp_path / "empty")
    assert list((tmp_path / "empty").iterdir()) == []
