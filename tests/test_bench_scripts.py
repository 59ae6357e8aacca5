"""bench_judge.py's `--case`, kb_kit.py's KernelBench configs, kb_import_coverage.py's counts.

The GPU side (KernelBench's eval beside ours, `gpu_check.sh kb`) runs on a GPU machine only.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
SCALE_ADD = Path(__file__).resolve().parent / "support" / "tasks" / "triton2triton" / "scale_add"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# Under --runslow (33 s of CI's 15 minutes); scripts/gpu_check.sh's `bench` step runs the script.
@pytest.mark.slow
def test_a_case_is_judged_warm_in_feedback_mode_and_side_by_side_with_rows_as_they_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _script("bench_judge")
    out = tmp_path / "bench.md"
    argv = ["bench_judge.py", "--case", str(SCALE_ADD), str(SCALE_ADD / "expert")]
    argv += ["--repeats", "1", "--no-cold", "--spares", "1", "--threads", "2", "--out", str(out)]
    argv += ["--verdicts", str(tmp_path / "verdicts.jsonl")]
    monkeypatch.setattr(sys, "argv", argv)
    assert bench.main() == 0
    printed = capsys.readouterr().out
    written = out.read_text()
    rows = [line for line in written.splitlines() if line.startswith("| scale_add + expert")]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| scale_add + expert warm", "1"],
        ["| scale_add + expert warm feedback", "1"],
        # Two threads through the same `Judge`, a judgment each.
        ["| scale_add + expert warm x2", "2"],
        ["| scale_add + expert warm feedback x2", "2"],
    ]
    assert all(row.endswith("| pass |") for row in rows), rows
    assert "| wall | outside phases |" in written
    # Each judgment one at a time, its whole verdict: every phase, not only the table's.
    kept = [json.loads(line) for line in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    assert [k["judgment"] for k in kept] == [
        "scale_add + expert warm",
        "scale_add + expert warm feedback",
    ]
    assert all(k["verdict"]["status"] == "pass" and k["wall_s"] > 0 for k in kept)
    assert all("imports.candidate.trusted" in k["verdict"]["phases_s"] for k in kept)
    assert "one judgment at a time, cases:" in written
    assert "2 judgments at a time through one `Judge`, cases:" in written
    assert all(row in printed for row in rows)


IMPORTED = """\
id = "kbkit/l1/23_softmax"
description = "Unseen configurations will be tested (batch_size in [64, 256], dim in [6144, \
24576]; dtypes float32, bfloat16, float16), so do not specialise."

[[configs.visible]]
name = "C1"
batch_size = 256
dim = 24576
dtype = "float32"

[[configs.visible]]
name = "C2"
batch_size = 193
dim = 18433
dtype = "bfloat16"

[configs.hidden]
fixed = [
    { name = "H1", batch_size = 64, dim = 6144, dtype = "float32" },
    { name = "H2", batch_size = 255, dim = 24575, dtype = "bfloat16" },
]
count = 2

[configs.hidden.domain]
batch_size = { min = 64, max = 256 }
dim = { min = 6144, max = 24576 }
dtype = { values = ["float32", "bfloat16", "float16"] }

