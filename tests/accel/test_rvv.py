"""The rvv platform: its binder instructions, arithmetic, grouping, faults, costs and manual.

`test_isa.py` checks every data instruction against the table's semantics and
`test_assembler.py` round-trips every opcode; the instructions that act on the machine itself
(vector configuration, branches, loads and stores) are checked here against plain Python and
NumPy models, and `BINDER_TESTS` names the test of each of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gauntlet.accel import (
    AsmError,
    MemoryContract,
    Platform,
    SimResult,
    assemble,
    get_platform,
    grep_manual,
    manual,
    simulate,
)
from gauntlet.accel.docs import run_microbenchmark
from gauntlet.accel.machine import Machine
from gauntlet.accel.platforms.rvv_manual import EXAMPLE_SOURCE, EXAMPLE_SYMBOLS
from gauntlet.accel.simulator import run
from gauntlet.errors import ConfigError

FAST = settings(max_examples=25, deadline=None, derandomize=True)


@pytest.fixture(scope="module")
def rvv() -> Platform:
    return get_platform("rvv")


def _run(
    source: str,
    *,
    inputs: Mapping[str, np.ndarray] | None = None,
    outputs: Mapping[str, tuple[int, ...]] | None = None,
    dtype: str = "float32",
    symbols: Mapping[str, int] | None = None,
    step_limit: int = 1_000_000,
    platform: Platform | None = None,
) -> SimResult:
    """Assemble and simulate against x (input, 64 x 64 by default) and y (output)."""
    given_inputs = dict(inputs or {"x": np.arange(64 * 64, dtype=np.float32).reshape(64, 64)})
    contract = MemoryContract.pack(
        inputs={k: v.shape for k, v in given_inputs.items()},
        outputs=dict(outputs or {"y": (64, 64)}),
        dtype=dtype,  # type: ignore[arg-type]
    )
    target = platform or get_platform("rvv")
    program = assemble(target, source, {**contract.symbols(), **(symbols or {})})
    return simulate(program, contract, given_inputs, step_limit=step_limit)


def _on(platform: Platform, source: str) -> tuple[Machine, SimResult]:
    m = Machine(platform)
    return m, run(m, assemble(platform, source))


def _kind(result: SimResult) -> str:
    assert result.fault is not None, "expected a fault"
    return result.fault.kind


# -- vector configuration ----------------------------------------------------------------------


@FAST
@given(avl=st.integers(-3, 300), lmul=st.sampled_from(["m1", "m2", "m4", "m8"]))
def test_cfg(rvv: Platform, avl: int, lmul: str) -> None:
    vlen = int(rvv.param_values()["vlen"])
    expected = min(avl, int(lmul[1:]) * vlen)
    m, result = _on(rvv, f"s.set s4, {avl}\nv.cfg s5, s4, {lmul}\nf.set f1, 3.0\nv.splat v4, f1\n")
    if avl < 1:
        assert _kind(result) == "invalid_operand"
        return
    assert result.fault is None
    assert m.vl == expected and m.regs["s"][5] == expected
    # v4 names VL elements from its first one on: registers v4 .. v4 + ceil(VL / VLEN) - 1.
    written = m.sram["vrf"].written
    start = 4 * vlen
    assert written[start : start + expected] == b"\x01" * expected
    assert written[start + expected] == 0 and written[start - 1] == 0
    if avl >= 1:
        m2, _ = _on(rvv, f"v.cfgk s0, {avl}, {lmul}\n")
        assert m2.vl == expected and m2.regs["s"][0] == 0


# -- control -----------------------------------------------------------------------------------

_CONDITIONS: dict[str, Callable[[int, int], bool]] = {
    "j.go": lambda a, b: True,
    "j.eq": lambda a, b: a == b,
    "j.ne": lambda a, b: a != b,
    "j.lt": lambda a, b: a < b,
    "j.ge": lambda a, b: a >= b,
}


@FAST
@given(
    mnemonic=st.sampled_from(sorted(_CONDITIONS)),
    a=st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 3),
    b=st.integers(-3, 3),
)
def test_branches(rvv: Platform, mnemonic: str, a: int, b: int) -> None:
    operands = "taken" if mnemonic == "j.go" else "s1, s2, taken"
    source = (
        f"s.set s1, {a}\ns.set s2, {b}\n{mnemonic} {operands}\ns.set s3, 1\nhalt\n"
        "taken:\ns.set s3, 2\n"
    )
    m, result = _on(rvv, source)
    taken = _CONDITIONS[mnemonic](a, b)
    assert m.regs["s"][3] == (2 if taken else 1)
    assert result.profile.stalls["branch"] == (rvv.param_values()["branch_penalty"] if taken else 0)


def test_counted_loop(rvv: Platform) -> None:
    m, result = _on(rvv, "s.set s1, 7\ntop:\ns.addk s2, s2, 3\ns.addk s1, s1, -1\nj.ne s1, s0, top")
    assert result.fault is None and m.regs["s"][2] == 21
    assert result.profile.stalls["branch"] == 6 * rvv.param_values()["branch_penalty"]


def test_halt_stops_and_counts(rvv: Platform) -> None:
    m, result = _on(rvv, "s.set s1, 1\nhalt\ns.set s1, 2\n")
    assert m.regs["s"][1] == 1 and result.profile.instructions == 2


# -- memory ------------------------------------------------------------------------------------


def _x(rows: int = 16, cols: int = 64) -> np.ndarray:
    return (np.arange(rows * cols, dtype=np.float32) * 0.37 - 11).reshape(rows, cols)


@FAST
@given(
    dtype=st.sampled_from(["float32", "bfloat16"]),
    vl=st.integers(1, 8 * 32),
    stride=st.none() | st.integers(0, 70),
    start=st.integers(0, 300),
    register=st.sampled_from([0, 8, 16, 24]),
)
def test_vector_loads(
    rvv: Platform, dtype: str, vl: int, stride: int | None, start: int, register: int
) -> None:
    x = _x()
    contract = MemoryContract.pack(inputs={"x": x.shape}, outputs={"y": (1, 1)}, dtype=dtype)
    itemsize = 2 if dtype == "bfloat16" else 4
    step = 1 if stride is None else stride
    load = (
        f"ld.v v{register}, [p0 + {start * itemsize}]"
        if stride is None
        else f"s.set s2, {stride * itemsize}\nld.vs v{register}, [p0 + {start * itemsize}], s2"
    )
    program = assemble(rvv, f"v.cfgk s0, {vl}, m8\n{load}\n", contract.symbols())
    m = Machine(rvv, contract, {"x": x})
    result = run(m, program)
    if start + (vl - 1) * step + 1 > x.size:
        assert _kind(result) == "out_of_bounds"
        return
    assert result.fault is None, result.fault
    flat = (x.astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else x).reshape(-1)
    expected = flat[start + step * np.arange(vl)].astype(np.float32)
    lo = register * 32
    np.testing.assert_array_equal(m.sram["vrf"].data[lo : lo + vl], expected)
    assert m.sram["vrf"].written[lo : lo + vl] == b"\x01" * vl
    assert result.profile.dma_bytes_read == vl * itemsize


@FAST
@given(
    dtype=st.sampled_from(["float32", "bfloat16"]),
    vl=st.integers(1, 8 * 32),
    stride=st.none() | st.integers(1, 9),
    start=st.integers(0, 64),
)
def test_vector_stores(rvv: Platform, dtype: str, vl: int, stride: int | None, start: int) -> None:
    contract = MemoryContract.pack(inputs={"x": (1, 1)}, outputs={"y": (16, 64)}, dtype=dtype)
    itemsize = 2 if dtype == "bfloat16" else 4
    step = 1 if stride is None else stride
    values = np.arange(vl, dtype=np.float32) * 1.001 + 0.3
    store = (
        f"st.v [p1 + {start * itemsize}], v8"
        if stride is None
        else f"s.set s2, {stride * itemsize}\nst.vs [p1 + {start * itemsize}], s2, v8"
    )
    program = assemble(rvv, f"v.cfgk s0, {vl}, m8\n{store}\n", contract.symbols())
    m = Machine(rvv, contract, {"x": np.zeros((1, 1), np.float32)})
    m.write_sram("vrf", 8 * 32, values)
    result = run(m, program)
    last = start + (vl - 1) * step + 1
    if last > 16 * 64:
        assert _kind(result) == "out_of_bounds"
        return
    assert result.fault is None, result.fault
    y = result.outputs["y"].reshape(-1)
    positions = start + step * np.arange(vl)
    np.testing.assert_array_equal(y[positions], values.astype(y.dtype))
    written = np.zeros(y.size, bool)
    written[positions] = True
    assert np.isnan(y[~written].astype(np.float32)).all()
    assert result.unwritten["y"] == y.size - vl
    assert result.profile.dma_bytes_written == vl * itemsize


def test_scalar_loads_and_stores(rvv: Platform) -> None:
    x = _x()
    source = "ld.f f1, [p0 + 40]\nf.add f2, f1, f1\nst.f [p1 + 8], f2\n"
    result = _run(source, inputs={"x": x})
    assert result.fault is None
    assert result.outputs["y"].reshape(-1)[2] == np.float32(x.reshape(-1)[10] * 2)
    assert result.unwritten["y"] == 64 * 64 - 1
    # f.add waited for the load's data.
    assert result.profile.stalls["register_dependency"] >= rvv.param_values()["mem_latency"]


BINDER_TESTS = {
    "v.cfg": test_cfg,
    "v.cfgk": test_cfg,
    "j.go": test_branches,
    "j.eq": test_branches,
    "j.ne": test_branches,
    "j.lt": test_branches,
    "j.ge": test_branches,
    "halt": test_halt_stops_and_counts,
    "ld.v": test_vector_loads,
    "ld.vs": test_vector_loads,
    "st.v": test_vector_stores,
    "st.vs": test_vector_stores,
    "ld.f": test_scalar_loads_and_stores,
    "st.f": test_scalar_loads_and_stores,
}


# -- arithmetic, against independent NumPy references ------------------------------------------


def _vector_op(
    platform: Platform, line: str, a: np.ndarray, b: np.ndarray | None = None
) -> Machine:
    """Run `line` with v1 = a, v2 = b (one register each, VL = VLEN); results in v3 / f1."""
    m = Machine(platform)
    m.write_sram("vrf", 32, a)
    if b is not None:
        m.write_sram("vrf", 64, b)
    result = run(m, assemble(platform, line))
    assert result.fault is None, result.fault
    return m


@pytest.mark.parametrize(
    ("line", "reference"),
    [
        ("v.exp v3, v1", lambda a: np.exp(a.astype(np.float64))),
        ("v.tanh v3, v1", lambda a: np.tanh(a.astype(np.float64))),
        ("v.rsqrt v3, v1", lambda a: 1 / np.sqrt(a.astype(np.float64))),
        ("v.rcp v3, v1", lambda a: 1 / a.astype(np.float64)),
        ("v.sqrt v3, v1", lambda a: np.sqrt(a.astype(np.float64))),
    ],
)
def test_special_functions_round_once(rvv: Platform, line: str, reference: Callable) -> None:
    a = np.random.default_rng(1).uniform(0.01, 20, 32).astype(np.float32)
    m = _vector_op(rvv, line, a)
    np.testing.assert_array_equal(m.sram["vrf"].data[96:128], reference(a).astype(np.float32))


def test_fma_rounds_once(rvv: Platform) -> None:
    a = np.full(32, 1 + 2**-12, np.float32)
    d = np.full(32, -(1 + 2**-11), np.float32)
    m = Machine(rvv)
    m.write_sram("vrf", 32, a)
    m.write_sram("vrf", 96, d)
    run(m, assemble(rvv, "v.fma v3, v1, v1"))
    exact = (1 + 2**-12) ** 2 - (1 + 2**-11)  # 2**-24, lost if a*a were rounded first
    assert (m.sram["vrf"].data[96:128] == np.float32(exact)).all()


def test_reductions_are_exactly_rounded(rvv: Platform) -> None:
    a = np.array([1e8, 1.0, -1e8, 3.0] * 8, dtype=np.float32)
    m = _vector_op(rvv, "v.rsum f1, v1\nv.rmax f2, v1\nv.getf f3, v1", a)
    assert m.regs["f"][1] == math.fsum(a.tolist()) == 32.0  # a naive fp32 sum would lose it
    assert m.regs["f"][2] == 1e8 and m.regs["f"][3] == 1e8


def test_bf16_rounding_is_to_nearest_even(rvv: Platform) -> None:
    a = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9, -(1 + 2**-8)] * 8, np.float32)
    m = _vector_op(rvv, "v.bf16 v3, v1", a)
    expected = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(m.sram["vrf"].data[96:128], expected)
    assert expected[0] == 1.0 and expected[1] == 1 + 4 * 2**-8


def test_masks(rvv: Platform) -> None:
    a = np.arange(32, dtype=np.float32) - 10
    b = np.zeros(32, np.float32)
    source = """
        f.set f0, 5.0
        v.cmp k1, v1, v2, gt        ; a > 0
        v.cmpf k2, v1, f0, lt       ; a < 5
        k.and k3, k1, k2
        k.pop f4, k3
        k.not k4, k3
        k.or k5, k4, k1
        v.sel v3, k3, v1, v2
    """
    m = _vector_op(rvv, source, a, b)
    inside = (a > 0) & (a < 5)
    assert m.regs["f"][4] == inside.sum() == 4
    np.testing.assert_array_equal(m.regs["k"][4][:32], ~inside)
    np.testing.assert_array_equal(m.regs["k"][5][:32], ~inside | (a > 0))
    np.testing.assert_array_equal(m.sram["vrf"].data[96:128], np.where(inside, a, 0))


def test_grouped_operands_span_registers(rvv: Platform) -> None:
    """With LMUL = 4 and VL = 100, v4 covers v4..v7 and an operation touches 100 elements."""
    m = Machine(rvv)
    a = np.arange(100, dtype=np.float32)
    m.write_sram("vrf", 4 * 32, a)
    result = run(m, assemble(rvv, "v.cfgk s0, 100, m4\nf.set f1, 0.5\nv.mulf v8, v4, f1\n"))
    assert result.fault is None
    np.testing.assert_array_equal(m.sram["vrf"].data[256:356], a * np.float32(0.5))
    assert m.sram["vrf"].written[356] == 0  # elements from VL on are untouched
    # Overlapping groups alias: v5 is the second register of the v4 group.
    run(m, assemble(rvv, "v.cfgk s0, 32, m1\nv.mov v12, v5\n"))
    np.testing.assert_array_equal(m.sram["vrf"].data[384:416], a[32:64])


def test_example_kernel(rvv: Platform) -> None:
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    result = _run(EXAMPLE_SOURCE, inputs={"x": x}, symbols=EXAMPLE_SYMBOLS)
    assert result.fault is None
    np.testing.assert_array_equal(result.outputs["y"], x * np.float32(2) + np.float32(1))
    assert result.unwritten == {"y": 0}


def test_bf16_kernel_rounds_on_store(rvv: Platform) -> None:
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    bf16_source = EXAMPLE_SOURCE.replace("s.shlk s6, s5, 2", "s.shlk s6, s5, 1")
    result = _run(bf16_source, inputs={"x": x}, symbols=EXAMPLE_SYMBOLS, dtype="bfloat16")
    assert result.fault is None
    expected = (x.astype(np.float32) * 2 + 1).astype(ml_dtypes.bfloat16)
    assert result.outputs["y"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(result.outputs["y"], expected)
    assert result.profile.dma_bytes == 2 * 64 * 64 * 2


# -- faults ------------------------------------------------------------------------------------


def test_reading_an_unwritten_vector_register_faults() -> None:
    result = _run("nop\nv.add v1, v2, v3\n")
    assert _kind(result) == "uninitialized_read"
    assert (result.fault.pc, result.fault.line) == (1, 2)
    assert "vrf[64, 96)" in result.fault.message
    assert _kind(_run("st.v [p1], v4\n")) == "uninitialized_read"


def test_reading_unwritten_output_faults() -> None:
    result = _run("ld.v v0, [p1]\n")
    assert _kind(result) == "uninitialized_read" and "'y'" in result.fault.message


def test_out_of_bounds_faults() -> None:
    past_end = _run("ld.v v0, [p0 + 64 * 64 * 4 - 4]\n")
    assert _kind(past_end) == "out_of_bounds" and "of 'x'" in past_end.fault.message
    nowhere = _run("p.set p7, 16\nld.f f1, [p7]\n")
    assert _kind(nowhere) == "out_of_bounds" and "in no region" in nowhere.fault.message


def test_endless_loop_hits_the_step_limit() -> None:
    result = _run("top:\ns.addk s1, s1, 1\nj.go top\n", step_limit=1000)
    assert _kind(result) == "step_limit" and result.profile.instructions == 1000


def test_writing_outside_outputs_faults() -> None:
    source = "f.set f1, 1.0\nv.splat v0, f1\nst.v [p0], v0\n"
    result = _run(source)
    assert _kind(result) == "protection" and "input region 'x'" in result.fault.message
    assert _run(source.replace("[p0]", "[p1]")).fault is None
    assert _kind(_run("f.set f1, 1.0\nst.f [p0 + 4], f1\n")) == "protection"


def test_register_groups_are_bounded_by_the_register_file() -> None:
    """Capacity: a group that runs past v31 faults, for vector and memory instructions alike."""
    grouped = _run("v.cfgk s0, 8 * VLEN, m8\nf.set f1, 1.0\nv.splat v28, f1\n")
    assert _kind(grouped) == "sram_overflow"
    assert "1024-word vrf" in grouped.fault.message
    load = _run("v.cfgk s0, 2 * VLEN, m2\nld.v v31, [p0]\n")
    assert _kind(load) == "sram_overflow"
    assert _run("v.cfgk s0, 2 * VLEN, m2\nld.v v30, [p0]\n").fault is None


def test_contract_beyond_memory_is_our_error() -> None:
    small = get_platform("rvv", {"memory_bytes": 1 << 20})
    big = MemoryContract.pack(inputs={"x": (1024, 1024)}, outputs={"y": (1, 1)})
    with pytest.raises(ConfigError, match="beyond the rvv HBM"):
        simulate(assemble(small, "nop"), big, {"x": np.zeros((1024, 1024))})


def test_misaligned_addresses_and_strides_fault() -> None:
    address = _run("p.set p5, x + 2\nld.v v0, [p5]\n")
    assert _kind(address) == "misaligned" and "element size 4" in address.fault.message
    stride = _run("s.set s2, 6\nld.vs v0, [p0], s2\n")
    assert _kind(stride) == "misaligned"


def test_invalid_operands_fault() -> None:
    assert _kind(_run("v.cfg s5, s0, m1\n")) == "invalid_operand"
    assert _kind(_run("s.set s2, -8\nld.vs v0, [p0 + 1024], s2\n")) == "invalid_operand"
    overlap = _run("f.set f1, 1.0\nv.splat v0, f1\nst.vs [p1], s0, v0\n")
    assert _kind(overlap) == "invalid_operand"


# -- assembler ---------------------------------------------------------------------------------


def _error(platform: Platform, source: str) -> tuple[int, int, str, str, str]:
    with pytest.raises(AsmError) as caught:
        assemble(platform, source)
    errors = [d for d in caught.value.diagnostics if d.severity == "error"]
    assert len(errors) == 1, errors
    d = errors[0]
    return d.line, d.column, d.found, d.expected, d.message


def test_assembler_errors(rvv: Platform) -> None:
    _, column, found, expected, message = _error(rvv, "v.add v1, v2, v32")
    assert (column, found) == (15, "v32") and "v0..v31" in expected
    _, column, found, expected, _ = _error(rvv, "v.add v1, [p0], v2")
    assert (column, found) == (11, "[p0]") and expected.startswith("vector registers")
    _, column, found, expected, _ = _error(rvv, "ld.v v1, v2")
    assert (column, found) == (10, "v2") and "main-memory address" in expected
    _, _, found, _, message = _error(rvv, "ld.v v1, [p0 + 3]")
    assert found == "3" and "misaligned offset 3" in message
    _, _, found, expected, _ = _error(rvv, "v.cfgk s1, 8, m3")
    assert found == "m3" and expected == "one of m1, m2, m4, m8"
    _, _, found, _, message = _error(rvv, "v.cfgk s1, 0, m1")
    assert found == "0" and "out of range" in message
    _, _, found, _, message = _error(rvv, "v.addd v1, v2, v3")
    assert found == "v.addd" and "did you mean v.add" in message
    _, _, found, expected, _ = _error(rvv, "v.splat v1, s2")
    assert found == "s2" and "f0..f31" in expected
    _, _, found, _, _ = _error(rvv, "v.add v01, v2, v3")
    assert found == "v01"
    _, column, found, expected, _ = _error(rvv, "st.v [p1], v8, v9")
    assert found == "3 operand(s)" and expected == "2 operand(s): st.v [addr], vs"


def test_mnemonics_are_case_insensitive(rvv: Platform) -> None:
    program = assemble(rvv, "V.ADD V1, v2, V3 ; add\nLD.VS v8, [P0 + 8], S3\n")
    assert [d.instruction.mnemonic for d in program.instructions] == ["v.add", "ld.vs"]
    assert program.instructions[1].operands == ((0, 8 * 32), (0, 8), 3)


# -- cost model --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"vlen": 8, "lanes": 2, "line_bytes": 512, "mem_latency": 7},
        {"vlen": 128, "lanes": 32, "mem_bytes_per_cycle": 8, "branch_penalty": 0},
    ],
    ids=["defaults", "short-registers-long-lines", "long-registers-narrow-port"],
)
def test_microbenchmarks_match_their_formulas(overrides: dict[str, int]) -> None:
    platform = get_platform("rvv", overrides)
    for bench in platform.microbenchmarks:
        result = run_microbenchmark(platform, bench)
        assert result.measured == result.predicted, bench.name


def test_every_cost_formula_has_a_microbenchmark(rvv: Platform) -> None:
    """A formula of one cycle is hidden behind the front end's issue rate and needs none."""
    benched = {(rvv.isa[b.mnemonic].unit, rvv.isa[b.mnemonic].cost) for b in rvv.microbenchmarks}
    formulas = {(ins.unit, ins.cost) for ins in rvv.isa.instructions if ins.cost != "1"}
    # `j.go` always pays what a taken conditional branch pays, which the loop benchmark measures.
    formulas.discard(("scalar", "1 + branch_penalty"))
    assert formulas <= benched, sorted(formulas - benched)
    latencies = {ins.latency for ins in rvv.isa.instructions} - {"0"}
    assert latencies == {"mem_latency", "vec_latency"}  # both in the load-use chain


