"""Task loading: a valid task loads; each kind of mistake fails naming file, key and problem."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gauntlet.errors import TaskFormatError
from gauntlet.task import load_task
from tests.support.fixtures import SCALE_ADD, TASKS

SOURCE = TASKS / "triton2triton" / "scale_add"


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    target = tmp_path / "scale_add"
    shutil.copytree(SOURCE, target)
    return target


def edit(replace: str, by: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / "task.toml"
        text = path.read_text()
        assert replace in text, f"fixture lacks {replace!r}"
        path.write_text(text.replace(replace, by, 1))

    return apply


def remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


MISTAKES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "not toml": (edit('title = "', 'title = "unterminated\n'), "", "not valid TOML"),
    "missing key": (
        edit('title = "Scale and add (test fixture)"\n', ""),
        "title",
        "required key is missing",
    ),
    "unknown key": (edit("level = 1\n", "level = 1\ncolour = 'red'\n"), "colour", "unknown key"),
    "bad track": (
        edit('track = "triton2triton"', 'track = "triton2rust"'),
        "track",
        "triton2triton",
    ),
    "bad level": (edit("level = 1", "level = 7"), "level", "1, 2 or 3"),
    "bad id": (edit('id = "triton2triton/scale_add"', 'id = "Scale Add"'), "id", "pattern"),
    "missing file": (remove("baseline.py"), "baseline.file", "file 'baseline.py' does not exist"),
    "missing entry": (
        edit('entry = "scale_add"', 'entry = "scale_sub"'),
        "baseline.entry",
        "no function or class 'scale_sub'",
    ),
    "file outside": (
        edit('file = "reference.py"', 'file = "../../etc/passwd"'),
        "reference.file",
        "outside the task folder",
    ),
    "bad expression": (
        edit('flops = "2 * n"', 'flops = "2 * n +"'),
        "roofline.flops",
        "is not an expression",
    ),
    "unsafe expression": (
        edit('flops = "2 * n"', "flops = \"__import__('os')\""),
        "roofline.flops",
        "only these functions",
    ),
    "unknown name in expression": (
        edit('flops = "2 * n"', 'flops = "2 * m"'),
        "roofline.flops",
        "uses ['m']",
    ),
    "duplicate config": (edit('name = "C2"', 'name = "C1"'), "configs", "repeated: C1"),
    "missing baseline": (
        edit('[baseline]\nfile = "baseline.py"\nentry = "scale_add"\n', ""),
        "baseline",
        "needs a [baseline]",
    ),
    "no tolerance for dtype": (
        edit("[tolerance.float16]", "[tolerance.bfloat16]"),
        "tolerance",
        "no tolerance for dtype 'float16'",
    ),
    "language for track": (
        edit('language = "triton"', 'language = "cuda"'),
        "submission.language",
        "takes submissions in 'triton'",
    ),
    "empty hidden": (
        edit(
            'fixed = [\n  { name = "H1", n = 3001, dtype = "float32" },\n'
            '  { name = "H2", n = 5000, dtype = "float32" },\n'
            '  { name = "H3", n = 1, dtype = "float32" },\n]\ncount = 1',
            "count = 0",
        ),
        "configs.hidden",
        "hidden configs need",
    ),
    "bad domain": (
        edit("n = { min = 1, max = 5000 }", "n = { min = 10, max = 5 }"),
        "configs.hidden.domain.n",
        "above 'max'",
    ),
    "unknown distribution": (
        edit('distributions = ["normal", "uniform"]', 'distributions = ["gaussian"]'),
        "inputs.distributions",
        "unknown distribution",
    ),
    "expert not in contract": (
        edit('"kernel.py" = "expert/kernel.py"', '"main.py" = "expert/kernel.py"'),
        "expert.files.main.py",
        "not a submission file",
    ),
    "bad reference mode": (
        edit('entry = "reference"\n', 'entry = "reference"\nmode = "float32"\n'),
        "reference.mode",
        "'float64' or 'native'",
    ),
    "missing checker": (
        edit("[baseline]", '[check]\nfile = "check.py"\nentry = "check"\n\n[baseline]'),
        "check.file",
        "file 'check.py' does not exist",
    ),
    "checker on a backward task": (
        lambda f: (
            edit("[baseline]", '[check]\nfile = "reference.py"\nentry = "reference"\n\n[baseline]')(
                f
            ),
            edit("[baseline]", '[backward]\nwrt = ["x"]\n\n[baseline]')(f),
        ),
        "check",
        "a backward task's gradients are compared",
    ),
    "output with a gradient": (
        lambda f: (
            edit('template = "baseline.py"', 'template = "baseline.py"\noutputs = ["y"]')(f),
            edit("[baseline]", '[backward]\nwrt = ["y"]\n\n[baseline]')(f),
        ),
        "submission.outputs",
        "a buffer the submission fills has no gradient",
    ),
    "reference not python": (
        lambda f: (f / "reference.py").write_text("def reference(:\n"),
        "line 1",
        "not valid Python",
    ),
}


def test_the_fixture_loads() -> None:
    task = SCALE_ADD()
    assert task.task_id == "triton2triton/scale_add"
    assert [c.name for c in task.visible_configs] == ["C1", "C2"]
    assert task.visible_configs[1].dtype == "float16"


@pytest.mark.parametrize("mistake", MISTAKES, ids=list(MISTAKES))
def test_mistake_is_reported(mistake: str, task_dir: Path) -> None:
    apply, key, message = MISTAKES[mistake]
    apply(task_dir)
    with pytest.raises(TaskFormatError) as info:
        load_task(task_dir)
    error = info.value
    assert key in error.key or key in str(error), str(error)
    assert message in str(error), str(error)
    assert str(task_dir) in str(error)


def test_no_task_toml(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="no task.toml"):
        load_task(tmp_path)


def test_id_must_match_the_folder(task_dir: Path) -> None:
    with pytest.raises(TaskFormatError, match="expected 'triton2triton/other'"):
        load_task(task_dir, expected_id="triton2triton/other")


def test_hidden_configs_are_drawn_deterministically_and_differ_by_seed() -> None:
    task = SCALE_ADD()
    first = task.hidden_configs(seed=1)
    assert [c.name for c in first] == ["H1", "H2", "H3", "drawn-1"]
    assert all(c.hidden for c in first)
    assert first == task.hidden_configs(seed=1)
    drawn = {task.hidden_configs(seed=s)[-1].params["n"] for s in range(20)}
    assert len(drawn) > 10
    assert all(1 <= n <= 5000 for n in drawn)


def test_constraint_limits_drawn_configs(task_dir: Path) -> None:
    edit("count = 1\n", 'count = 5\nconstraint = "n % 2 == 1"\n')(task_dir)
    task = load_task(task_dir)
    for seed in range(5):
        assert all(c.params["n"] % 2 == 1 for c in task.hidden_configs(seed)[3:])