[tolerance]
margin = 8
"""


def test_the_kit_gives_an_imported_task_kernelbench_s_float32_configs() -> None:
    kit = _script("kb_kit")
    shipped = {"batch_size": 4096, "dim": 393216}
    cut = tomllib.loads(kit.kernelbench_configs(IMPORTED, shipped))
    c1 = {"name": "C1", "batch_size": 4096, "dim": 393216, "dtype": "float32"}
    assert cut["configs"]["visible"] == [c1]
    hidden = cut["configs"]["hidden"]
    h1 = {"name": "H1", "batch_size": 1024, "dim": 98304, "dtype": "float32"}
    assert hidden["fixed"] == [h1]
    assert hidden["count"] == 2
    assert hidden["domain"] == {
        "batch_size": {"min": 1024, "max": 4096},
        "dim": {"min": 98304, "max": 393216},
        "dtype": {"values": ["float32"]},
    }
    assert cut["tolerance"] == {"margin": 8}
    assert (
        "(batch_size in [1024, 4096], dim in [98304, 393216]; dtype float32)"
        in (cut["description"])
    )


def _jsonl(path: Path, *records: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _record(problem: str, outcome: str, **more: object) -> dict[str, object]:
    level = int(problem.split("/")[0].removeprefix("level"))
    return {"problem": problem, "outcome": outcome, "level": level, "seconds": 10.0,
            "ended": "2026-11-27T10:00:00+00:00", "commit": "abc", "src": "s1",
            "reason": None, "source_findings": [], **more}  # fmt: skip


def test_coverage_merges_calls_and_counts_unfinished_problems_baselines_and_trivial_answers(
    tmp_path: Path,
) -> None:
    cover = _script("kb_import_coverage")
    earlier, out = tmp_path / "call1", tmp_path / "call2"
    identity = ["output 0: input 'x' as the output passes"]
    passed = {"passed": True, "detail": "9 configs correct", "seconds": 5.0}
    timed_out = _record("level3/2_B.py", "refused", reason="the probe (check) ran past 9 s")
    _jsonl(earlier / "problems.jsonl",
           _record("level1/1_A.py", "imported", baseline=passed, source_findings=identity),
           timed_out)  # fmt: skip
    _jsonl(earlier / "runs.jsonl",
           *({"kind": "started", "problem": p, "level": int(p[5])} for p in
             ("level1/1_A.py", "level3/2_B.py", "level3/3_C.py")))  # fmt: skip
    failed = {"passed": False, "detail": "incorrect: C2", "seconds": 5.0}
    _jsonl(out / "problems.jsonl", _record("level3/2_B.py", "rewritten", baseline=failed))
    summary = cover.summarize(out, [earlier])
    one, three = summary["levels"]["1"], summary["levels"]["3"]
    assert (one["imported"], one["baselines"]) == (1, {"judged": 1, "passed": 1, "failed": []})
    assert one["trivial"] == {"problems": [[1, ["identity"], "imported"]],
                              "outcomes": {"imported": 1}}  # fmt: skip
    # The later call's record of 2 replaces the earlier refusal; 3 started and never ended.
    assert (three["rewritten"], three["refused"], three["unfinished"]) == (1, 0, [3])
    assert (three["rate"], three["baselines"]["failed"]) == (0.5, [2])
    written = (out / "coverage.md").read_text()
    assert "| 3 | 2 | 0 | 1 | 0 | 1 | 50% |  | 0 of 1 (failed: 2) |" in written
    assert "- level 3: 3" in written
    assert "- level 1, 1 problems: 1 (identity: imported)" in written


def test_coverage_queues_unfinished_problems_first_then_deep_levels() -> None:
    cover = _script("kb_import_coverage")
    files = [(level, Path(f"{n}_P.py")) for level in (1, 2, 3) for n in (1, 2)]
    order = cover.queue(files, done={"level3/1_P.py"}, unfinished={"level1/2_P.py"})
    assert [f"{lv}/{p.name}" for lv, p in order] == ["1/2_P.py", "3/2_P.py", "2/1_P.py",
                                                      "2/2_P.py", "1/1_P.py"]  # fmt: skip


def test_trivial_answers_are_read_from_the_gates_own_details() -> None:
    cover = _script("kb_import_coverage")
    found = ["output 0: zeros as the output passes", "output 0: constant as the output passes",
             "output 1: redrawing every input moves it by 1e-07 (relative L2)"]  # fmt: skip
    assert cover.trivial_answers(found) == ["constant", "insensitive", "zeros"]
    assert cover.trivial_answers(["input 'h0' has no effect within the tolerance"]) == []


def test_a_run_skips_merged_problems_and_records_an_importer_error_as_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cover = _script("kb_import_coverage")
    level1 = tmp_path / "kb" / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    for name in ("1_A.py", "2_B.py"):
        (level1 / name).write_text("# not read: import_problem is replaced\n")
    earlier, out = tmp_path / "call1", tmp_path / "call2"
    _jsonl(earlier / "problems.jsonl", _record("level1/1_A.py", "imported"))
    asked: list[str] = []

    def failing(level: int, path: Path, *_: object) -> None:
        asked.append(path.name)
        raise ValueError("no such layer")

    monkeypatch.setattr(cover, "import_problem", failing)
    argv = ["kb_import_coverage.py", "--kernelbench", str(tmp_path / "kb"), "--levels", "1",
            "--out", str(out), "--jobs", "1", "--merge", str(earlier)]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    assert cover.main() == 0
    assert asked == ["2_B.py"]
    assert not (out / "coverage.json").exists()  # a run writes four files, the table one
    level = cover.summarize(out, [earlier])["levels"]["1"]
    assert (level["imported"], level["refused"]) == (1, 1)
    assert level["refused_ids"] == {"importer error": [2]}


def test_the_benchmarks_name_the_cpu_they_ran_on() -> None:
    from gauntlet import devices

    model = devices.cpu_model()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file() and "model name" in cpuinfo.read_text(encoding="utf-8"):
        assert f": {model}" in cpuinfo.read_text(encoding="utf-8")
    assert model and "\n" not in model
