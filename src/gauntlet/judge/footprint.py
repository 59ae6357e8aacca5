"""The memory a judgment needs: on the GPU, checked before any work; on the host, its references.

A config the device cannot hold would otherwise end in CUDA's out-of-memory error in one of the
judge's workers, after the builds and imports, and read as a crash. The bound here comes from
the task's compulsory bytes (`[roofline] bytes`: the inputs read and the outputs written, at
the config's dtype) and what the two workers hold of them at once while they run side by side:
the candidate its inputs, their clones and its outputs (twice the bytes), the reference the
same in float64 (8 / itemsize times the bytes) and its native-dtype outputs (once more). The
judge's own comparison works in chunks sized to the memory left, at most 6 GiB of temporaries,
given back to the device after each large one (`correctness.py`), and is not counted. The
same bound sizes a judgment's share of the GPU while judgments run side by side
(`slots_needed`, `devicelock.py`).

On the host, the judge holds the float64 references of a judgment's configs until it has
compared the candidate's outputs with them, within a budget (`reference_budget_bytes`); a
config past it is streamed, one trial's references at a time (`docs/gpu.md`, "References on
the host"). Those are known only once the reference has run: the roofline's bytes do not split
inputs from outputs, so they bound nothing here.
"""

from __future__ import annotations

import math

import psutil

from gauntlet import expr, settings
from gauntlet.task import Config, Task

_GIB = float(1 << 30)


def bytes_needed(task: Task, config: Config) -> int:
    """A lower bound of the device memory one judgment of `config` holds at once."""
    return int(_held(_moved(task, config), config))


def too_large(task: Task, configs: list[Config], total_bytes: int) -> str:
    """Why a config cannot be judged on a device of `total_bytes` ("" when every one fits)."""
    for config in configs:
        moved = _moved(task, config)
        needed = _held(moved, config)
        if needed > total_bytes:
            return (
                f"config {config.label()} needs at least {needed / _GIB:.1f} GiB of device "
                f"memory to judge (its inputs and outputs, {moved / _GIB:.1f} GiB, held by the "
                f"candidate and in float64 by the reference at once), and the device has "
                f"{total_bytes / _GIB:.1f} GiB"
            )
    return ""


def slots_needed(task: Task, configs: list[Config], total_bytes: int, slots: int) -> int:
    """The GPU's judgment slots (`devicelock`) a judgment of `configs` takes: one per share.

    A slot is `total_bytes / slots` of the device's memory; a judgment whose largest config
    needs more takes as many as cover it (all of them at most: then it shares the GPU with no
    other judgment's memory), so judgments side by side do not run the GPU out of memory.
    """
    share = total_bytes / max(slots, 1)
    needed = max((_held(_moved(task, c), c) for c in configs), default=0.0)
    return min(slots, max(1, math.ceil(needed / share)))


def _moved(task: Task, config: Config) -> float:
    """The config's compulsory bytes: its inputs read and outputs written."""
    return float(expr.evaluate(task.spec.roofline.bytes, config.variables()))


def _held(moved: float, config: Config) -> float:
    """What the candidate (twice the bytes) and the reference (float64, and native) hold."""
    itemsize = float(config.variables()["itemsize"])
    return 2.0 * moved + moved * 8.0 / itemsize + moved


def host_bytes() -> int:
    """The host's memory."""
    return int(psutil.virtual_memory().total)


def reference_budget_bytes() -> int:
    """The bytes of references the judge may hold on the host at once.

    A quarter of the host's memory (`settings.REFERENCE_BYTES` where set): the judge keeps a
    task's references across its attempts up to it (`python_backend._REFERENCES`), and it is
    the limit of the reference worker's frames (`channel.FrameReader.limit_bytes`), each of
    which the judge holds as it comes. The rest of the host is the workers': the reference
    worker stages each of its results in pinned memory and a memory file, the candidate its
    outputs likewise.
    """
    return settings.REFERENCE_BYTES or host_bytes() // 4


def references_too_large(
    label: str, trial_bytes: int, count: int, other_bytes: int, *, streamed: bool = False
) -> str:
    """Why the judge cannot hold a config's references: `count` of `trial_bytes` each at once.

    `other_bytes`: what the judgment holds already of other configs'. `streamed`: the config's
    references come one at a time, and even one is past the budget.
    """
    budget = reference_budget_bytes()
    why = (
        "GAUNTLET_REFERENCE_BYTES"
        if settings.REFERENCE_BYTES
        else f"a quarter of the host's {_size(host_bytes())}"
    )
    held = (
        "streamed, one trial held at a time"
        if streamed
        else f"{count} of them held at once (its trials and sampled timed calls), "
        f"{_size(trial_bytes * count)} in all"
    )
    return (
        f"the references of config {label} cannot be held on this host: "
        f"{_size(trial_bytes)} a trial, {held}, beside {_size(other_bytes)} of other "
        f"configs', past the judge's {_size(budget)} for references ({why}; the host has "
        f"{_size(host_bytes())})"
    )


def _size(count: float) -> str:
    """Bytes for a reader: in GiB, MiB or KiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count / 1024:.1f} KiB"
