"""Faults as data, the calling convention, outputs and the profile of `simulate`."""

from __future__ import annotations

import numpy as np
import pytest

from gauntlet.accel import MemoryContract, Platform, assemble, get_platform, simulate
from gauntlet.errors import ConfigError

from .conftest import Runner

#: rows=1, cols=32, hstride=256 B (a row of x), sstride=32 in r2..r5.
SHAPE = "li r2, 1\nli r3, 32\nli r4, 256\nli r5, 32\n"


def _fault(result: object) -> tuple[str, int, int]:
    fault = result.fault  # type: ignore[attr-defined]
    assert fault is not None, "expected a fault"
    return fault.kind, fault.pc, fault.line


def test_reading_unwritten_sram_faults(run_npu: Runner) -> None:
    result = run_npu("nop\nvadd [r1], [r2], [r3]\n")
    assert _fault(result) == ("uninitialized_read", 1, 2)
    assert "vsram[0, 32)" in result.fault.message
    assert result.fault.instruction == "vadd [r1], [r2], [r3]"
    assert "uninitialized_read at line 2 (vadd [r1], [r2], [r3])" in result.fault.describe()


def test_reading_an_accumulator_before_writing_it_faults(run_npu: Runner) -> None:
    result = run_npu("li r1, 2048\nmst [r1], acc2\n")
    assert _fault(result)[0] == "uninitialized_read"
    assert "acc2" in result.fault.message


def test_reading_unwritten_hbm_faults(run_npu: Runner) -> None:
    result = run_npu(SHAPE + "dldv [r0], [a2], r2, r3, r4, r5, 0\n", scratch={"tmp": (4, 64)})
    assert _fault(result) == ("uninitialized_read", 4, 5)
    assert "'tmp'" in result.fault.message


def test_out_of_bounds_dma_faults(run_npu: Runner) -> None:
    past_end = run_npu(
        "li r2, 2\nli r3, 32\nli r4, 256\nli r5, 32\n"
        "dldv [r0], [a0 + 63 * 256], r2, r3, r4, r5, 0\n"
    )
    assert _fault(past_end)[0] == "out_of_bounds"
    assert "of 'x'" in past_end.fault.message
    nowhere = run_npu(SHAPE + "la a7, 16\ndldv [r0], [a7], r2, r3, r4, r5, 0\n")
    assert _fault(nowhere)[0] == "out_of_bounds"
    assert "in no region" in nowhere.fault.message


def test_endless_loop_hits_the_step_limit(run_npu: Runner) -> None:
    result = run_npu("top:\naddi r1, r1, 1\nb top\n", step_limit=1000)
    assert _fault(result)[0] == "step_limit"
    assert result.profile.instructions == 1000


def test_writing_outside_outputs_faults(run_npu: Runner) -> None:
    source = "fli f1, 1.0\nvbcast [r0], f1\n" + SHAPE + "dstv [a0], [r0], r2, r3, r4, r5, 0\n"
    result = run_npu(source)
    assert _fault(result)[0] == "protection"
    assert "input region 'x'" in result.fault.message
    assert run_npu(source.replace("[a0]", "[a1]")).fault is None


def test_sram_capacity_is_enforced(run_npu: Runner) -> None:
    vector = run_npu("li r1, VSRAM_WORDS\nfli f1, 1.0\nvbcast [r1], f1\n")
    assert _fault(vector)[0] == "sram_overflow"
    dma = run_npu(
        "li r1, VSRAM_WORDS - 32\nli r2, 2\nli r3, 32\nli r4, 256\nli r5, 32\n"
        "dldv [r1], [a0], r2, r3, r4, r5, 0\n"
    )
    assert _fault(dma)[0] == "sram_overflow"
    assert "65536-word vsram" in dma.fault.message


def test_misaligned_runtime_addresses_fault(run_npu: Runner) -> None:
    sram = run_npu("li r1, 3\nfli f1, 1.0\nvbcast [r1], f1\n")
    assert _fault(sram)[0] == "misaligned"
    hbm = run_npu(SHAPE + "la a5, x + 2\ndldv [r0], [a5], r2, r3, r4, r5, 0\n")
    assert _fault(hbm)[0] == "misaligned"
    assert "element size 4" in hbm.fault.message
    stride = run_npu(SHAPE + "li r5, 40\ndldv [r0], [a0], r2, r3, r4, r5, 0\n")
    assert _fault(stride)[0] == "misaligned"


def test_missing_dma_wait_is_a_race(run_npu: Runner) -> None:
    load = SHAPE + "dldv [r0], [a0], r2, r3, r4, r5, 4\n"
    read = run_npu(load + "vadd [r0], [r0], [r0]\n")
    assert _fault(read)[0] == "dma_race"
    assert "dwait 4" in read.fault.message
    assert run_npu(load + "dwait 4\nvadd [r0], [r0], [r0]\n").fault is None
    overwrite = run_npu(
        "fli f1, 1.0\nvbcast [r0], f1\n" + SHAPE + "dstv [a1], [r0], r2, r3, r4, r5, 1\n"
        "vbcast [r0], f1\n"
    )
    assert _fault(overwrite)[0] == "dma_race"
    reload = run_npu(
        "fli f1, 1.0\nvbcast [r0], f1\n" + SHAPE + "dstv [a1], [r0], r2, r3, r4, r5, 1\n"
        "li r6, 64\ndldv [r6], [a1], r2, r3, r4, r5, 2\n"
    )
    assert _fault(reload)[0] == "dma_race"
    assert "store" in reload.fault.message


