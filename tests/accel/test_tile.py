"""The tile array: its control, memory and stream instructions, semaphores, faults and costs.

Data instructions are checked against their semantics in `test_isa.py`; this file runs whole
programs on the array, and `BINDER_TESTS` names the test of each control, memory and stream
instruction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pytest

from gauntlet.accel import MemoryContract, Platform, SimResult, assemble, get_platform, simulate
from gauntlet.accel.array import Calendar

Run = Callable[..., SimResult]


@pytest.fixture(scope="module")
def tile() -> Platform:
    return get_platform("tile")


@pytest.fixture(scope="module")
def run(tile: Platform) -> Run:
    """Assemble and simulate on the array: x (64, 64) fp32 in, y (64, 64) out."""

    def go(
        source: str,
        *,
        platform: Platform | None = None,
        x: np.ndarray | None = None,
        symbols: Mapping[str, int] | None = None,
        dtype: str = "float32",
    ) -> SimResult:
        given = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) if x is None else x
        contract = MemoryContract.pack(
            inputs={"x": given.shape},
            outputs={"y": given.shape},
            dtype=dtype,
        )
        target = platform or tile
        program = assemble(target, source, {**contract.symbols(), **(symbols or {})})
        return simulate(program, contract, {"x": given}, step_limit=200_000)

    return go


#: Tile t copies row t of x to row t of y through its local memory (16 tiles, 16 rows).
ROW_COPY = """
    li r4, 1
    li r5, 64
    li r6, 256
    li r7, 64
    muli r10, r3, 256
    adda a2, a0, r10
    adda a3, a1, r10
    dld [r0], [a2], r4, r5, r6, r7, 0
    dwait 0
    dst [a3], [r0], r4, r5, r6, r7, 1
    dwait 1
"""


def test_every_tile_runs_the_program_with_its_place(run: Run) -> None:
    result = run(ROW_COPY)
    assert result.fault is None, result.fault
    expected = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    np.testing.assert_array_equal(result.outputs["y"][:16], expected[:16])
    assert result.unwritten["y"] == 48 * 64
    assert result.profile.instructions == 16 * 11
    assert result.profile.instructions_by_unit["dma"] == 32


def test_dma_loads_and_stores_with_tags(run: Run) -> None:
    """dld, dst and dwait: a strided block round trip, and a missing wait is a race."""
    source = """
    bne r3, r0, done
    li r4, 4
    li r5, 8
    li r6, 256
    li r7, 10
    dld [r0], [a0 + 8], r4, r5, r6, r7, 0
    dwait 0
    vadd [r0], [r0], [r0]
    dst [a1], [r0], r4, r5, r6, r7, 1
    dwait 1
done:
    """
    result = run(source)
    assert result.fault is None, result.fault
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    # VL = VLEN = 32 words of the 4 x 10 block doubled: rows 0-2 (cols < 8) and row 3's first 2.
    block = np.zeros((4, 10), dtype=np.float32)
    block[:, :8] = x[:4, 2:10]
    flat = block.reshape(-1)
    flat[:32] *= 2
    np.testing.assert_array_equal(result.outputs["y"][:4, :8], flat.reshape(4, 10)[:, :8])
    racy = run(source.replace("    dwait 0\n", ""))
    assert racy.fault is not None and racy.fault.kind == "dma_race"
    assert racy.fault.message.startswith("tile 0 (0, 0):")


def test_calendar_finds_the_first_free_slot() -> None:
    calendar = Calendar()
    calendar.reserve(10, 5)
    calendar.reserve(20, 5)
    assert calendar.earliest(0, 10) == 0
    assert calendar.earliest(0, 11) == 25
    assert calendar.earliest(12, 3) == 15
    assert calendar.earliest(15, 6) == 25
    calendar.reserve(15, 5)  # fills the gap: one interval [10, 25)
    assert (calendar.starts, calendar.ends) == ([10], [25])


def test_tiles_of_one_column_contend_for_its_shim(tile: Platform, run: Run) -> None:
    """Four loads at once: in one column they queue on its shim; over four they overlap."""
    load = """
    li r4, 16
    li r5, 32
    li r6, 256
    li r7, 32
    li r9, {cond}
    bne r11, r9, done
    dld [r0], [a0], r4, r5, r6, r7, 0
    dwait 0