def _memory_cycles(source: str) -> int:
    result = _run(source, inputs={"x": np.zeros((256, 64), np.float32)})
    assert result.fault is None, result.fault
    return result.profile.busy["memory"]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(vl=st.integers(1, 255), stride=st.integers(1, 40))
def test_more_bytes_cost_more_memory_cycles(vl: int, stride: int) -> None:
    def unit(n: int) -> int:
        return _memory_cycles(f"v.cfgk s0, {n}, m8\nld.v v0, [p0]\n")

    def strided(n: int, step: int) -> int:
        return _memory_cycles(f"v.cfgk s0, {n}, m8\ns.set s2, {4 * step}\nld.vs v0, [p0], s2\n")

    assert unit(vl + 16) > unit(vl)  # 64 more bytes: at least one more line
    assert unit(vl + 1) >= unit(vl)
    assert strided(vl + 1, 16) > strided(vl, 16)  # a line per element
    assert strided(vl, stride) >= unit(vl)


def _elementwise_cycles(n: int, lmul: str) -> SimResult:
    source = f"""
        s.set  s4, {n}
        f.set  f1, 2.0
    strip:
        v.cfg  s5, s4, {lmul}
        ld.v   v0, [p0]
        v.mulf v8, v0, f1
        st.v   [p1], v8
        s.shlk s6, s5, 2
        p.add  p0, p0, s6
        p.add  p1, p1, s6
        s.sub  s4, s4, s5
        j.ne   s4, s0, strip
    """
    result = _run(source, outputs={"y": (64, 64)})
    assert result.fault is None, result.fault
    return result


