"""The judge's backend for accelerator assembly: guards, build diagnostics, evaluation, timing."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from gauntlet.judge import asm_backend, judge
from gauntlet.judge.backend import Submission
from gauntlet.task import Config, Task, load_task

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "npu"


@pytest.fixture(scope="module")
def relu() -> Task:
    return load_task(TASKS / "relu")


def _submission(text: str, name: str = "kernel.asm") -> Submission:
    return Submission(files={name: text}, source_dir=Path("."))


def test_guard_accepts_assembly_and_refuses_anything_else(relu: Task) -> None:
    backend = asm_backend.AsmBackend()
    assert backend.guard(relu, _submission(relu.path("baseline.asm").read_text())) is None
    assert "assembly files" in str(backend.guard(relu, _submission("nop\n", "kernel.py")))
    found = backend.guard(relu, _submission("nop\n\x07halt\n"))
    assert found is not None and "line 2" in found and "control character" in found
    long_line = "nop ; " + "x" * asm_backend.MAX_LINE_CHARS
    assert "over the limit" in str(backend.guard(relu, _submission(long_line)))


def test_build_reports_line_column_found_and_expected(relu: Task, tmp_path: Path) -> None:
    backend = asm_backend.AsmBackend()
    build = backend.build(relu, _submission("nop\n    li r40, 1\n"), tmp_path, "sim:npu")
    assert not build.ok and build.failure == "build_error"
    assert "kernel.asm: line 2, col 8" in build.reason
    assert "found 'r40'" in build.reason and "r0..r31" in build.reason
    assert "config C1" in build.reason
    ok = backend.build(relu, _submission("halt\n"), tmp_path / "ok", "sim:npu")
    assert ok.ok and ok.artifact is not None and (ok.artifact / "kernel.asm").is_file()


def test_config_setup_maps_hw_parameters_and_symbols(relu: Task) -> None:
    config = relu.visible_configs[4]
    setup = asm_backend.config_setup(relu, config)
    assert setup.overrides == {"vlen": 16, "mlen": 16, "vsram_words": 8192}
    assert setup.platform.param_values()["vlen"] == 16
    assert setup.symbols["ROWS"] == 97 and setup.symbols["itemsize"] == 4
    assert "hw_vlen" not in setup.symbols and "dtype" not in setup.symbols
    assert setup.symbols["x"] == setup.contract.region("x").base
    bf16 = asm_backend.config_setup(relu, relu.visible_configs[1])
    assert bf16.symbols["itemsize"] == 2
    assert bf16.contract.region("y").dtype == "bfloat16"


def test_draw_array_rounds_to_bf16_and_is_deterministic() -> None:
    one = asm_backend.draw_array(np.random.default_rng(3), (4, 5), "scaled", "bfloat16")
    two = asm_backend.draw_array(np.random.default_rng(3), (4, 5), "scaled", "bfloat16")
    assert one.dtype == np.float32 and np.array_equal(one, two)
    assert np.array_equal(one, one.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert abs(float(one.mean()) - 50.0) < 150.0
    with pytest.raises(ValueError, match="distribution"):
        asm_backend.draw_array(np.random.default_rng(0), (2,), "special")


def test_reference_functions_draw_and_compute_in_float64(relu: Task) -> None:
    draw, reference = asm_backend.reference_functions(relu)
    inputs = draw(relu.visible_configs[0], 7, "normal")
    assert list(inputs) == ["x"] and inputs["x"].shape == (64, 256)
    (out,) = reference(inputs)
    assert out.dtype == np.float64 and np.array_equal(out, np.maximum(inputs["x"], 0))


def test_trial_seeds_depend_on_the_secret_config_and_distribution(relu: Task) -> None:
    config = relu.visible_configs[0]
    trials = asm_backend.trials_for(relu, config, 1)
    assert [d for d, _ in trials] == relu.spec.inputs.distributions
    assert len({s for _, s in trials}) == len(trials)
    assert trials != asm_backend.trials_for(relu, config, 2)


def test_expert_passes_with_cycle_timing_and_roofline(relu: Task, tmp_path: Path) -> None:
    (tmp_path / "kernel.asm").write_text(relu.path("expert.asm").read_text())
    verdict = judge(relu, tmp_path, device="sim:npu", seed=5, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    assert verdict.timed and verdict.speedup is not None and verdict.speedup > 1
    for result in verdict.configs:
        timing = result.timing
        assert timing is not None and timing.unit == "cycles" and timing.count == 1
        assert timing.speedup == pytest.approx(timing.baseline / timing.candidate)
        assert timing.sol is not None and 0 < timing.sol <= timing.candidate
        assert timing.sol_fraction == pytest.approx(timing.sol / timing.candidate)
        assert result.match_fraction == 1.0
    setup = asm_backend.config_setup(relu, relu.visible_configs[0])
    sol = asm_backend.roofline_cycles(relu, relu.visible_configs[0], setup.platform)
    assert sol == pytest.approx(2 * 64 * 256 * 4 / 64)


def test_baseline_is_recognised_and_has_speedup_one(relu: Task, tmp_path: Path) -> None:
    (tmp_path / "kernel.asm").write_text(relu.path("baseline.asm").read_text())
    verdict = judge(relu, tmp_path, device="sim:npu", seed=5, mode="feedback")
    assert verdict.status == "pass"
    assert verdict.speedup == pytest.approx(1.0)


def test_wrong_values_give_match_fraction_and_the_first_bad_element(
    relu: Task, tmp_path: Path
) -> None:
    # vmaxs with f2 = -1.0 instead of f0 = 0: negatives above -1 stay negative.
    source = (
        relu.path("baseline.asm")
        .read_text()
        .replace("vmaxs [r12], [r11], f0", "vmaxs [r12], [r11], f2")
    )
    assert source != relu.path("baseline.asm").read_text()
    (tmp_path / "kernel.asm").write_text(source)
    verdict = judge(relu, tmp_path, device="sim:npu", seed=5, mode="feedback")
    assert verdict.status == "incorrect"
    assert "config C1" in verdict.reason and "mismatch at index" in verdict.reason
    first = verdict.configs[0]
    assert first.correct is False and first.match_fraction is not None
    assert 0.5 < first.match_fraction < 1.0


def test_evaluation_needs_the_task_platform_device(relu: Task, tmp_path: Path) -> None:
    from gauntlet.errors import JudgeError

    (tmp_path / "kernel.asm").write_text("halt\n")
    with pytest.raises(JudgeError, match="sim:npu"):
        judge(relu, tmp_path, device="cpu", mode="feedback")


def test_step_limit_scales_with_the_baseline(relu: Task) -> None:
    config: Config = relu.visible_configs[0]
    check = asm_backend.check_config(relu, config, "top:\n b top\n", 3, timed=False)
    assert check.failure == "timeout"
    assert "step_limit" in check.reason and "line 2" in check.reason
    assert check.baseline is not None
    assert max(asm_backend.STEP_FLOOR, 16 * check.baseline.instructions) == asm_backend.STEP_FLOOR


def test_every_visible_config_is_checked_after_one_is_wrong(
    relu: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # k/n must count every visible config: a program wrong on the first one is still checked
    # on the others (it was reported 1/5 where 4/5 were right); hidden ones wait.
    real = asm_backend.check_config
    first = relu.visible_configs[0].name
    checked: list[str] = []

    def wrong_on_the_first(task: Task, config: Config, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        checked.append(config.name)
        check = real(task, config, *args, **kwargs)  # type: ignore[arg-type]
        if config.name == first:
            check.result = check.result.model_copy(update={"correct": False})
        return check

    monkeypatch.setattr(asm_backend, "check_config", wrong_on_the_first)
    (tmp_path / "kernel.asm").write_text(relu.path("expert.asm").read_text())
    verdict = judge(relu, tmp_path, device="sim:npu", seed=5, configs="all")
    assert verdict.status == "incorrect"
    visible = verdict.visible()
    assert [c.correct for c in visible] == [False] + [True] * (len(visible) - 1)
    assert checked == [c.name for c in relu.visible_configs]  # no hidden config was run
