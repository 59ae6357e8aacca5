"""The task checks on a fixture task, unchanged and broken on purpose, and on every shipped task."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gauntlet import suites, taskcheck
from gauntlet.task import load_task
from gauntlet.taskcheck import (
    DOMAIN_CHECK,
    CheckResult,
    degeneracy_gate,
    domain_reach,
    reference_checks,
    references,
)

FIXTURE = Path(__file__).parent / "support" / "tasks" / "triton2triton" / "scale_add"


def _fits(task_dir: Path) -> tuple[bool, str]:
    results = {r.name: r for r in reference_checks(load_task(task_dir))}
    fits = results["output fits its dtype"]
    return fits.ok, fits.detail


def test_an_output_within_its_dtype_passes(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "scale_add")
    assert _fits(tmp_path / "scale_add") == (True, "")


def test_an_output_beyond_float16_is_named_with_its_config_and_distribution(
    tmp_path: Path,
) -> None:
    task = tmp_path / "scale_add"
    shutil.copytree(FIXTURE, task)
    toml = task / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            'name = "H1", n = 3001, dtype = "float32"', 'name = "H1", n = 3001, dtype = "float16"'
        )
    )
    inputs = task / "inputs.py"
    # Finite float16 inputs whose exact result (1e5 * x + y) leaves float16's range.
    inputs.write_text(
        inputs.read_text().replace(
            '"alpha": 1.5', '"alpha": 1e5 if distribution == "uniform" else 1.5'
        )
    )
    ok, detail = _fits(task)
    assert not ok
    assert detail.startswith("H1 (float16) uniform inputs: output 0 reaches 9.9")
    assert "normal" not in detail


def test_the_gate_reuses_the_reference_checks_forwards_and_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given one `references` pair, the gate runs none of the forwards the checks ran."""
    shutil.copytree(FIXTURE, tmp_path / "scale_add")
    task = load_task(tmp_path / "scale_add")
    made = taskcheck._python_reference
    calls: list[int] = []

    def counted(task: object) -> tuple[taskcheck.Draw, taskcheck.Reference]:
        draw, reference = made(task)  # type: ignore[arg-type]

        def counting(inputs: dict[str, object]) -> list[object]:
            calls.append(1)
            return reference(inputs)  # type: ignore[return-value]

        return draw, counting  # type: ignore[return-value]

    monkeypatch.setattr(taskcheck, "_python_reference", counted)
    apart = reference_checks(task), degeneracy_gate(task)
    separate = len(calls)
    calls.clear()
    pair = references(task)
    together = reference_checks(task, pair), degeneracy_gate(task, pair)
    assert together == apart
    # The first distribution's draws and one-input redraws are the checks' own: each visible
    # config's forward and its two inputs' redraws run once, not twice.
    assert separate - len(calls) == 3 * len(task.visible_configs)


# -- The fixed hidden configs reach the extremes of the hidden domain -----------------------

FIXED = (
    'fixed = [\n  { name = "H1", n = 3001, dtype = "float32" },\n'
    '  { name = "H2", n = 5000, dtype = "float32" },\n'
    '  { name = "H3", n = 1, dtype = "float32" },\n]'
)
SHORT = 'fixed = [{ name = "H1", n = 3001, dtype = "float32" }]'
DOMAIN = "n = { min = 1, max = 5000 }"


def _reach(tmp_path: Path, fixed: str = FIXED, domain: str = DOMAIN, **more: str) -> CheckResult:
    """The domain check on the fixture with its fixed hidden configs and domain replaced."""
    task = tmp_path / "scale_add"
    shutil.copytree(FIXTURE, task, dirs_exist_ok=True)
    toml = task / "task.toml"
    text = (FIXTURE / "task.toml").read_text().replace(FIXED, fixed).replace(DOMAIN, domain)
    for old, new in more.items():
        text = text.replace(old, new)
    toml.write_text(text)
    return domain_reach(load_task(task))


def _fixed(*configs: str) -> str:
    return (
        "fixed = [" + ", ".join(f'{{ name = "H{i}", {c} }}' for i, c in enumerate(configs, 1)) + "]"
    )


def test_fixed_configs_that_stop_short_of_the_domains_max_fail_naming_what_to_add(
    tmp_path: Path,
) -> None:
    # One fixed config, n = 3001, in a domain up to 5000.
    result = _reach(tmp_path, SHORT)
    assert result.name == DOMAIN_CHECK and not result.ok
    assert (
        "task 'triton2triton/scale_add' parameter 'n': the domain reaches 5000 (its max) but "
        "the largest fixed hidden value is 3001; add a config to configs.hidden.fixed, or "
        "change one, with n >= 4500, or lower the domain's max" in result.detail
    )
    assert "the domain starts at 1 but the smallest fixed hidden value is 3001" in result.detail


def test_fixed_configs_at_both_ends_of_the_domain_pass(tmp_path: Path) -> None:
    fixed = _fixed('n = 3001, dtype = "float32"', "n = 4500", "n = 1")
    assert _reach(tmp_path, fixed) == CheckResult(DOMAIN_CHECK, True, "")
    # Beyond the domain counts as reaching it; a tenth below the max does not.
    assert _reach(tmp_path, _fixed("n = 6000", "n = 1")).ok
    assert not _reach(tmp_path, _fixed("n = 4499", "n = 1")).ok
    assert not _reach(tmp_path, _fixed("n = 5000", "n = 2")).ok


