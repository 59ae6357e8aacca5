"""Every metric of score.py on small run directories whose results are computed by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gauntlet.agents.base import Usage
from gauntlet.errors import ConfigError, RecordError, UnknownNameError
from gauntlet.score import (
    METRICS,
    Bootstrap,
    GroupScores,
    bootstrap_ci,
    fast_p_curve,
    not_timed,
    score_run,
)
from tests.support.rundirs import FAST_BOOTSTRAP, RunBuilder, geomean, sample_run

FAST = FAST_BOOTSTRAP


def only_group(run_dir: Path) -> GroupScores:
    return score_run(run_dir, bootstrap=FAST).group()


def value(group: GroupScores, key: str) -> float:
    metric = group.metrics[key]
    assert metric.value is not None, metric.reason
    return metric.value


def test_failures_count_in_every_all_task_metric(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/pass", "pass", speedup=2.0, hidden_speedup=2.0, sol_fraction=0.5)
    run.add("t/overfit", "overfit")
    run.add("t/build", "build_error")
    run.add("t/agent", "agent_error")  # no verdict at all
    group = only_group(run.write())

    assert value(group, "pass_rate") == 0.25
    assert value(group, "deployable_speedup") == pytest.approx(2.0**0.25)
    assert value(group, "passing_speedup") == pytest.approx(2.0)
    assert group.metrics["passing_speedup"].n == 1
    assert value(group, "sol_fraction") == pytest.approx(0.5 / 4)
    assert value(group, "fast_1.0") == 0.25
    assert value(group, "fast_2.0") == 0.0  # 2.0 is not *more* than 2 times faster
    assert all(group.metrics[k].n == 4 for k in ("pass_rate", "deployable_speedup"))
    assert [t.status for t in group.tasks] == ["pass", "overfit", "build_error", "agent_error"]


def test_fast_p_edges_are_strict(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    for number, speedup in enumerate([1.0, 1.5, 2.0, 2.0001, 0.5]):
        run.add(f"t/{number}", "pass", speedup=speedup)
    run.add("t/fail", "incorrect")
    group = only_group(run.write())

    assert value(group, "fast_1.0") == pytest.approx(3 / 6)
    assert value(group, "fast_1.5") == pytest.approx(2 / 6)
    assert value(group, "fast_2.0") == pytest.approx(1 / 6)
    assert fast_p_curve(group.tasks, [0.0, 0.4999, 3.0]) == pytest.approx([5 / 6, 5 / 6, 0.0])


def test_geometric_means(tmp_path: Path) -> None:
    speedups = [4.0, 1.0, 0.25, 2.0, 3.0]
    run = RunBuilder(tmp_path / "run")
    for number, speedup in enumerate(speedups):
        run.add(f"t/{number}", "pass", speedup=speedup)
    run.add("t/crash", "crash")
    run.add("t/timeout", "timeout")
    group = only_group(run.write())

    assert value(group, "deployable_speedup") == pytest.approx(geomean([*speedups, 1.0, 1.0]))
    assert value(group, "passing_speedup") == pytest.approx(geomean(speedups))
    assert value(group, "deployable_speedup") == pytest.approx(6.0 ** (1 / 7))


def test_overfit_counts_against_generalization(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/a", "pass", speedup=2.0, hidden_speedup=1.5)
    run.add("t/b", "pass", speedup=1.0, hidden_speedup=1.0)
    run.add("t/c", "overfit")
    run.add("t/d", "overfit")
    run.add("t/e", "incorrect")  # not visible-correct: outside the conditional
    run.add("t/f", "no_submission")
    group = only_group(run.write())

    assert value(group, "pass_rate") == pytest.approx(2 / 6)
    assert value(group, "hidden_given_visible") == pytest.approx(2 / 4)
    assert group.metrics["hidden_given_visible"].n == 4
    assert value(group, "retention") == pytest.approx(math.sqrt(0.75))
    assert group.metrics["retention"].n == 2


def test_untimed_runs_say_not_timed_but_keep_pass_rates(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run", device="cpu")
    run.add("t/a", "pass")  # no speedup: the cpu device is not timed
    run.add("t/b", "overfit")
    run.add("t/c", "build_error")
    group = only_group(run.write())

    assert value(group, "pass_rate") == pytest.approx(1 / 3)
    assert value(group, "hidden_given_visible") == pytest.approx(1 / 2)
    for key in ("deployable_speedup", "passing_speedup", "fast_1.0", "sol_fraction", "retention"):
        metric = group.metrics[key]
        assert metric.value is None and metric.ci_low is None
        assert metric.reason == "device 'cpu' is not timed: correctness only"
    assert group.tasks[0].speedup is None and group.tasks[0].fast(1.0) is None
    assert fast_p_curve(group.tasks, [1.0]) is None


def test_not_timed_reasons_always_say_so() -> None:
    assert not_timed("device 'cpu' is not timed: correctness only").startswith("device")
    assert not_timed("no verdict recorded") == "not timed (no verdict recorded)"
    assert not_timed("") == "not timed"


def test_untimed_run_where_nothing_passes_has_no_speed_figures(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run", device="cpu")
    run.add("t/a", "incorrect", device="cpu")
    run.add("t/b", "crash", device="cpu")
    group = only_group(run.write())

    assert value(group, "pass_rate") == 0.0
    assert group.metrics["deployable_speedup"].value is None
    assert "not timed" in group.metrics["deployable_speedup"].reason


def test_tasks_on_untimed_devices_are_left_out_of_speed_metrics(tmp_path: Path) -> None:
    # A mixed run (Triton's interpreter on the CPU beside a simulator timed in cycles): the CPU
    # tasks have no speed figures, whatever their outcome, and the others keep theirs.
    run = RunBuilder(tmp_path / "run", task_ids=["cpu/a", "cpu/b", "sim/c", "sim/d"])
    run.add("cpu/a", "pass", device="cpu")
    run.add("cpu/b", "incorrect", device="cpu")
    run.add("sim/c", "pass", speedup=4.0, device="sim:npu")
    run.add("sim/d", "crash", device="sim:npu")
    group = only_group(run.write())

    assert value(group, "pass_rate") == 0.5
    assert value(group, "deployable_speedup") == pytest.approx(2.0)
    assert group.metrics["deployable_speedup"].n == 2


def test_missing_attempts_are_failures_but_not_costs(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run", task_ids=["t/a", "t/b", "t/c", "t/d"])
    run.add("t/a", "pass", speedup=3.0, usage=Usage(wall_s=100.0, turns=10, cost_usd=1.0))
    run.add("t/b", "incorrect", usage=Usage(wall_s=50.0, turns=6, tokens_in=7, tokens_out=3))
    group = only_group(run.write())

    assert group.missing_tasks == ["t/c", "t/d"]
    assert value(group, "pass_rate") == 0.25
    assert value(group, "deployable_speedup") == pytest.approx(3.0**0.25)
    assert value(group, "wall_s") == pytest.approx(75.0)
    assert group.metrics["wall_s"].n == 2
    assert value(group, "turns") == pytest.approx(8.0)
    assert value(group, "tokens") == pytest.approx(5.0)
    assert value(group, "cost_usd") == pytest.approx(0.5)
    assert group.totals.attempts == 2 and group.totals.wall_s == 150.0
    assert group.tasks[2].status == "missing"


def test_several_attempts_score_each_task_by_their_mean(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/a", "pass", index=0, speedup=4.0, sol_fraction=0.8)
    run.add("t/a", "incorrect", index=1)
    run.add("t/a", "pass", index=2, speedup=2.0, sol_fraction=0.4)
    run.add("t/a", "overfit", index=3)
    run.add("t/b", "pass", index=0, speedup=1.0, sol_fraction=0.3)
    group = only_group(run.write())

    task_a = group.tasks[0]
    assert task_a.status == "pass 2/4"
    assert task_a.pass_fraction == 0.5
    assert task_a.speedup == pytest.approx(geomean([4.0, 1.0, 2.0, 1.0]))
    assert task_a.passing_speedup == pytest.approx(geomean([4.0, 2.0]))
    assert task_a.fast(1.5) == 0.5 and task_a.fast(3.0) == 0.25
    assert value(group, "pass_rate") == pytest.approx((0.5 + 1.0) / 2)
    assert value(group, "deployable_speedup") == pytest.approx(math.sqrt(8.0**0.25 * 1.0))
    assert value(group, "sol_fraction") == pytest.approx(((0.8 + 0.4) / 4 + 0.3) / 2)
    # Three of a's four attempts are visible-correct, two of them also hidden-correct.
    assert value(group, "hidden_given_visible") == pytest.approx((0.75 * 2 / 3 + 1.0) / 1.75)


def test_groups_are_per_agent_and_model(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/a", "pass", agent="one", model="m1", speedup=2.0)
    run.add("t/a", "incorrect", agent="one", model="m2")
    run.add("t/a", "pass", agent="two", speedup=1.5)
    scores = score_run(run.write(), bootstrap=FAST)

    assert [g.label for g in scores.groups] == ["one@m1", "one@m2", "two"]
    assert value(scores.group("one@m1"), "pass_rate") == 1.0
    assert value(scores.group("one@m2"), "pass_rate") == 0.0
    assert value(scores.group("two"), "deployable_speedup") == pytest.approx(1.5)
    with pytest.raises(UnknownNameError, match="several match"):
        scores.group("one")
    with pytest.raises(UnknownNameError, match="known: one@m1, one@m2, two"):
        scores.group("three")
    with pytest.raises(ConfigError, match="several agents"):
        scores.group()


def test_accel_k_of_n(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    accel = {"track": "accel", "platform": "npu", "visible": 5}
    run.add("accel/a", "incorrect", visible_correct=3, **accel)
    run.add("accel/b", "pass", speedup=1.2, **accel)
    run.add("accel/c", "agent_error", **accel)  # no verdict: 0 of 5
    run.add("accel/d", "build_error", **accel)  # verdict with nothing checked: 0 of 5
    run.add("gpu/e", "pass", speedup=1.0)
    group = only_group(run.write())

    assert [t.k_of_n() for t in group.tasks] == ["3/5", "5/5", "0/5", "0/5", None]
    assert value(group, "accel_configs") == pytest.approx((3 + 5) / 20)
    assert group.metrics["accel_configs"].n == 4


def test_breakdowns(tmp_path: Path) -> None:
    group = score_run(sample_run(tmp_path / "run"), bootstrap=FAST).group("scripted")

    tracks = {b.key: b for b in group.breakdown("track")}
    assert sorted(tracks) == ["accel", "cuda2cuda", "torch2triton", "triton2triton"]
    triton = tracks["triton2triton"]
    assert triton.tasks == 3
    assert triton.metrics["pass_rate"].value == pytest.approx(2 / 3)
    assert triton.metrics["deployable_speedup"].value == pytest.approx(geomean([2.5, 1.2, 1.0]))
    levels = {b.key: b.tasks for b in group.breakdown("level")}
    assert levels == {"1": 4, "2": 2, "3": 2}
    assert [(b.key, b.tasks) for b in group.breakdown("platform")] == [("npu", 1)]


def test_intervals_cover_the_value_and_are_deterministic(tmp_path: Path) -> None:
    run_dir = sample_run(tmp_path / "run")
    first = score_run(run_dir, bootstrap=FAST)
    again = score_run(run_dir, bootstrap=FAST)
    other_seed = score_run(run_dir, bootstrap=Bootstrap(resamples=2_000, seed=1))
    assert first == again
    assert first.groups[0].metrics != other_seed.groups[0].metrics
    for group in first.groups:
        for spec in METRICS:
            metric = group.metrics[spec.key]
            if metric.value is not None:
                assert metric.ci_low is not None and metric.ci_high is not None
                assert metric.ci_low <= metric.value <= metric.ci_high, spec.key


def test_constant_samples_have_a_degenerate_interval() -> None:
    assert bootstrap_ci([0.5] * 9, bootstrap=FAST) == pytest.approx((0.5, 0.5))
    assert bootstrap_ci([2.0] * 3, bootstrap=FAST, geometric=True) == pytest.approx((2.0, 2.0))


@pytest.mark.parametrize("geometric", [False, True])
def test_interval_covers_the_true_value_in_a_simulation(geometric: bool) -> None:
    # 400 simulated runs of 40 tasks: a 95% percentile interval should miss the true value
    # about 5% of the time (a little more with so few tasks); 400 runs give +-2.2% noise.
    rng = np.random.default_rng(12345)
    simulations, tasks = 400, 40
    settings = Bootstrap(resamples=1_000, seed=7)
    covered = 0
    for _ in range(simulations):
        if geometric:
            sample = np.exp(rng.normal(math.log(1.3), 0.6, size=tasks))  # true geomean 1.3
            truth = 1.3
        else:
            sample = (rng.random(tasks) < 0.35).astype(float)  # true pass rate 0.35
            truth = 0.35
        low, high = bootstrap_ci(sample, bootstrap=settings, geometric=geometric)
        covered += low <= truth <= high
    assert 0.89 <= covered / simulations <= 0.99


def test_weighted_interval_matches_the_weighted_mean() -> None:
    low, high = bootstrap_ci([1.0, 0.0, 1.0], weights=[1.0, 0.5, 0.0], bootstrap=FAST)
    assert 0.0 <= low <= 2 / 3 <= high <= 1.0


def test_unreadable_run_directories(tmp_path: Path) -> None:
    # A path that is no run is bad input (exit 2); a broken record is a record error.
    with pytest.raises(ConfigError, match="does not exist"):
        score_run(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="not a run directory"):
        score_run(tmp_path / "empty")
    run_dir = RunBuilder(tmp_path / "run").write()
    assert score_run(run_dir).groups == []
    with (run_dir / "attempts.jsonl").open("a") as handle:
        handle.write('{"kind": "attempt", "oops": 1}\n{"kind": "attempt", "torn\n')
    with pytest.raises(RecordError, match=r"attempts.jsonl:1: invalid record"):
        score_run(run_dir)
