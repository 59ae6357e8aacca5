"""Platforms: defaults from TOML, validated overrides, the registry and derived values."""

from __future__ import annotations

import pytest

from gauntlet.accel import get_platform, platform_names
from gauntlet.errors import ConfigError, UnknownNameError


def test_registry() -> None:
    assert "npu" in platform_names()
    with pytest.raises(UnknownNameError, match="unknown platform 'npx' \\(known: .*npu"):
        get_platform("npx")


def test_defaults_come_from_the_toml() -> None:
    npu = get_platform("npu")
    assert npu.param_values()["mlen"] == 32
    assert npu.overrides() == {}
    assert npu.symbols()["VLEN"] == 32
    assert get_platform("npu") is npu  # built once per set of parameters


def test_overrides_produce_a_new_platform() -> None:
    small = get_platform("npu", {"mlen": 16, "vlen": 64, "accumulators": 2})
    assert small.overrides() == {"mlen": 16, "vlen": 64, "accumulators": 2}
    assert small.space("vsram").align == 16 and small.space("msram").align == 16
    assert small.isa.register_file("acc").count == 2
    assert small.isa["setvli"].fields[0].kind.hi == 64  # type: ignore[attr-defined]
    assert small.peak_flops_per_cycle == 2 * 16 * 16


def test_bad_overrides_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown npu parameter\\(s\\) 'mlenn'.*known: .*mlen"):
        get_platform("npu", {"mlenn": 16})
    with pytest.raises(ConfigError, match="power of two"):
        get_platform("npu", {"mlen": 24})
    with pytest.raises(ConfigError, match="multiple of mlen\\*mlen"):
        get_platform("npu", {"vsram_words": 1000})
    with pytest.raises(ConfigError, match="invalid npu parameters"):
        get_platform("npu", {"queue_depth": 0})


def test_every_cost_formula_evaluates() -> None:
    from gauntlet import expr
    from gauntlet.accel.isa import formula_names
    from gauntlet.accel.machine import formula_env

    npu = get_platform("npu")
    env = formula_env(npu.param_values())
    for ins in npu.isa.instructions:
        names = formula_names(ins.cost) | formula_names(ins.latency)
        values = {n: 3 for n in names if n not in env}  # run-time values (vl, rows, n, ...)
        for formula in (ins.cost, ins.latency):
            cycles = expr.evaluate(formula, {**env, **values})
            assert isinstance(cycles, int) and cycles >= 0, (ins.mnemonic, formula)