def test_strip_mining_a_longer_vector_costs_more() -> None:
    for lmul in ("m1", "m8"):
        results = [_elementwise_cycles(n, lmul) for n in (64, 256, 1024, 4096)]
        cycles = [r.profile.cycles for r in results]
        assert cycles == sorted(cycles) and len(set(cycles)) == 4, cycles
        vector = [r.profile.busy["vector"] for r in results]
        assert vector == sorted(vector) and len(set(vector)) == 4, vector
    # Longer strips run fewer loop iterations: less front-end work for the same elements.
    assert (
        _elementwise_cycles(4096, "m8").profile.instructions
        < _elementwise_cycles(4096, "m1").profile.instructions
    )


def _scale_kernel(pipelined: bool) -> str:
    """y = 2 * x row by row (64 rows of 64): load, multiply, store; pipelined or not.

    Serialized, each row's load waits for the previous store, which waits for the multiply,
    which waits for the load's latency. Pipelined, two rows at a time, the next two rows are
    loaded into the registers just read before this pair is stored, so the load latency
    overlaps the work (the last iteration loads two rows past the 64 it computes).
    """
    if not pipelined:
        return """
            v.cfgk s0, 64, m2
            f.set  f1, 2.0
            s.set  s4, 64
        row:
            ld.v   v0, [p0]
            v.mulf v8, v0, f1
            st.v   [p1], v8
            p.addk p0, p0, 256
            p.addk p1, p1, 256
            s.addk s4, s4, -1
            j.ne   s4, s0, row
        """
    return """
            v.cfgk s0, 64, m2
            f.set  f1, 2.0
            s.set  s4, 32
            ld.v   v0, [p0]
            ld.v   v2, [p0 + 256]
        pair:
            v.mulf v8, v0, f1
            v.mulf v10, v2, f1
            ld.v   v0, [p0 + 512]
            ld.v   v2, [p0 + 768]
            st.v   [p1], v8
            st.v   [p1 + 256], v10
            p.addk p0, p0, 512
            p.addk p1, p1, 512
            s.addk s4, s4, -1
            j.ne   s4, s0, pair
        """


