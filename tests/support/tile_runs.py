"""What the tile simulator observably does on the tile tasks' own programs, as data.

`tests/accel/golden/tile_runs.json` pins, for every task of `tasks/accel/tile/`, its baseline
and its expert on every visible config and every fixed hidden config (first distribution, seed
7): the outputs, the whole profile, the fault, the unwritten outputs, and every tile's final
state (clock, unit timelines, stall counters, registers, local memory and its written, held and
released words; hashed, with each tile's clock kept readable). Variants of each expert pin the
faults on real programs: the step limit hit mid-run, and the program with its first `dwait`,
`wait`, `signal` or `rel` deleted.

It was recorded with

    python -m tests.support.tile_runs > tests/accel/golden/tile_runs.json

before the tile simulator's speed work of 2026-11-27, and may only be re-recorded for a
deliberate change of the simulator's semantics or of the tasks' programs.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from gauntlet.accel import array as array_module
from gauntlet.accel import assemble, simulate
from gauntlet.accel.array import TileMachine
from gauntlet.errors import GauntletError
from gauntlet.judge.asm_backend import config_setup, draw_inputs
from gauntlet.task import Task, load_task

TILE = Path(__file__).resolve().parents[2] / "tasks" / "accel" / "tile"
NAMES = sorted(p.parent.name for p in TILE.glob("*/task.toml"))
SEED = 7
#: The expert's lines whose first occurrence a fault variant deletes.
DELETED = ("dwait", "wait", "signal", "rel")


def _floats(values: list[Any]) -> bytes:
    return b"".join(struct.pack("<d", float(v)) for v in values)


def _tile_state(m: TileMachine) -> dict[str, Any]:
    """One tile's final state: its counters as data, its memories and registers as a hash."""
    state = hashlib.sha256()
    for name in sorted(m.sram):
        state.update(m.sram[name].data.tobytes())
        state.update(bytes(m.sram[name].written))
    for name in sorted(m.regs):
        values = m.regs[name]
        state.update(_floats(values[: len(values) - 1]))
    state.update(m.held.tobytes())
    state.update(m.released.tobytes())
    state.update(repr([[(p.arrival, p.source) for p in posts] for posts in m.posts]).encode())
    return {
        "t": m.t,
        "free": list(m.free),
        "horizon": list(m.horizon),
        "busy": list(m.busy),
        "counts": list(m.counts),
        "stalls": list(m.stalls),
        "array_stalls": list(m.array_stalls),
        "executed": m.executed,
        "tag_done": list(m.tag_done),
        "vl": m.vl,
        "pending": len(m.pending),
        "incoming": m.incoming,
        "dma_bytes": [m.dma_bytes_read, m.dma_bytes_written],
        "state": state.hexdigest(),
    }


@contextmanager
def _tiles_seen() -> Iterator[list[list[TileMachine]]]:
    """Catch each run's tiles as the array builds its profile."""
    seen: list[list[TileMachine]] = []
    original = array_module._array_profile

    def spy(tiles: list[TileMachine], executed: int) -> Any:
        seen.append(list(tiles))
        return original(tiles, executed)

    array_module._array_profile = spy
    try:
        yield seen
    finally:
        array_module._array_profile = original


def run_digest(task: Task, source: str, label: str, step_limit: int | None = None) -> Any:
    """Simulate one program on one config; what it did and the state it left, as data."""
    configs = [*task.visible_configs, *task.spec.configs.hidden.fixed]
    config = next(c for c in configs if c.name == label)
    setup = config_setup(task, config)
    inputs = draw_inputs(task, config, SEED, task.spec.inputs.distributions[0])
    try:
        program = assemble(setup.platform, source, setup.symbols)
    except GauntletError as err:
        return {"assembly": str(err)}
    limit = {} if step_limit is None else {"step_limit": step_limit}
    with _tiles_seen() as seen:
        result = simulate(program, setup.contract, inputs, **limit)
    (tiles,) = seen
    return {
        "outputs": {
            k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
            for k, v in result.outputs.items()
        },
        "profile": result.profile.model_dump(),
        "fault": result.fault.model_dump() if result.fault else None,
        "unwritten": result.unwritten,
        "clocks": [m.t for m in tiles],
        "tiles": hashlib.sha256(
            json.dumps([_tile_state(m) for m in tiles], sort_keys=True).encode()
        ).hexdigest(),
    }


def without_first(source: str, mnemonic: str) -> str | None:
    """The source with the first instruction of `mnemonic` deleted (None: it has none)."""
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        words = line.split()
        if words and words[0] == mnemonic:
            return "".join(lines[:i] + lines[i + 1 :])
    return None


def task_digests(name: str, hidden: bool | None = None) -> dict[str, Any]:
    """The pinned runs of one task, keyed `file config` or `expert C1 <variant>`.

    Args:
        name: The task.
        hidden: True: only the runs on fixed hidden configs; False: all others; None: all.
    """
    task = load_task(TILE / name)
    labels = []
    if hidden is not True:
        labels += [c.name for c in task.visible_configs]
    if hidden is not False:
        labels += [c.name for c in task.spec.configs.hidden.fixed]
    digests: dict[str, Any] = {}
    for file in ("baseline", "expert"):
        source = task.path(f"{file}.asm").read_text()
        for label in labels:
            digests[f"{file} {label}"] = run_digest(task, source, label)
    if hidden is True:
        return digests
    expert = task.path("expert.asm").read_text()
    first = task.visible_configs[0].name
    executed = run_digest(task, expert, first)["profile"]["instructions"]
    for limit in (executed // 2, executed // 3 + 7):
        digests[f"expert {first} step_limit={limit}"] = run_digest(task, expert, first, limit)
    for mnemonic in DELETED:
        variant = without_first(expert, mnemonic)
        if variant is not None:
            digests[f"expert {first} without {mnemonic}"] = run_digest(task, variant, first)
    return digests


def golden() -> dict[str, dict[str, Any]]:
    """The digests of every tile task, keyed by task name."""
    return {name: task_digests(name) for name in NAMES}


def dumps(digests: dict[str, dict[str, Any]]) -> str:
    """The golden file's text: one line per run, so a diff names the runs that changed."""
    lines = ["{"]
    for i, name in enumerate(sorted(digests)):
        lines.append(f" {json.dumps(name)}: {{")
        runs = digests[name]
        for j, key in enumerate(sorted(runs)):
            comma = "," if j + 1 < len(runs) else ""
            lines.append(f"  {json.dumps(key)}: {json.dumps(runs[key], sort_keys=True)}{comma}")
        lines.append(" }," if i + 1 < len(digests) else " }")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(dumps(golden()))
