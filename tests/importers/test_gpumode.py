"""GPU MODE's problem format read and written as tasks, on fixture problems in its format.

The fixtures (`gpumode/problems/`, written for these tests) are a competition file listing six
problems: `scale` (a tuple with a preallocated output buffer, an input made empty and then
filled, an aliased import of `utils`), `unit_rows` (one tensor, an invariant checker, tests
only), and four refused for a stated reason. Judging them is `tests/exploits/
test_gpumode_contract.py`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gauntlet.importers.gmsource import (
    BLANK_TEMPLATE,
    Listing,
    competitions,
    join_modules,
    read_problem,
)
from gauntlet.importers.gpumode import GpuModeOptions, import_gpumode, task_name
from gauntlet.importers.kbsource import ProblemRefused
from gauntlet.task import load_task
from gauntlet.taskcheck import degeneracy_gate, reference_checks

ROOT = Path(__file__).parent / "gpumode"
PROBLEMS = ROOT / "problems"


def _listing(directory: str, gpus: tuple[str, ...] = ("H100",)) -> Listing:
    return Listing(directory=directory, name=directory, gpus=list(gpus), competition="mini")


def test_competition_files_list_each_problem_once() -> None:
    listed = {p.directory: p for p in competitions(PROBLEMS)}
    assert list(listed)[:2] == ["mini/scale_py", "mini/unit_rows_py"]
    assert listed["mini/scale_py"].gpus == ["H100", "MI300"]
    assert task_name(listed["mini/scale_py"]) == "mini/scale"


def test_a_tuple_problem_names_its_items_and_finds_its_output_buffer() -> None:
    problem = read_problem(PROBLEMS, _listing("mini/scale_py"))
    assert problem.inputs == ["x", "scale", "out"] and not problem.single
    # `scale` is made with torch.empty and then filled (uniform_): an input, not a buffer.
    assert problem.outputs == ["out"]
    assert problem.tests == [{"size": 100}, {"size": 257}]
    assert problem.benchmarks == [{"size": 100}, {"size": 1000}]
    assert problem.timeout_s == 60


def test_the_problems_files_become_one_module() -> None:
    text = read_problem(PROBLEMS, _listing("mini/scale_py")).module_text
    assert text.startswith("from __future__ import annotations\n")
    assert "from utils import" not in text and "from task import" not in text
    # The aliased import becomes an assignment; task.py's TypeVars are left out.
    assert "Deterministic = DeterministicContext" in text
    assert "TypeVar" not in text
    compile(text, "joined", "exec")


def test_a_single_tensor_problem_and_its_template() -> None:
    problem = read_problem(PROBLEMS, _listing("mini/unit_rows_py", ("B200",)))
    assert problem.inputs == ["data"] and problem.single and problem.outputs == []
    # The problem's own submission.py is the starting file, its `task` import dropped.
    assert "custom_kernel" in problem.template_text
    assert "from task import" not in problem.template_text


def test_join_refuses_a_sibling_imported_whole() -> None:
    with pytest.raises(ProblemRefused, match="imports a sibling module whole"):
        join_modules([("reference.py", "import utils\n")], {"utils"})


@pytest.mark.parametrize(
    ("directory", "gpus", "reason"),
    [
        ("mini/amd_py", ("MI300",), "runs on AMD GPUs only"),
        ("mini/fp8_py", ("H100",), r"quantised \(float8 data\)"),
        ("mini/weights_py", ("H100",), "its input 'weights' is a dict"),
        ("mini/broken_py", ("H100",), "defines no generate_input, ref_kernel"),
    ],
)
def test_refusals_name_the_reason(directory: str, gpus: tuple[str, ...], reason: str) -> None:
    with pytest.raises(ProblemRefused, match=reason):
        read_problem(PROBLEMS, _listing(directory, gpus))


def test_import_writes_tasks_with_the_three_features(tmp_path: Path) -> None:
    report = import_gpumode(ROOT, tmp_path, GpuModeOptions(track="torch2triton"))
    assert report.counts() == {"imported": 2, "rewritten": 0, "refused": 4}
    assert report.suites("gm") == {"gpumode": ["gm/*/*"]}
    scale = load_task(tmp_path / "mini" / "scale")
    spec = scale.spec
    assert spec.id == "gpumode/mini/scale"
    assert spec.reference.mode == "native" and spec.inputs.distributions == ["problem"]
    assert spec.submission.outputs == ["out"] and spec.submission.entry == "custom_kernel"
    assert spec.submission.adapter is not None and spec.check is not None
    assert spec.devices == ["cuda"] and not spec.determinism.bitwise
    # Tests are the visible configs; a benchmark repeating a test's spec is one config.
    assert [c.params for c in spec.configs.visible] == [{"size": 100}, {"size": 257}]
    assert [c.params for c in spec.configs.hidden.fixed] == [{"size": 1000}]
    assert "`out` is a preallocated output buffer" in spec.description
    # Tests only: the last one is held out.
    rows = load_task(tmp_path / "mini" / "unit_rows").spec.configs
    assert len(rows.visible) == 2 and len(rows.hidden.fixed) == 1
    raw = tomllib.loads((tmp_path / "mini" / "scale" / "task.toml").read_text(encoding="utf-8"))
    assert raw["check"] == {"file": "check.py", "entry": "check"}


def test_a_template_that_does_not_parse_gives_way(tmp_path: Path) -> None:
    # Helion's template is a fill-in form (`def kernel(...) -> ...:`).
    folder = tmp_path / "problems" / "set" / "p_py"
    folder.mkdir(parents=True)
    source = PROBLEMS / "mini" / "unit_rows_py"
    for name in ("reference.py", "task.py"):
        (folder / name).write_text((source / name).read_text(encoding="utf-8"))
    spec = (source / "task.yml").read_text(encoding="utf-8")
    (folder / "task.yml").write_text(spec + 'templates:\n  Python: "form.py"\n')
    (folder / "form.py").write_text("def kernel(...) -> ...:\n    ...\n")
    problem = read_problem(tmp_path / "problems", _listing("set/p_py"))
    assert problem.template_text.endswith(BLANK_TEMPLATE)


def test_a_reference_using_a_type_of_task_py_at_run_time_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "problems" / "set" / "p_py"
    folder.mkdir(parents=True)
    source = PROBLEMS / "mini" / "unit_rows_py"
    for name in ("task.py", "task.yml"):
        (folder / name).write_text((source / name).read_text(encoding="utf-8"))
    text = (source / "reference.py").read_text(encoding="utf-8")
    (folder / "reference.py").write_text(text + "\nKIND = input_t\n")
    with pytest.raises(ProblemRefused, match="uses task.py's 'input_t' outside an annotation"):
        read_problem(tmp_path / "problems", _listing("set/p_py"))


def test_an_output_buffer_is_no_input_to_the_task_checks(tmp_path: Path) -> None:
    # `out` is written, never read: redrawing it moves nothing, and an uninitialised buffer is
    # no answer. The reference checks and the degeneracy gate leave it out.
    import_gpumode(ROOT, tmp_path, GpuModeOptions(track="torch2triton", sets=["mini"]))
    task = load_task(tmp_path / "mini" / "scale")
    failed = [r for r in reference_checks(task) if not r.ok]
    assert failed == [], failed
    gate = degeneracy_gate(task)
    assert not gate.degenerate, gate.summary()