def test_software_pipelining_beats_the_serialized_loop() -> None:
    x = np.random.default_rng(0).standard_normal((66, 64)).astype(np.float32)
    results = {p: _run(_scale_kernel(p), inputs={"x": x}) for p in (False, True)}
    for result in results.values():
        assert result.fault is None, result.fault
        np.testing.assert_array_equal(result.outputs["y"], x[:64] * np.float32(2))
    serial, pipelined = results[False].profile, results[True].profile
    assert pipelined.cycles < 0.6 * serial.cycles, (pipelined.cycles, serial.cycles)
    assert pipelined.busy["vector"] == serial.busy["vector"]
    assert pipelined.stalls["memory_dependency"] < serial.stalls["memory_dependency"]


def test_units_overlap_and_dependencies_wait() -> None:
    setup = "v.cfgk s0, 64, m2\nf.set f1, 1.0\nv.splat v16, f1\n"
    independent = _run(setup + "ld.v v0, [p0]\n" + "v.exp v16, v16\n" * 4)
    dependent = _run(setup + "ld.v v0, [p0]\n" + "v.exp v0, v0\n" * 4)
    assert independent.profile.stalls["memory_dependency"] == 0
    assert dependent.profile.stalls["memory_dependency"] > 0
    busy = independent.profile.busy
    assert independent.profile.cycles < busy["memory"] + busy["vector"] + busy["scalar"]


