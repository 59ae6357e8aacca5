"""The npu's control and memory instructions (those with binders), and its arithmetic.

`test_isa.py` checks every data instruction against the table's semantics; the instructions
that act on the machine itself (branches, loops, DMA, waits, the vector length) are checked here
against plain Python and NumPy models, and `BINDER_TESTS` names the test of each of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gauntlet.accel import MemoryContract, Platform, assemble, simulate
from gauntlet.accel.machine import Machine
from gauntlet.accel.platforms.npu_manual import EXAMPLE_SOURCE, EXAMPLE_SYMBOLS
from gauntlet.accel.simulator import run

from .conftest import Runner

FAST = settings(max_examples=25, deadline=None, derandomize=True)


def _run_on(platform: Platform, source: str) -> tuple[Machine, object]:
    m = Machine(platform)
    return m, run(m, assemble(platform, source))


# -- vector length -----------------------------------------------------------------------------


@FAST
@given(value=st.integers(-3, 100))
def test_setvl(npu: Platform, value: int) -> None:
    m, result = _run_on(npu, f"li r4, {value}\nsetvl r4\n")
    if value < 1:
        assert result.fault is not None and result.fault.kind == "invalid_operand"
    else:
        assert result.fault is None
        assert m.vl == min(value, npu.param_values()["vlen"])


def test_setvli(npu: Platform, run_npu: Runner) -> None:
    m, result = _run_on(npu, "setvli 5\nfli f1, 3.0\nvbcast [r0], f1\n")
    assert m.vl == 5
    written = m.sram["vsram"].written
    assert written[:5] == b"\x01" * 5 and written[5] == 0


# -- control -----------------------------------------------------------------------------------

_CONDITIONS: dict[str, Callable[[int, int], bool]] = {
    "b": lambda a, b: True,
    "beq": lambda a, b: a == b,
    "bne": lambda a, b: a != b,
    "blt": lambda a, b: a < b,
    "bge": lambda a, b: a >= b,
}


@FAST
@given(
    mnemonic=st.sampled_from(sorted(_CONDITIONS)),
    a=st.integers(-(2**31), 2**31 - 1) | st.integers(-3, 3),
    b=st.integers(-3, 3),
)
def test_branches(npu: Platform, mnemonic: str, a: int, b: int) -> None:
    operands = "taken" if mnemonic == "b" else "r1, r2, taken"
    source = f"li r1, {a}\nli r2, {b}\n{mnemonic} {operands}\nli r3, 1\nhalt\ntaken:\nli r3, 2\n"
    m, result = _run_on(npu, source)
    taken = _CONDITIONS[mnemonic](a, b)
    assert m.regs["r"][3] == (2 if taken else 1)
    penalty = npu.param_values()["branch_penalty"]
    assert result.profile.stalls["branch"] == (penalty if taken else 0)


@FAST
@given(outer=st.integers(-1, 5), inner=st.integers(0, 5))
def test_hardware_loops(npu: Platform, outer: int, inner: int) -> None:
    source = f"""
        li r5, {outer}
        loop r5
            loopi {inner}
                addi r1, r1, 1
            endloop
            addi r2, r2, 1
        endloop
        addi r3, r3, 1
    """
    m, result = _run_on(npu, source)
    assert result.fault is None
    assert (m.regs["r"][1], m.regs["r"][2], m.regs["r"][3]) == (
        max(outer, 0) * inner,
        max(outer, 0),
        1,
    )
    assert result.profile.stalls["branch"] == 0  # loop-backs are free


def test_halt_stops_and_counts(npu: Platform) -> None:
    m, result = _run_on(npu, "li r1, 1\nhalt\nli r1, 2\n")
    assert m.regs["r"][1] == 1
    assert result.profile.instructions == 2
    _, fell_off = _run_on(npu, "li r1, 1\n")
    assert fell_off.profile.instructions == 1


# -- DMA ---------------------------------------------------------------------------------------


def _x(rows: int, cols: int) -> np.ndarray:
    return (np.arange(rows * cols, dtype=np.float32) * 0.37 - 11).reshape(rows, cols)


@FAST
@given(
    space=st.sampled_from(["dldv", "dldm"]),
    dtype=st.sampled_from(["float32", "bfloat16"]),
    rows=st.integers(1, 6),
    cols=st.integers(1, 40),
    gap=st.integers(-40, 20),
    row0=st.integers(0, 3),
    col0=st.integers(0, 20),
    pad=st.integers(0, 2),
)
def test_dma_loads(
    npu: Platform,
    space: str,
    dtype: str,
    rows: int,
    cols: int,
    gap: int,
    row0: int,
    col0: int,
    pad: int,
) -> None:
    x = _x(16, 64)
    contract = MemoryContract.pack(inputs={"x": (16, 64)}, outputs={"y": (1, 1)}, dtype=dtype)
    stored = x.astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else x
    itemsize = 2 if dtype == "bfloat16" else 4
    align = 32
    hstride = max(cols + gap, 0)  # overlapping and repeated rows are allowed in loads
    sstride = (-(-cols // align) + pad) * align
    start = row0 * 64 + col0
    last = start + (rows - 1) * hstride + cols
    source = f"""
        li r2, {rows}
        li r3, {cols}
        li r4, {hstride * itemsize}
        li r5, {sstride}
        li r1, 64
        {space} [r1], [a0 + {start * itemsize}], r2, r3, r4, r5, 3
        dwait 3
    """
    program = assemble(npu, source, contract.symbols())
    m = Machine(npu, contract, {"x": x})
    result = run(m, program)
    if last > x.size:
        assert result.fault is not None and result.fault.kind == "out_of_bounds"
        return
    assert result.fault is None, result.fault
    flat = stored.reshape(-1).astype(np.float32)
    expected = np.zeros((rows, sstride), np.float32)
    for i in range(rows):
        expected[i, :cols] = flat[start + i * hstride : start + i * hstride + cols]
    sram = m.sram["vsram" if space == "dldv" else "msram"]
    np.testing.assert_array_equal(
        sram.data[64 : 64 + rows * sstride].reshape(rows, sstride), expected
    )
    assert sram.written[64 : 64 + rows * sstride] == b"\x01" * (rows * sstride)
    assert result.profile.dma_bytes_read == rows * cols * itemsize


@FAST
@given(
    dtype=st.sampled_from(["float32", "bfloat16"]),
    rows=st.integers(1, 6),
    cols=st.integers(1, 40),
    gap=st.integers(0, 20),
    start=st.integers(0, 64),
)
def test_dma_store(npu: Platform, dtype: str, rows: int, cols: int, gap: int, start: int) -> None:
    contract = MemoryContract.pack(inputs={"x": (1, 1)}, outputs={"y": (16, 64)}, dtype=dtype)
    itemsize = 2 if dtype == "bfloat16" else 4
    hstride = cols + gap
    sstride = 64
    values = (np.arange(rows * sstride, dtype=np.float32) * 1.001 + 0.3).reshape(rows, sstride)
    source = f"""
        li r2, {rows}
        li r3, {cols}
        li r4, {hstride * itemsize}
        li r5, {sstride}
        dstv [a1 + {start * itemsize}], [r0], r2, r3, r4, r5, 0
        dfence
    """
    program = assemble(npu, source, contract.symbols())
    m = Machine(npu, contract, {"x": np.zeros((1, 1), np.float32)})
    m.write_sram("vsram", 0, values[:, :].reshape(-1)[: (rows - 1) * sstride + cols])
    result = run(m, program)
    last = start + (rows - 1) * hstride + cols
    if last > 16 * 64:
        assert result.fault is not None and result.fault.kind == "out_of_bounds"
        return
    assert result.fault is None, result.fault
    y = result.outputs["y"].reshape(-1)
    written = np.zeros(16 * 64, bool)
    for i in range(rows):
        lo = start + i * hstride
        expected = values[i, :cols].astype(y.dtype)
        np.testing.assert_array_equal(y[lo : lo + cols], expected)
        written[lo : lo + cols] = True
    assert np.isnan(y[~written].astype(np.float32)).all()
    assert result.unwritten["y"] == 16 * 64 - written.sum()


def test_dcpy_moves_vsram_words_to_msram(npu: Platform) -> None:
    m = Machine(npu)
    m.write_sram("vsram", 32, np.arange(100, dtype=np.float32))
    result = run(
        m, assemble(npu, "li r1, 32\nli r2, 64\nli r3, 100\ndcpy [r2], [r1], r3, 5\ndwait 5")
    )
    assert result.fault is None
    np.testing.assert_array_equal(m.sram["msram"].data[64:164], np.arange(100, dtype=np.float32))


def test_dwait_retires_only_its_tag(run_npu: Runner) -> None:
    load = "li r2, 1\nli r3, 32\nli r4, 256\nli r5, 32\nli r6, 32\n"
    load += "dldv [r0], [a0], r2, r3, r4, r5, 0\ndldv [r6], [a0], r2, r3, r4, r5, 1\ndwait 0\n"
    assert run_npu(load + "vadd [r0], [r0], [r0]\n").fault is None
    raced = run_npu(load + "vadd [r6], [r6], [r6]\n").fault
    assert raced is not None and raced.kind == "dma_race" and "dwait 1" in raced.message


def test_dfence_retires_every_tag(npu: Platform, run_npu: Runner) -> None:
    load = "li r2, 1\nli r3, 32\nli r4, 256\nli r5, 32\nli r6, 32\n"
    load += "dldv [r0], [a0], r2, r3, r4, r5, 0\ndldv [r6], [a0], r2, r3, r4, r5, 1\ndfence\n"
    result = run_npu(load + "vadd [r6], [r6], [r0]\n")
    assert result.fault is None
    # The front end waited for the second transfer to land, latency included.
    assert result.profile.stalls["dma_wait"] >= npu.param_values()["hbm_latency"]


BINDER_TESTS = {
    "setvl": test_setvl,
    "setvli": test_setvli,
    "b": test_branches,
    "beq": test_branches,
    "bne": test_branches,
    "blt": test_branches,
    "bge": test_branches,
    "loop": test_hardware_loops,
    "loopi": test_hardware_loops,
    "endloop": test_hardware_loops,
    "halt": test_halt_stops_and_counts,
    "dldv": test_dma_loads,
    "dldm": test_dma_loads,
    "dstv": test_dma_store,
    "dcpy": test_dcpy_moves_vsram_words_to_msram,
    "dwait": test_dwait_retires_only_its_tag,
    "dfence": test_dfence_retires_every_tag,
}


# -- arithmetic, against independent NumPy references ------------------------------------------


def _vector_op(npu: Platform, line: str, a: np.ndarray, b: np.ndarray | None = None) -> Machine:
    m = Machine(npu)
    m.write_sram("vsram", 0, a)
    if b is not None:
        m.write_sram("vsram", 32, b)
    result = run(m, assemble(npu, "li r2, 32\nli r3, 64\n" + line))
    assert result.fault is None, result.fault
    return m


@pytest.mark.parametrize(
    ("line", "reference"),
    [
        ("vexp [r3], [r0]", lambda a: np.exp(a.astype(np.float64))),
        ("vrsqrt [r3], [r0]", lambda a: 1 / np.sqrt(a.astype(np.float64))),
        ("vrecip [r3], [r0]", lambda a: 1 / a.astype(np.float64)),
    ],
)
def test_special_functions_round_once(npu: Platform, line: str, reference: Callable) -> None:
    a = np.random.default_rng(1).uniform(0.01, 20, 32).astype(np.float32)
    m = _vector_op(npu, line, a)
    np.testing.assert_array_equal(m.sram["vsram"].data[64:96], reference(a).astype(np.float32))


def test_reductions_are_exactly_rounded(npu: Platform) -> None:
    a = np.array([1e8, 1.0, -1e8, 3.0] * 8, dtype=np.float32)
    m = _vector_op(npu, "vredsum f1, [r0]\nvredmax f2, [r0]", a)
    assert m.regs["f"][1] == math.fsum(a.tolist()) == 32.0  # a naive fp32 sum would lose it
    assert m.regs["f"][2] == 1e8


def test_fma_rounds_once(npu: Platform) -> None:
    a = np.full(32, 1 + 2**-12, np.float32)
    d = np.full(32, -(1 + 2**-11), np.float32)
    m = Machine(npu)
    m.write_sram("vsram", 0, a)
    m.write_sram("vsram", 64, d)
    run(m, assemble(npu, "li r3, 64\nvfma [r3], [r0], [r0]"))
    exact = (1 + 2**-12) ** 2 - (1 + 2**-11)  # 2**-24, lost if a*a were rounded first
    assert (m.sram["vsram"].data[64:96] == np.float32(exact)).all()


def test_bf16_rounding_is_to_nearest_even(npu: Platform) -> None:
    a = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9, -(1 + 2**-8)] * 8, np.float32)
    m = _vector_op(npu, "vbf16 [r3], [r0]", a)
    expected = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(m.sram["vsram"].data[64:96], expected)
    assert expected[0] == 1.0 and expected[1] == 1 + 4 * 2**-8


def test_matrix_products_match_float64(npu: Platform) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    m = Machine(npu)
    m.write_sram("vsram", 0, a)
    m.write_sram("msram", 0, b)
    m.write_sram("vsram", 2048, a[0])
    source = """
        mzero acc0
        mm acc0, [r0], [r0]
        mzero acc1
        mmt acc1, [r0], [r0]
        li r1, 1024
        mst [r1], acc0
        li r2, 2048
        li r3, 2080
        fli f0, 0.0
        vbcast [r3], f0
        mv [r3], [r2], [r0]
    """
    result = run(m, assemble(npu, source))
    assert result.fault is None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(m.regs["acc"][0], (a64 @ b64).astype(np.float32))
    np.testing.assert_array_equal(m.regs["acc"][1], (a64 @ b64.T).astype(np.float32))
    np.testing.assert_array_equal(m.sram["vsram"].data[1024:2048].reshape(32, 32), m.regs["acc"][0])
    np.testing.assert_array_equal(
        m.sram["vsram"].data[2080:2112], (a64[0] @ b64).astype(np.float32)
    )


def test_example_kernel(run_npu: Runner) -> None:
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    result = run_npu(EXAMPLE_SOURCE, inputs={"x": x}, symbols=EXAMPLE_SYMBOLS)
    assert result.fault is None
    np.testing.assert_array_equal(result.outputs["y"], x * np.float32(2) + np.float32(1))
    assert result.unwritten == {"y": 0}


def test_bf16_kernel_rounds_on_store(run_npu: Runner) -> None:
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    result = run_npu(
        EXAMPLE_SOURCE.replace("COLS * 4", "COLS * 2"),
        inputs={"x": x},
        symbols=EXAMPLE_SYMBOLS,
        dtype="bfloat16",
    )
    assert result.fault is None
    expected = (x.astype(np.float32) * 2 + 1).astype(ml_dtypes.bfloat16)
    assert result.outputs["y"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(result.outputs["y"], expected)
    assert result.profile.dma_bytes == 2 * 64 * 64 * 2


def test_simulate_matches_run(npu: Platform) -> None:
    contract = MemoryContract.pack(inputs={"x": (64, 64)}, outputs={"y": (64, 64)})
    program = assemble(npu, EXAMPLE_SOURCE, {**contract.symbols(), **EXAMPLE_SYMBOLS})
    x = np.ones((64, 64), np.float32)
    assert (
        simulate(program, contract, {"x": x}).profile
        == simulate(program, contract, {"x": x}).profile
    )
