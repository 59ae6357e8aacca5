"""The block-compiling simulator against the instruction-by-instruction one it replaced.

`golden/simulator_runs.json` holds what the simulator of commit dcf6c61 (one pre-bound closure
per instruction) observably did on the random programs of `tests/support/accel_programs.py`:
outputs, profile (cycles, busy time, stalls, counts), fault and the final registers and SRAMs.
It was recorded on that commit with

    python -m tests.support.accel_programs 120 > tests/accel/golden/simulator_runs.json

and may only be re-recorded for a deliberate change of the simulator's semantics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gauntlet.accel import codegen
from tests.support.accel_programs import Case, random_program, run_digest

GOLDEN: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "golden" / "simulator_runs.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("seed", sorted(GOLDEN, key=int))
def test_runs_match_the_instruction_by_instruction_simulator(seed: str) -> None:
    assert run_digest(random_program(int(seed))) == GOLDEN[seed]


def test_the_golden_runs_cover_successes_and_every_kind_of_fault() -> None:
    kinds = {(d["fault"] or {}).get("kind") for d in GOLDEN.values()}
    assert {None, "dma_race", "step_limit", "uninitialized_read", "sram_overflow"} <= kinds


@pytest.mark.parametrize("seed", range(120, 180))
def test_blocks_match_single_instructions(seed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = random_program(int(seed))
    blocks = run_digest(case)
    monkeypatch.setattr(codegen, "MAX_BLOCK", 1)
    assert run_digest(case) == blocks


LOOP = """
    li r2, 64
    li r3, 64
    li r4, 256
    li r5, 64
    dldv [r0], [a0], r2, r3, r4, r5, 0
    dwait 0
    fli f1, 0.5
    li r1, 0
    loopi 3
        vadds [r1], [r1], f1
        vredsum f2, [r1]
        fadd f3, f3, f2
        addi r1, r1, 32
    endloop
    vbcast [r0 + 64], f3
    halt
"""


@pytest.mark.parametrize("step_limit", range(1, 30))
def test_the_step_limit_stops_inside_a_block_as_between_instructions(
    step_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = Case(LOOP, {}, step_limit)
    blocks = run_digest(case)
    monkeypatch.setattr(codegen, "MAX_BLOCK", 1)
    assert run_digest(case) == blocks