def test_outstanding_transfers_are_bounded(run_npu: Runner) -> None:
    two = get_platform("npu", {"dma_outstanding": 2})
    loads = SHAPE + "".join(
        f"li r{6 + k}, {32 * k}\ndldv [r{6 + k}], [a0], r2, r3, r4, r5, {k}\n" for k in range(3)
    )
    oldest = run_npu(loads + "vadd [r6], [r6], [r6]\n", platform=two)
    assert oldest.fault is None  # the third load had to wait for the first and retired it
    assert oldest.profile.stalls["dma_wait"] > 0
    newest = run_npu(loads + "vadd [r8], [r8], [r8]\n", platform=two)
    assert _fault(newest)[0] == "dma_race"


def test_invalid_operands_fault(run_npu: Runner) -> None:
    rows = run_npu("li r3, 32\nli r4, 256\nli r5, 32\ndldv [r0], [a0], r2, r3, r4, r5, 0\n")
    assert _fault(rows)[0] == "invalid_operand"
    wide = run_npu("li r2, 1\nli r3, 64\nli r4, 256\nli r5, 32\ndldv [r0], [a0], r2, r3, r4, r5, 0")
    assert _fault(wide)[0] == "invalid_operand"
    assert "longer than its SRAM row stride" in wide.fault.message


def test_calling_convention(npu: Platform) -> None:
    contract = MemoryContract.pack(
        inputs={"x": (4, 64), "w": (8, 8)}, outputs={"y": (2, 2)}, scratch={"s": (3,)}
    )
    source = "li r0, 5\naddi r1, r0, 1\nli r2, VLEN\n"
    program = assemble(npu, source, contract.symbols())
    from gauntlet.accel.machine import Machine
    from gauntlet.accel.simulator import run

    m = Machine(npu, contract, {"x": np.zeros((4, 64)), "w": np.zeros((8, 8))})
    assert run(m, program).fault is None
    assert m.regs["a"][:4] == [r.base for r in contract.regions]
    assert m.regs["r"][0] == 0 and m.regs["r"][1] == 1 and m.regs["r"][2] == 32
    assert m.vl == 32


def test_outputs_poisoned_until_written(run_npu: Runner) -> None:
    result = run_npu(
        "fli f1, 2.5\nvbcast [r0], f1\n" + SHAPE + "dstv [a1], [r0], r2, r3, r4, r5, 0"
    )
    y = result.outputs["y"]
    assert (y[0, :32] == 2.5).all()
    assert np.isnan(y[0, 32:]).all() and np.isnan(y[1:]).all()
    assert result.unwritten == {"y": 64 * 64 - 32}


def test_profile_counts(run_npu: Runner) -> None:
    source = SHAPE + "dldv [r0], [a0], r2, r3, r4, r5, 0\ndwait 0\nvadd [r0], [r0], [r0]\n"
    profile = run_npu(source).profile
    assert profile.instructions == 7
    assert profile.instructions_by_unit == {"scalar": 5, "dma": 1, "matrix": 0, "vector": 1}
    assert profile.dma_bytes_read == 128 and profile.dma_bytes == 128
    assert profile.busy["vector"] == 2 and profile.busy["scalar"] == 5
    assert profile.stalls["dma_wait"] > 0
    assert profile.time_us == pytest.approx(profile.cycles / 1000)
    assert 0 < profile.utilization()["dma"] < 1


def test_bad_inputs_are_our_error_not_a_fault(npu: Platform) -> None:
    contract = MemoryContract.pack(inputs={"x": (4, 4)}, outputs={"y": (4, 4)})
    program = assemble(npu, "nop")
    with pytest.raises(ConfigError, match="missing \\['x'\\]"):
        simulate(program, contract, {})
    with pytest.raises(ConfigError, match="shape \\(2, 2\\)"):
        simulate(program, contract, {"x": np.zeros((2, 2))})
    small = get_platform("npu", {"hbm_bytes": 1 << 20})
    big = MemoryContract.pack(inputs={"x": (1024, 1024)}, outputs={"y": (1, 1)})
    with pytest.raises(ConfigError, match="beyond the npu HBM"):
        simulate(assemble(small, "nop"), big, {"x": np.zeros((1024, 1024))})


def test_inputs_are_converted_to_the_region_type(run_npu: Runner) -> None:
    x = np.full((64, 64), 1 + 2**-10)  # float64, not representable in bf16
    source = SHAPE.replace("256", "128") + "dldv [r0], [a0], r2, r3, r4, r5, 0\ndwait 0\n"
    source += "dstv [a1], [r0], r2, r3, r4, r5, 0\n"
    result = run_npu(source, inputs={"x": x}, dtype="bfloat16")
    assert float(result.outputs["y"][0, 0]) == 1.0