done:
    """
    column = run("    mov r11, r2\n" + load.format(cond=0))  # the four tiles of column 0
    row = run("    mov r11, r1\n" + load.format(cond=0))  # the four tiles of row 0
    assert column.fault is None and row.fault is None
    params = tile.param_values()
    one = int(params["dma_setup"]) + 16 * 128 // int(params["shim_bytes_per_cycle"])
    external = 16 * 128 // int(params["ext_bytes_per_cycle"])
    assert column.profile.cycles >= 4 * one
    # Over four shims only the external memory's bandwidth spaces the four loads.
    landed = int(params["ext_latency"]) + int(params["hop_latency"])
    assert row.profile.cycles <= 3 * external + one + landed + 20 < column.profile.cycles
    assert column.profile.stalls["link_contention"] > row.profile.stalls["link_contention"]


SEND = """
    li r4, 32
    li r9, 1
    beq r3, r0, sender
    beq r3, r9, receiver
    halt
sender:
    vbcast [r0], f0
    fli f1, 3.0
    vadds [r0], [r0], f1
    send [r0], r4, r9, [r0 + 100], 2, 0
    {after_send}
    halt
receiver:
    {receive}
    li r5, 1
    li r6, 0
    li r7, 32
    dst [a1], [r0 + 100], r5, r7, r6, r7, 1
    dwait 1
"""


def test_send_wait_deliver_words_in_order(run: Run) -> None:
    """send and wait: the receiver stores what the sender computed, after its arrival."""
    result = run(SEND.format(after_send="dwait 0", receive="wait 2, 1"))
    assert result.fault is None, result.fault
    np.testing.assert_array_equal(result.outputs["y"][0, :32], np.full(32, 3.0))
    assert result.profile.stalls["semaphore_wait"] > 0


def test_reading_a_send_before_waiting_is_a_race(run: Run) -> None:
    result = run(SEND.format(after_send="dwait 0", receive="nop"))
    assert result.fault is not None and result.fault.kind in ("stream_race", "uninitialized_read")
    assert "tile 1 (0, 1)" in result.fault.message


def test_waiting_for_a_post_nobody_makes_is_a_deadlock(run: Run) -> None:
    result = run(SEND.format(after_send="dwait 0", receive="wait 3, 1"))
    assert result.fault is not None and result.fault.kind == "deadlock"
    assert "tile 1 (0, 1)" in result.fault.message and "wait 3, 1" in result.fault.message
    assert result.fault.instruction == "wait 3, 1"


def test_two_tiles_waiting_on_each_other_deadlock(run: Run) -> None:
    source = """
    li r9, 1
    beq r3, r0, first
    beq r3, r9, second
    halt
first:
    wait 0, 1
    signal r9, 0
    halt
second:
    wait 0, 1
    signal r0, 0
    """
    result = run(source)
    assert result.fault is not None and result.fault.kind == "deadlock"
    assert "tile 0 (0, 0)" in result.fault.message and "tile 1 (0, 1)" in result.fault.message


PRODUCER_CONSUMER = """
    li r4, 32
    li r9, 1
    beq r3, r0, producer
    beq r3, r9, consumer
    halt
producer:
    vbcast [r0], f0
    fli f1, 1.0
    li r6, 0
    li r11, 0
    li r12, 2
    li r13, 4
block:
    vadds [r0], [r0], f1
    {credit}
    send [r0], r4, r9, [r6 + 64], 0, 0
    dwait 0
    addi r6, r6, 32
    remi r6, r6, 64
    addi r11, r11, 1
    blt r11, r13, block
    halt
consumer:
    li r6, 0
    li r10, 256
    loopi 4
        wait 0, 1
        vexp [r10], [r6 + 64]
        vexp [r10], [r6 + 64]
        vmov [r10], [r6 + 64]
        rel [r6 + 64], r4
        signal r0, 1
        addi r6, r6, 32
        remi r6, r6, 64
        addi r10, r10, 32
    endloop
    li r5, 1
    li r7, 128
    li r8, 0
    dst [a1], [r0 + 256], r5, r7, r8, r7, 1
    dwait 1
"""


def test_double_buffer_with_credits_streams_blocks(run: Run) -> None:
    """signal and rel: the producer reuses a buffer only after the consumer's credit."""
    credited = run(PRODUCER_CONSUMER.format(credit="blt r11, r12, go\n    wait 1, 1\ngo:"))
    assert credited.fault is None, credited.fault
    np.testing.assert_array_equal(
        credited.outputs["y"].reshape(-1)[:128], np.repeat([1.0, 2.0, 3.0, 4.0], 32)
    )
    # Without credits the third send lands in buffer 0 before the consumer released it.
    racy = run(PRODUCER_CONSUMER.format(credit=""))
    assert racy.fault is not None and racy.fault.kind == "stream_race"
    assert racy.fault.message.startswith("tile 0 (0, 0): send into tile 1 (0, 1)")
    assert racy.fault.instruction.startswith("send")