def test_scalar_reading_a_reduction_waits() -> None:
    source = "f.set f0, 1.0\nv.splat v1, f0\nv.rsum f1, v1\nf.add f2, f1, f1\n"
    assert _run(source).profile.stalls["register_dependency"] > 0
    assert _run(source.replace("f1, f1", "f3, f3")).profile.stalls["register_dependency"] == 0


def test_roofline(rvv: Platform) -> None:
    lanes = rvv.param_values()["lanes"]
    assert rvv.roofline_cycles(2 * lanes * 100, 0) == 100
    assert rvv.roofline_cycles(0, 32 * 50) == 50


# -- platform and manual -----------------------------------------------------------------------


def test_parameters_are_validated() -> None:
    assert get_platform("rvv", {"vlen": 16}).space("vrf").words == 32 * 16
    with pytest.raises(ConfigError, match="power of two"):
        get_platform("rvv", {"vlen": 24})
    with pytest.raises(ConfigError, match="at most vlen"):
        get_platform("rvv", {"vlen": 8, "lanes": 16})
    with pytest.raises(ConfigError, match="unknown rvv parameter"):
        get_platform("rvv", {"mlen": 16})


def test_manual_documents_every_instruction(rvv: Platform) -> None:
    text = manual(rvv)
    for ins in rvv.isa.instructions:
        entry = re.search(rf"^### {re.escape(ins.mnemonic)} .*?(?=^### |^## )", text, re.M | re.S)
        assert entry, ins.mnemonic
        for part in ("Format: `", "Operation:", "Unit: ", "Cost: ", "Example:"):
            assert part in entry.group(0), (ins.mnemonic, part)
    for title in ("Vector length, grouping and strip-mining", "Memory model", "Timing model"):
        assert f"## {title}" in text
    assert "`v.add vd, va, vb`" in text  # vector registers print without brackets
    for npu_term in ("dwait", "accumulator", "dma_race", "SRAM"):
        assert npu_term not in text, npu_term
    assert "vrf" not in grep_manual(rvv, "^### v.add ")
    assert grep_manual(rvv, "strip-mined").count("[") >= 1


def test_examples_assemble_and_round_trip(rvv: Platform) -> None:
    from gauntlet.accel import disassemble

    for ins in rvv.isa.instructions:
        program = assemble(rvv, ins.example, {"x": 0x10000, "y": 0x20000})
        again = assemble(rvv, disassemble(program))
        assert [d.operands for d in again.instructions] == [
            d.operands for d in program.instructions
        ], ins.mnemonic
