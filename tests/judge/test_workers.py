"""The one way the judge starts its workers: environment, confinement, the handle."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gauntlet import confine
from gauntlet.judge import workers


def test_a_folder_on_the_import_path_that_holds_the_task_is_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    task = repo / "tasks" / "softmax"
    task.mkdir(parents=True)
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    monkeypatch.setattr(sys, "path", [str(repo), str(elsewhere), *sys.path])
    shown = workers.import_paths(hidden=task)
    assert repo.resolve() not in shown
    assert elsewhere.resolve() in shown
    assert repo.resolve() in workers.import_paths()


@pytest.mark.skipif(confine.available() is not None, reason=f"{confine.available()}")
def test_a_confinement_shows_the_interpreter_and_what_it_is_given(tmp_path: Path) -> None:
    given = tmp_path / "input.py"
    given.write_text("")
    confined = workers.confinement([given], [tmp_path / "scratch"], gpu=True)
    assert confined is not None
    assert given in confined.readonly
    assert all(p in confined.readonly for p in confine.python_paths())
    assert confined.writable == (tmp_path / "scratch",)
    assert confined.devices == confine.NVIDIA_DEVICES and confined.sysfs
    assert not confined.network


def test_where_nothing_confines_the_answer_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine, "available", lambda: "no user namespaces here")
    assert workers.confinement([], []) is None


def test_the_worker_environment_keeps_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    env = workers.worker_env(tmp_path, "cuda:1")
    assert "OPENAI_API_KEY" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "5"
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)