def test_sends_to_itself_or_off_the_array_are_invalid(run: Run) -> None:
    source = "vbcast [r0], f0\nli r4, 8\nli r9, {dest}\nsend [r0], r4, r9, [r0], 0, 0\n"
    for dest in ("0", "16"):
        result = run(source.format(dest=dest))
        assert result.fault is not None and result.fault.kind == "invalid_operand"
        assert "tile 0 (0, 0)" in result.fault.message


def test_far_sends_cost_more_hops(run: Run, tile: Platform) -> None:
    """Placement: a send to the far corner arrives later than one to a neighbour."""
    source = """
    li r4, 32
    li r9, {dest}
    beq r3, r0, sender
    beq r3, r9, receiver
    halt
sender:
    vbcast [r0], f0
    send [r0], r4, r9, [r0], 0, 0
    dwait 0
    halt
receiver:
    wait 0, 1
    """
    near = run(source.format(dest=1))
    far = run(source.format(dest=15))
    assert near.fault is None and far.fault is None
    more_hops = 6 - 1
    hop = int(tile.param_values()["hop_latency"])
    assert far.profile.cycles - near.profile.cycles == more_hops * hop


def test_setvl_loops_and_branches(run: Run) -> None:
    """setvl, setvli, loop, loopi, endloop, b, beq, bne, blt, bge, halt."""
    source = """
    bne r3, r0, done
    li r4, 5
    setvl r4
    fli f1, 1.0
    vbcast [r0], f1
    setvli 3
    li r5, 0
    li r6, 3
    loop r6
        vadd [r0], [r0], [r0]
    endloop
    loopi 2
        addi r5, r5, 1
    endloop
    li r7, 2
    blt r5, r7, done
    bge r5, r7, store
    b done
store:
    beq r5, r7, go
    halt
go:
    li r8, 1
    li r9, 5
    li r10, 0
    dst [a1], [r0], r8, r9, r10, r9, 0
    dwait 0
done:
    halt
    addi r5, r5, 1
    """
    result = run(source)
    assert result.fault is None, result.fault
    np.testing.assert_array_equal(result.outputs["y"][0, :5], [8, 8, 8, 1, 1])


def test_halt_ends_one_tile_and_counts(run: Run) -> None:
    result = run("halt\nnop\n")
    assert result.fault is None
    assert result.profile.instructions == 16


def test_step_limit_names_the_tile(tile: Platform) -> None:
    contract = MemoryContract.pack(inputs={"x": (4, 4)}, outputs={"y": (4, 4)})
    program = assemble(tile, "top:\n    b top\n", contract.symbols())
    result = simulate(program, contract, {"x": np.zeros((4, 4), np.float32)}, step_limit=1000)
    assert result.fault is not None and result.fault.kind == "step_limit"
    assert result.fault.message.startswith("tile ")


def test_a_smaller_array_runs_the_same_program(run: Run) -> None:
    small = get_platform("tile", {"grid_rows": 1, "grid_cols": 2})
    result = run(ROW_COPY, platform=small)
    assert result.fault is None
    assert result.unwritten["y"] == 62 * 64


BINDER_TESTS = {
    "setvl": test_setvl_loops_and_branches,
    "setvli": test_setvl_loops_and_branches,
    "b": test_setvl_loops_and_branches,
    "beq": test_setvl_loops_and_branches,
    "bne": test_setvl_loops_and_branches,
    "blt": test_setvl_loops_and_branches,
    "bge": test_setvl_loops_and_branches,
    "loop": test_setvl_loops_and_branches,
    "loopi": test_setvl_loops_and_branches,
    "endloop": test_setvl_loops_and_branches,
    "halt": test_halt_ends_one_tile_and_counts,
    "dld": test_dma_loads_and_stores_with_tags,
    "dst": test_dma_loads_and_stores_with_tags,
    "dwait": test_dma_loads_and_stores_with_tags,
    "send": test_send_wait_deliver_words_in_order,
    "wait": test_send_wait_deliver_words_in_order,
    "signal": test_double_buffer_with_credits_streams_blocks,
    "rel": test_double_buffer_with_credits_streams_blocks,
}