def test_the_extreme_is_the_largest_size_the_constraint_admits(tmp_path: Path) -> None:
    capped = {"count = 1\n": 'count = 1\nconstraint = "n * itemsize <= 12004"\n'}
    dtypes = 'dtype = { values = ["float32"] }'
    fixed = _fixed('n = 3001, dtype = "float32"', 'n = 1, dtype = "float32"')
    # float32 only: n * 4 <= 12004 stops n at 3001, which the fixed set reaches.
    assert _reach(tmp_path / "a", fixed, f"{DOMAIN}\n{dtypes}", **capped).ok
    # With float16 also allowed, n = 5000 (float16) is admitted: 3001 falls short.
    both = 'dtype = { values = ["float32", "float16"] }'
    short = _reach(tmp_path / "b", fixed, f"{DOMAIN}\n{both}", **capped)
    assert "parameter 'n': the domain reaches 5000 (its max)" in short.detail
    # Without float16 in the range the constraint stops n below the max, and says so.
    upto = {"count = 1\n": 'count = 1\nconstraint = "n <= 4000"\n'}
    low = _reach(tmp_path / "c", _fixed("n = 3001", "n = 1"), **upto)
    assert "reaches 4000 (the largest value its constraint admits)" in low.detail


def test_every_dtype_and_choice_of_the_domain_is_in_some_fixed_config(tmp_path: Path) -> None:
    dtypes = 'dtype = { values = ["float32", "float16"] }'
    domain = f"{DOMAIN}\n{dtypes}\nfast = {{ values = [true, false] }}"
    ends = ['n = 5000, dtype = "float32", fast = true', 'n = 1, dtype = "float32", fast = true']
    result = _reach(tmp_path / "a", _fixed(*ends), domain)
    assert not result.ok
    assert (
        "parameter 'dtype': the domain's value 'float16' is in no fixed hidden config; add a "
        "config to configs.hidden.fixed, or change one, with dtype = 'float16'" in result.detail
    )
    assert (
        "parameter 'fast': the domain's value False is in no fixed hidden config" in result.detail
    )
    every = [*ends, 'n = 3001, dtype = "float16", fast = false']
    assert _reach(tmp_path / "b", _fixed(*every), domain).ok


def test_a_numeric_list_of_the_domain_needs_its_smallest_and_largest_value(
    tmp_path: Path,
) -> None:
    domain = f"{DOMAIN}\nblock = {{ values = [32, 64, 128] }}"
    ends = ["n = 5000, block = 32", "n = 1, block = 64"]
    result = _reach(tmp_path / "a", _fixed(*ends), domain)
    assert "parameter 'block': the domain reaches 128 (its largest value)" in result.detail
    assert _reach(tmp_path / "b", _fixed("n = 5000, block = 32", "n = 1, block = 128"), domain).ok


def test_a_domain_that_admits_odd_sizes_needs_an_odd_fixed_config(tmp_path: Path) -> None:
    # Both ends are reached (4800 >= 0.9 x 5000, and the minimum itself), but by even sizes only.
    domain = "n = { min = 2, max = 5000 }"
    even = _reach(tmp_path / "a", _fixed("n = 4800", "n = 2"), domain)
    assert not even.ok
    assert (
        "task 'triton2triton/scale_add' parameter 'n': the domain admits odd sizes but every "
        "fixed hidden value is even (2, 4800); add a config to configs.hidden.fixed, or change "
        "one, with an odd n such as 4999" in even.detail
    )
    assert _reach(tmp_path / "b", _fixed("n = 4801", "n = 2"), domain).ok
    # A numeric list with an odd value needs it (or another odd one) too.
    listed = f"{DOMAIN}\nkernel = {{ values = [2, 3, 4] }}"
    ends = ["n = 5000, kernel = 2", "n = 1, kernel = 4"]
    assert (
        "parameter 'kernel': the domain admits odd sizes"
        in _reach(tmp_path / "c", _fixed(*ends), listed).detail
    )
    assert _reach(tmp_path / "d", _fixed(*ends, "n = 7, kernel = 3"), listed).ok


def test_a_domain_that_draws_only_even_sizes_needs_no_odd_config(tmp_path: Path) -> None:
    fixed = _fixed("n = 5000", "n = 2")
    assert _reach(tmp_path / "a", fixed, "n = { min = 2, max = 5000, multiple_of = 2 }").ok
    even = {"count = 1\n": 'count = 1\nconstraint = "n % 2 == 0"\n'}
    assert _reach(tmp_path / "b", fixed, "n = { min = 2, max = 5000 }", **even).ok
    # An odd step draws odd multiples: 3 x 1665 = 4995 is one.
    odd_step = _reach(
        tmp_path / "c", _fixed("n = 4998", "n = 6"), "n = { min = 3, max = 5000, multiple_of = 3 }"
    )
    assert "with an odd n such as 4995" in odd_step.detail


def test_input_distributions_need_no_fixed_config(tmp_path: Path) -> None:
    # Every config runs under every distribution of [inputs]: nothing to cover per config.
    fixed = _fixed("n = 5000", "n = 1")
    more = {'distributions = ["normal", "uniform"]': 'distributions = ["normal", "special"]'}
    assert _reach(tmp_path, fixed, **more).ok


@pytest.mark.parametrize("task_id", suites.task_ids())
def test_every_shipped_tasks_fixed_hidden_configs_reach_its_domain(task_id: str) -> None:
    result = domain_reach(suites.load_by_id(task_id))
    assert result.ok, result.detail
