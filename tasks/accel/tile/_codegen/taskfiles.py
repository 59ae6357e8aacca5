"""The `task.toml` of every tile task, rendered from one table so the shared text stays one text.

Each `TaskDef` says what the task computes, its memory contract, configurations, tolerances and
roofline; `render` writes the TOML with the description every accel task shares (calling
convention, symbols, what varies, what is judged).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

ParamValue = int | float | str

CONTRACT = """
Memory contract: the regions below lie in external memory in this order; by the calling
convention address register a<i> holds the base of region i on every tile, and the assembler
knows each region's base under its name. Regions are row-major with the config's dtype (float32
or bfloat16; `itemsize` is its size in bytes) unless said otherwise. Every tile runs the
program, with its row, column and index in r1, r2 and r3. The assembler also knows the config's
shape symbols (upper case) and every hardware parameter in upper case (GRID_ROWS, GRID_COLS,
VLEN, MLEN, LMEM_WORDS, ...). Only output and scratch regions are writable; every output element
must be written.
"""

RULES = """
kernel.asm starts as the compiler baseline: {baseline} Make it as fast as you can in simulated
cycles: spread the work over the tiles, overlap transfers with compute, and place work and
transfers so the shared links (each column's shim, the external memory, the mesh) do not
queue. The configurations vary the shapes (odd and unaligned ones too), the dtype and the
hardware (the `hw_*` parameters override the grid, VLEN, LANES, MLEN and bandwidths); unseen
configurations will be tested, so write the program for the symbols, not for the numbers you
are shown.
"""


@dataclass(frozen=True)
class TaskDef:
    """One tile task's `task.toml`, minus the boilerplate."""

    name: str
    title: str
    level: int
    what: str
    """What to compute, for the agent."""
    regions: list[str]
    """One line per region, in contract order: `x (ROWS, COLS): input, ...`."""
    baseline: str
    """How the baseline works (one sentence)."""
    visible: list[dict[str, ParamValue]]
    hidden: list[dict[str, ParamValue]]
    domain: dict[str, str]
    """Parameter -> TOML inline table of its domain (`{ min = 1, max = 64 }`)."""
    flops: str
    bytes: str
    constraint: str | None = None
    distributions: list[str] = field(default_factory=lambda: ["normal", "scaled"])
    tolerance: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"float32": (1e-5, 1e-5), "bfloat16": (1e-3, 1.6e-2)}
    )
    count: int = 2
    timeout_s: int = 60


def _value(value: ParamValue) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _inline(config: dict[str, ParamValue]) -> str:
    return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in config.items()) + " }"


def _wrap(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=96)


def render(t: TaskDef) -> str:
    """The task.toml text."""
    regions = "\n".join(f"- {line}" for line in t.regions)
    rules = RULES.format(baseline=t.baseline.strip())
    description = "\n\n".join([_wrap(t.what), _wrap(CONTRACT), regions, _wrap(rules)])
    lines = [
        "# Rendered by tasks/accel/tile/_codegen/taskfiles.py; edit the table there, not this "
        "file.",
        f'id = "accel/tile/{t.name}"',
        'track = "accel"',
        'platform = "tile"',
        f'title = "{t.title}"',
        f"level = {t.level}",
        "trials = 1",
        f"timeout_s = {t.timeout_s}",
        f'description = """\n{description.strip()}\n"""',
        "",
        "[reference]",
        'file = "reference.py"',
        'entry = "reference"',
        "",
        "[inputs]",
        'file = "inputs.py"',
        "distributions = [" + ", ".join(f'"{d}"' for d in t.distributions) + "]",
        "",
        "[baseline]",
        'file = "baseline.asm"',
        'entry = "kernel"',
        "",
        "[submission]",
        'files = ["kernel.asm"]',
        'entry = "kernel"',
        'language = "asm"',
        'template = "baseline.asm"',
        "",
    ]
    for config in t.visible:
        lines.append("[[configs.visible]]")
        lines += [f"{k} = {_value(v)}" for k, v in config.items()]
        lines.append("")
    lines.append("[configs.hidden]")
    lines.append("fixed = [")
    lines += [f"    {_inline(c)}," for c in t.hidden]
    lines.append("]")
    lines.append(f"count = {t.count}")
    if t.constraint:
        lines.append(f'constraint = "{t.constraint}"')
    lines += ["", "[configs.hidden.domain]"]
    lines += [f"{k} = {v}" for k, v in t.domain.items()]
    lines += ["", "[tolerance]", "margin = 8", ""]
    for dtype, (atol, rtol) in t.tolerance.items():
        lines += [f"[tolerance.{dtype}]", f"atol = {atol!r}", f"rtol = {rtol!r}", ""]
    lines += [
        "[roofline]",
        f'flops = "{t.flops}"',
        f'bytes = "{t.bytes}"',
        "",
        "[expert]",
        'files = { "kernel.asm" = "expert.asm" }',
        "",
    ]
    return "\n".join(lines)
