"""The `autotune` agent: real judging on accelerator and CPU tasks, budgets, seeds, task format."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gauntlet import suites
from gauntlet.agents.autotune import AutotuneAgent
from gauntlet.agents.base import AgentContext, Budget, make_agent
from gauntlet.errors import ConfigError, JudgeError, TaskFormatError
from gauntlet.judge.service import Judge
from gauntlet.judge.verdict import Verdict
from gauntlet.knobs import apply, template_point
from gauntlet.report.attempts import attempt_view
from gauntlet.runner import RunConfig, start_run
from gauntlet.task import Task, load_task
from tests.support.fixtures import TASKS
from tests.support.judge_gate import ReverseFinish
from tests.support.rundirs import RunBuilder

RELU = "accel/npu/relu"
GEMM = "accel/npu/gemm"  # no knobs

TUNED = """import torch
import triton
import triton.language as tl

BLOCK = 256
ALPHA_FACTOR = 2.0


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add[(triton.cdiv(n, BLOCK),)](x, y, out, n, alpha * ALPHA_FACTOR, BLOCK=BLOCK)
    return out
"""
KNOBS = """
[autotune]
template = "tuned.py"

[autotune.knobs]
BLOCK = [256, 1024]
ALPHA_FACTOR = [2.0, 1.0]
"""


def context(task: Task, tmp_path: Path, device: str, seed: int = 0) -> AgentContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    for name, text in task.baseline_files().items():
        (workspace / name).write_text(text)
    return AgentContext(
        task=task,
        workspace=workspace,
        brief="",
        budget=Budget(wall_s=600),
        device=device,
        transcript=tmp_path / "transcript.jsonl",
        seed=seed,
    )


def lines(ctx: AgentContext) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ctx.transcript.read_text().splitlines()]


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, Any], Verdict]]:
    """Every judgment the agent asks for (its arguments and verdict); hidden configs unreadable."""
    calls: list[tuple[dict[str, Any], Verdict]] = []
    original = Judge.eval

    def spy(self: Judge, task: Task | str, submission: Path | str, **kwargs: Any) -> Verdict:
        verdict = original(self, task, submission, **kwargs)
        calls.append((kwargs, verdict))
        return verdict

    def hidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the autotune agent read the hidden configs")

    monkeypatch.setattr(Judge, "eval", spy)
    monkeypatch.setattr(Task, "hidden_configs", hidden)
    monkeypatch.setattr("gauntlet.task.draw_configs", hidden)
    return calls


def test_grid_search_on_an_accelerator_task_submits_the_fastest_point(
    tmp_path: Path, judged: list[tuple[dict[str, Any], Verdict]]
) -> None:
    task = suites.load_by_id(RELU)
    ctx = context(task, tmp_path, "sim:npu", seed=3)
    result = AutotuneAgent(calls=8).run(ctx)
    *trials, choice = lines(ctx)
    assert result.status == "finished" and result.usage.turns == 5 == len(trials)
    assert [t["knobs"]["RB_SPLIT"] for t in trials] == [4, 1, 2, 8, 16]  # template first
    assert {t["search"] for t in trials} == {"grid"}
    best = max(trials, key=lambda t: t["speedup"])
    assert choice["knobs"] == best["knobs"] and choice["speedup"] == best["speedup"] > 1.0
    expert = task.path("expert.asm").read_text()
    assert (ctx.workspace / "kernel.asm").read_text() == apply(expert, "expert.asm", best["knobs"])
    # Feedback judgments with the attempt's own seed, visible configs only.
    assert [kwargs for kwargs, _ in judged] == [{"mode": "feedback", "seed": 3}] * 5
    assert all(c.config.hidden is False for _, v in judged for c in v.configs)
    # (In the order the judgments ended: two at a time by default on a simulator.)
    assert sorted(round(v.speedup or 0, 9) for _, v in judged) == sorted(
        round(t["speedup"], 9) for t in trials
    )


def test_points_judged_at_once_are_recorded_as_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The grid of 5 in batches of 3 and 2, each batch's judgments in flight together and ending
    # in reverse order: the same trials, in the same order, and the same choice.
    task = suites.load_by_id(RELU)
    alone = context(task, tmp_path / "alone", "sim:npu", seed=3)
    AutotuneAgent(calls=8, judges=1).run(alone)
    gate = ReverseFinish([3, 2])
    gate.install(monkeypatch)
    together = context(task, tmp_path / "together", "sim:npu", seed=3)
    AutotuneAgent(calls=8, judges=3).run(together)
    assert gate.most_at_once == 3 and gate.returned == [2, 1, 0, 4, 3]

    def trials(ctx: AgentContext) -> list[dict[str, Any]]:
        return [{k: v for k, v in t.items() if k != "duration_s"} for t in lines(ctx)]

    assert trials(together) == trials(alone)
    assert [t["knobs"]["RB_SPLIT"] for t in lines(together)[:-1]] == [4, 1, 2, 8, 16]
    assert (together.workspace / "kernel.asm").read_text() == (
        alone.workspace / "kernel.asm"
    ).read_text()


def test_the_call_budget_is_respected_and_the_search_repeats_with_its_seed(
    tmp_path: Path, judged: list[tuple[dict[str, Any], Verdict]]
) -> None:
    task = suites.load_by_id(RELU)  # 5 points, 3 calls: a model-based search
    runs = []
    # Two judged at once (the default on a simulator), then one at a time: the template's point
    # and the random start are the same points either way.
    for attempt, spec in enumerate(
        ["autotune:calls=3", "autotune:calls=3", "autotune:calls=3,judges=1"]
    ):
        ctx = context(task, tmp_path / str(attempt), "sim:npu", seed=7)
        result = make_agent(spec).run(ctx)
        runs.append([(t["knobs"], t["speedup"]) for t in lines(ctx)[:-1]])
        assert result.usage.turns == 3
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 3
    assert runs[0][0][0] == {"RB_SPLIT": 4}
    assert len({str(knobs) for knobs, _ in runs[0]}) == 3
    assert len(judged) == 9


@pytest.mark.parametrize("judges", [1, 2])
def test_the_seconds_budget_stops_the_search(tmp_path: Path, judges: int) -> None:
    ticks = iter(range(0, 10_000, 10))  # every reading of the clock is 10 s later
    agent = AutotuneAgent(calls=8, seconds=25, clock=lambda: float(next(ticks)), judges=judges)
    ctx = context(suites.load_by_id(RELU), tmp_path, "sim:npu")
    result = agent.run(ctx)
    # The first batch starts at 10 s (nothing to estimate it by); the next, at 60 s after a
    # batch of 30 s (one at a time; 80 s after 50 s with two), would end past 25 s.
    assert result.usage.turns == judges and len(lines(ctx)) == judges + 1


def scale_add_with_knobs(tmp_path: Path, knobs: str = KNOBS, tuned: str = TUNED) -> Path:
    folder = tmp_path / "scale_add"
    shutil.copytree(TASKS / "triton2triton" / "scale_add", folder)
    (folder / "tuned.py").write_text(tuned)
    (folder / "task.toml").write_text((folder / "task.toml").read_text() + knobs)
    return folder


def test_on_an_untimed_device_the_template_point_is_submitted_unjudged(
    tmp_path: Path, judged: list[tuple[dict[str, Any], Verdict]]
) -> None:
    task = load_task(scale_add_with_knobs(tmp_path))
    ctx = context(task, tmp_path, "cpu")
    result = AutotuneAgent(calls=8).run(ctx)
    (choice,) = lines(ctx)
    # No times, nothing to rank: no judgment at all, and the template's point goes in as it is
    # (here one the final judgment will fail, since it doubles alpha).
    assert judged == [] and result.usage.tool_calls == 0 and choice["judge_calls"] == 0
    assert choice["knobs"] == {"BLOCK": 256, "ALPHA_FACTOR": 2.0} and choice["speedup"] is None
    assert (ctx.workspace / "kernel.py").read_text() == apply(TUNED, "tuned.py", choice["knobs"])
    assert "'cpu' is not timed" in result.message and "unjudged" in result.message


@pytest.mark.parametrize("judges", [1, 2])
def test_a_failing_judge_keeps_the_best_point_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judges: int
) -> None:
    original = Judge.eval

    def failing(self: Judge, task: Task | str, submission: Path | str, **kwargs: Any) -> Verdict:
        if Path(submission).name == "point-1":  # the second point fails (with two at once too)
            raise JudgeError("the simulator pool died")
        return original(self, task, submission, **kwargs)

    monkeypatch.setattr(Judge, "eval", failing)
    task = suites.load_by_id(RELU)
    ctx = context(task, tmp_path, "sim:npu")
    result = AutotuneAgent(judges=judges).run(ctx)
    assert result.status == "finished" and result.usage.turns == 1
    assert "stopped when the judge failed: the simulator pool died" in result.message
    assert (ctx.workspace / "kernel.asm").read_text() == task.path("expert.asm").read_text()


def test_a_task_without_knobs_gets_the_baseline(tmp_path: Path) -> None:
    task = load_task(TASKS / "triton2triton" / "scale_add")
    ctx = context(task, tmp_path, "cpu")
    (ctx.workspace / "kernel.py").write_text("edited")
    result = AutotuneAgent().run(ctx)
    assert result.usage.turns == 0 and "no knobs declared: nothing to search" in result.message
    assert lines(ctx)[-1]["judge_calls"] == 0
    assert (ctx.workspace / "kernel.py").read_text() == task.baseline_files()["kernel.py"]


BAD_DECLARATIONS = {
    "knob not in the template": (
        KNOBS.replace("BLOCK = [", "WARPS = ["),
        "autotune.knobs",
        "knob 'WARPS' must be assigned exactly once at the top level of tuned.py (found 0)",
    ),
    "template value not among the values": (
        KNOBS.replace("[256, 1024]", "[64, 128]"),
        "autotune.knobs",
        "knob 'BLOCK' is '256' in tuned.py, which is not one of its values [64, 128]",
    ),
    "repeated value": (KNOBS.replace("[256, 1024]", "[256, 256]"), "autotune.knobs", "repeats"),
    "no values": (KNOBS.replace("[256, 1024]", "[]"), "autotune.knobs", "has no values"),
    "missing template": (KNOBS.replace("tuned.py", "gone.py"), "autotune.template", "gone.py"),
    "not a submission file": (
        KNOBS.replace('template = "tuned.py"', 'template = "tuned.py"\nfile = "other.py"'),
        "autotune.file",
        "'other.py' is not one of ['kernel.py']",
    ),
    "constraint on unknown names": (
        KNOBS.replace("[autotune.knobs]", 'constraint = "WARPS > 1"\n[autotune.knobs]'),
        "autotune",
        "uses ['WARPS'], which are not knobs",
    ),
    "constraint excludes the template": (
        KNOBS.replace("[autotune.knobs]", 'constraint = "BLOCK > 256"\n[autotune.knobs]'),
        "autotune.constraint",
        "the template's own point",
    ),
    "template without the entry": (
        KNOBS.replace('template = "tuned.py"', 'template = "reference.py"'),
        "autotune.template",
        "reference.py defines no 'scale_add' (the entry)",
    ),
    "unknown key": (
        KNOBS.replace("[autotune.knobs]", "steps = 3\n[autotune.knobs]"),
        "",
        "unknown key",
    ),
}


@pytest.mark.parametrize("case", BAD_DECLARATIONS, ids=list(BAD_DECLARATIONS))
def test_a_bad_knob_declaration_is_rejected_naming_file_key_and_problem(
    case: str, tmp_path: Path
) -> None:
    knobs, key, message = BAD_DECLARATIONS[case]
    folder = scale_add_with_knobs(tmp_path, knobs)
    with pytest.raises(TaskFormatError) as info:
        load_task(folder)
    assert key in info.value.key and message in str(info.value), str(info.value)
    assert str(folder / "task.toml") in str(info.value)


def test_a_literal_that_is_an_expression_is_rejected(tmp_path: Path) -> None:
    folder = scale_add_with_knobs(tmp_path, tuned=TUNED.replace("BLOCK = 256", "BLOCK = 2 * 128"))
    with pytest.raises(TaskFormatError, match="must be a literal"):
        load_task(folder)


@pytest.mark.parametrize(
    "argument", ["calls=0", "calls=many", "speed=3", "time_cap=0", "judges=0", "judges=x"]
)
def test_bad_options_are_errors(argument: str) -> None:
    with pytest.raises(ConfigError, match="autotune"):
        make_agent(f"autotune:{argument}")


def test_a_run_records_the_autotune_attempt_and_its_report_shows_the_search(
    tmp_path: Path,
) -> None:
    config = RunConfig(pattern=RELU, agents=["autotune:calls=2"], seed=1)
    store = start_run(config, tmp_path / "run")
    record = store.attempts()[0]
    assert record.agent == "autotune:calls=2" and record.status == "pass"
    assert record.usage.turns == 2 and record.verdict is not None
    assert record.verdict.speedup is not None and record.verdict.speedup > 1.0
    rows = attempt_view(store, record).search
    assert [(r.generation, r.judge_calls, r.correct) for r in rows] == [(0, 1, 1), (1, 2, 1)]
    assert rows[0].best_speedup is not None and rows[1].best_speedup is not None
    assert rows[0].best_speedup <= rows[1].best_speedup


def test_in_a_run_its_baseline_gets_the_baseline_agents_verdict_judged_once(
    tmp_path: Path,
) -> None:
    # No knobs: it submits the baseline, byte for byte the baseline agent's files, so the run
    # judges them once (engines/verdicts.py) and the second record says whose verdict it is.
    config = RunConfig(pattern=GEMM, agents=["baseline", "autotune"], seed=1, parallel=2)
    store = start_run(config, tmp_path / "run")
    by_agent = {r.agent: r for r in store.attempts()}
    baseline, tuned = by_agent["baseline"].verdict, by_agent["autotune"].verdict
    assert baseline is not None and tuned is not None and baseline.passed
    assert tuned.environment["reused_from"] == by_agent["baseline"].attempt_id
    assert tuned.duration_s == 0.0 and "reused_from" not in baseline.environment
    volatile = {"duration_s", "phases_s", "environment"}
    assert tuned.model_dump(exclude=volatile) == baseline.model_dump(exclude=volatile)


def test_the_template_point_of_every_shipped_task_renders_byte_for_byte() -> None:
    # So where the search keeps the template's own point it submits exactly the expert's (or
    # baseline's) files, whose final verdict a run judges once for every agent that submits them.
    tuned = [t for t in suites.select(None, None, None) if t.spec.autotune is not None]
    assert len(tuned) >= 24
    for task in tuned:
        tuning = task.spec.autotune
        assert tuning is not None
        text = task.path(tuning.template).read_text(encoding="utf-8")
        point = template_point(text, tuning.template, tuning.knobs)
        assert apply(text, tuning.template, point) == text, task.task_id


def test_the_bench_script_tables_a_finished_run_without_running_anything(tmp_path: Path) -> None:
    # `make run`'s run directory is where the accelerator figures of docs/agents.md come from.
    builder = RunBuilder(tmp_path / "run", device="sim:npu")
    for agent, speedup in (("baseline", 1.0), ("expert", 5.8), ("autotune:calls=5", 5.85)):
        builder.add(RELU, agent=agent, speedup=speedup, hidden_speedup=speedup, platform="npu")
    run = builder.write()
    script = Path(__file__).parents[2] / "scripts" / "bench_autotune.py"
    figures = tmp_path / "autotune.json"
    done = subprocess.run(
        [sys.executable, str(script), "--tuned", "--tasks", RELU, "--from-run", str(run)]
        + ["--json", str(figures)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(figures.read_text())["tasks"]
    assert row["task_id"] == RELU and row["improved"] and row["speedup"] == 5.85
    row = f"| {RELU} | pass 1.000 (hidden 1.000) | pass 5.800 (hidden 5.800) | "
    assert row + "pass 5.850 (hidden 5.850) | 4 | 60.0 | yes |" in done.stdout
    assert "agent `autotune:calls=5`" in done.stdout and "2025-01-02 03:04-03:07 UTC" in done.stdout
    assert "improved on the baseline on 1 of 1 tasks" in done.stdout
    assert len((run / "attempts.jsonl").read_text().splitlines()) == 3  # nothing new was run
