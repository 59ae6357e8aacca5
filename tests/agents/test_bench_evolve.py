"""scripts/bench_evolve.py: the knob proposer, the figures written as the search goes, a stop.

The GPU figure (issue 22's 200 candidates within 10 minutes) is `gpu_check.sh search`; here the
same script searches a simulated accelerator task.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from gauntlet import suites
from gauntlet.agents.autotune_search import KnobSpace
from gauntlet.agents.evolve_prompts import Parent, proposal_prompt
from gauntlet.knobs import template_point

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_evolve.py"
RELU = "accel/npu/relu"  # knob RB_SPLIT, 5 values
SOFTMAX = "triton2triton/softmax"  # knobs PACK_ELEMENTS, PACK_MIN_PROGRAMS, 3 values each


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_script_bench_evolve", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic looks its models' module up
    spec.loader.exec_module(module)
    return module


def _prompt(files: dict[str, str]) -> str:
    return proposal_prompt("mutate", [Parent(candidate_id=3, files=files, feedback="pass")])


def test_the_knob_proposer_moves_one_knob_of_the_parent_and_tags_each_proposal() -> None:
    bench = _script()
    task = suites.load_by_id(SOFTMAX)
    tuning = task.spec.autotune
    assert tuning is not None
    proposer = bench.KnobProposer(task, seed=1)
    space = KnobSpace(tuning.knobs, tuning.constraint)
    # A parent without the knobs (the starting files) gives the template at its own point.
    first = proposer.files(
        _prompt({"kernel.py": "def softmax(x):\n    raise NotImplementedError\n"})
    )
    template = task.path(tuning.template).read_text(encoding="utf-8")
    head, body = first["kernel.py"].split("\n", 1)
    assert head == "# scripted candidate 1: the template point" and body == template
    seen = {first["kernel.py"]}
    parent = first
    for number in range(2, 12):
        child = proposer.files(_prompt(parent))
        text = child["kernel.py"]
        assert text.startswith(f"# scripted candidate {number}: ")
        before = template_point(
            parent["kernel.py"].split("\n", 1)[1], tuning.template, tuning.knobs
        )
        after = template_point(text.split("\n", 1)[1], tuning.template, tuning.knobs)
        moved = [k for k in before if before[k] != after[k]]
        assert len(moved) == 1 and space.point_of(after) in space.points
        assert f"{moved[0]} {before[moved[0]]} -> {after[moved[0]]}" in text.split("\n", 1)[0]
        assert text not in seen  # every proposal is a distinct submission
        seen.add(text)
        parent = child
    assert proposer.points[0] is None and len(proposer.points) == 12


def test_a_task_without_knobs_is_refused_with_the_other_proposer_named() -> None:
    bench = _script()
    with pytest.raises(SystemExit, match="--proposer copies"):
        bench.KnobProposer(suites.load_by_id("accel/npu/gemm"), seed=1)


def test_a_search_writes_its_figures_and_a_table_with_the_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _script()
    figures, table = tmp_path / "search.json", tmp_path / "search.md"
    argv = ["bench_evolve.py", "--task", RELU, "--candidates", "4", "--inputs", "fixed"]
    argv += ["--judges", "2"]
    monkeypatch.setattr(sys, "argv", [*argv, "--json", str(figures), "--out", str(table)])
    assert bench.main() == 0
    data = json.loads(figures.read_text())
    assert data["state"] == "finished" and data["judged"] == 4 and data["within_target"]
    assert data["inputs"] == "fixed" and data["proposer"] == "knobs" and data["judges"] == 2
    assert "correctness" in data["phases_median_s"]
    # Before each of the 3 proposals: two under way at once, so the second is asked while the
    # first may still be judged, and the third once the first is recorded.
    judged = [n for n, _ in data["timeline"]]
    assert len(judged) == 3 and judged[0] == 1 and judged == sorted(judged) and judged[2] >= 2
    assert [c["knobs"] for c in data["judged_candidates"]][:2] == [None, {"RB_SPLIT": 4}]
    assert data["distinct_points"] >= 2
    lines = table.read_text().splitlines()
    assert lines[0].startswith("| date | host | device |") and len(lines) == 3
    assert f"| {RELU} | fixed | 2 | 4 (" in lines[2]
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_the_pace_is_taken_after_the_first_judged_at_once_and_projects_all_n() -> None:
    bench = _script()
    # Three at once: the start (15 s) is paid once, then one every 3 s.
    timeline = [(0, 15.0), (0, 15.1), (1, 16.0), (3, 21.0), (4, 24.0), (13, 51.0)]
    per, projected = bench.pace(timeline, judges=3, candidates=200)
    assert per == pytest.approx(3.0) and projected == pytest.approx(21.0 + 197 * 3.0)
    assert bench.pace(timeline[:4], judges=3, candidates=200) is None
    assert bench.pace(timeline[:2], judges=3, candidates=200) is None


def test_a_search_stopped_by_sigterm_writes_what_it_judged_and_exits_3(tmp_path: Path) -> None:
    figures = tmp_path / "search.json"
    command = [sys.executable, str(SCRIPT), "--task", RELU, "--candidates", "200"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(  # noqa: TID251 - the test is about the script's own process
        [*command, "--json", str(figures)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    ) as search:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and search.poll() is None:
            if figures.is_file() and json.loads(figures.read_text() or "{}").get("judged", 0) >= 2:
                break
            time.sleep(0.2)
        search.send_signal(signal.SIGTERM)
        output, _ = search.communicate(timeout=60)
    assert search.returncode == 3, output
    data = json.loads(figures.read_text())
    assert data["state"] == "stopped" and 2 <= data["judged"] < 200
    assert "(stopped)" in output
