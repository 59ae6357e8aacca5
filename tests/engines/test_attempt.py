"""The judge stage reads the contract's files as the agent left them, wherever it runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gauntlet.engines.attempt import _rebuild_submission, _submitted
from gauntlet.judge.pipeline import read_submission
from tests.support.fixtures import SCALE_ADD, with_spec


@pytest.mark.parametrize(
    "layout",
    ["file", "link", "linked_folder", "missing", "folder", "oversized"],
)
def test_a_rebuilt_submission_gets_the_same_reading_as_the_workspace(
    tmp_path: Path, layout: str
) -> None:
    base = SCALE_ADD()
    task = with_spec(
        base,
        submission=base.spec.submission.model_copy(
            update={"files": ["kernel.py", "sub/extra.py"], "max_bytes": 64}
        ),
    )
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "kernel.py").write_text("x = 1\n")
    (workspace / "elsewhere").mkdir()
    (workspace / "elsewhere" / "extra.py").write_text("y = 2\n")
    extra = workspace / "sub" / "extra.py"
    if layout == "file":
        extra.write_text("y = 2\n")
    elif layout == "link":
        os.symlink("../elsewhere/extra.py", extra)
    elif layout == "linked_folder":
        (workspace / "sub").rmdir()
        os.symlink("elsewhere", workspace / "sub")
    elif layout == "folder":
        extra.mkdir()
    elif layout == "oversized":
        extra.write_text("#" * 100)
    files = [_submitted(workspace, name, task) for name in task.spec.submission.files]
    rebuilt = tmp_path / "rebuilt"
    _rebuild_submission(files, rebuilt)
    here = read_submission(task, workspace)
    there = read_submission(task, rebuilt)
    assert (here[1], here[2].replace(str(workspace), "")) == (
        there[1],
        there[2].replace(str(rebuilt), ""),
    )
    if layout == "file":
        assert here[0] is not None and there[0] is not None
        assert here[0].files == there[0].files
    else:
        assert here[1] != "pass"
