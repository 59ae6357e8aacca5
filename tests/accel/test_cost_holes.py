"""Holes found in the cost models, each pinned by a test that fails on the old model.

- rvv: the memory unit's in-flight records held fewer entries than its latency needs, so a
  vector instruction reading a register loaded long enough ago (but not yet landed) no longer
  waited for it; the unit now holds at most `mem_inflight` accesses in flight and starts one more
  only when the oldest has landed.
- npu: a DMA row that starts inside a burst was charged as if it started at a burst boundary;
  each row now moves every burst it touches.
"""

from __future__ import annotations

import numpy as np
import pytest

from gauntlet.accel import MemoryContract, assemble, get_platform, simulate
from gauntlet.accel.machine import MEMORY_DEPENDENCY, Machine, bursts_touched
from gauntlet.accel.simulator import run

LOADS = 20


def _rvv_loads(
    count: int, read: int | None, overrides: dict[str, int] | None = None
) -> tuple[Machine, int]:
    """`count` independent unit-stride loads into v0.., then a v.add reading v<read>."""
    platform = get_platform("rvv", overrides)
    contract = MemoryContract.pack(inputs={"x": (64, 64)}, outputs={"y": (64, 64)})
    lines = ["v.cfgk s0, VLEN, m1"]
    lines += [f"ld.v v{i}, [p0 + {i * 256}]" for i in range(count)]
    if read is not None:
        lines.append(f"v.add v30, v{read}, v{read}")
    program = assemble(platform, "\n".join(lines), contract.symbols())
    machine = Machine(platform, contract, {"x": np.ones((64, 64), dtype=np.float32)})
    result = run(machine, program)
    assert result.fault is None, result.fault
    return machine, platform.unit_index("memory")


@pytest.mark.parametrize("read", range(LOADS))
def test_rvv_vector_op_waits_for_every_load_in_flight(read: int) -> None:
    """A v.add reading load k's register starts only after load k has landed."""
    # Load k's data lands when the memory unit's last (k-th) load of a k+1-load program does:
    # the unit is in order, so later loads cannot move it earlier.
    alone, memory = _rvv_loads(read + 1, None)
    landed = alone.horizon[memory]
    machine, _ = _rvv_loads(LOADS, read)
    vector = machine.platform.unit_index("vector")
    add_cycles = -(-int(machine.params["vlen"]) // int(machine.params["lanes"]))
    assert machine.free[vector] >= landed + add_cycles


def test_rvv_memory_unit_tracks_at_most_mem_inflight_accesses() -> None:
    """With 4 entries, back-to-back loads wait for the oldest: one per latency per 4 loads."""
    few, memory = _rvv_loads(LOADS, None, {"mem_inflight": 4})
    many, _ = _rvv_loads(LOADS, None)
    assert few.inflight[memory].maxlen == 4
    assert few.stalls[MEMORY_DEPENDENCY] > 0 == many.stalls[MEMORY_DEPENDENCY]
    latency = int(few.params["mem_latency"])
    assert few.horizon[memory] >= (LOADS // 4 - 1) * latency > many.horizon[memory] // 2


def _npu_load_cycles(offset_bytes: int, hstride_bytes: int) -> int:
    npu = get_platform("npu")
    contract = MemoryContract.pack(inputs={"x": (64, 64)}, outputs={"y": (64, 64)})
    source = (
        f"li r2, 16\nli r3, 32\nli r4, {hstride_bytes}\nli r5, 32\n"
        f"dldv [r0], [a0 + {offset_bytes}], r2, r3, r4, r5, 0\ndwait 0\n"
    )
    program = assemble(npu, source, contract.symbols())
    result = simulate(program, contract, {"x": np.ones((64, 64), dtype=np.float32)})
    assert result.fault is None, result.fault
    return int(result.profile.cycles)


def test_npu_dma_charges_the_bursts_an_unaligned_row_touches() -> None:
    npu = get_platform("npu").param_values()
    burst, bandwidth = int(npu["dma_burst_bytes"]), int(npu["hbm_bytes_per_cycle"])
    aligned = _npu_load_cycles(0, 256)
    # 16 rows of 128 bytes starting 4 bytes into a burst: 3 bursts each instead of 2.
    shifted = _npu_load_cycles(4, 256)
    assert shifted - aligned == -(-16 * burst // bandwidth)
    # An odd row stride puts the rows at every phase of a burst.
    odd = _npu_load_cycles(0, 132)
    expected = bursts_touched(0, 16, 128, 132, burst)
    assert expected > 16 * 2
    assert odd - aligned == -(-expected * burst // bandwidth) - -(-32 * burst // bandwidth)


def test_bursts_touched_counts_whole_bursts() -> None:
    assert bursts_touched(0, 1, 64, 0, 64) == 1
    assert bursts_touched(4, 1, 64, 0, 64) == 2
    assert bursts_touched(0, 4, 32, 64, 64) == 4
    assert bursts_touched(0, 2, 64, 96, 64) == 1 + 2
