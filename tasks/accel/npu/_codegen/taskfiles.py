"""The `task.toml` of every npu task, rendered from one table so the shared text stays one text.

Each `TaskDef` says what the task computes, its memory contract, configurations, tolerances and
roofline; `render` writes the TOML with the description every accel task shares (calling
convention, symbols, what varies, what is judged).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

ParamValue = int | float | str

CONTRACT = """
Memory contract: the regions below lie in HBM in this order; by the calling convention address
register a<i> holds the base of region i, and the assembler knows each region's base under its
name. Regions are row-major with the config's dtype (float32 or bfloat16; `itemsize` is its
size in bytes). The assembler also knows the config's shape symbols (upper case) and every
hardware parameter in upper case (MLEN, VLEN, VSRAM_WORDS, MSRAM_WORDS, ...). Only output and
scratch regions are writable; every output element must be written.
"""

RULES = """
kernel.asm starts as the compiler baseline: {baseline} Make it as fast as you can in simulated
cycles. The configurations vary the shapes (odd and unaligned ones too), the dtype and the
hardware (the `hw_*` parameters override MLEN, VLEN, SRAM sizes); unseen configurations will be
tested, so write the program for the symbols, not for the numbers you are shown.
"""


@dataclass(frozen=True)
class TaskDef:
    """One npu task's `task.toml`, minus the boilerplate."""

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


#: Values the autotune agent tries per knob of the experts (by the knob's name without the
#: stage prefix of a block task): the share of rows per block, the key tiles per block.
KNOB_VALUES: dict[str, list[ParamValue]] = {
    "RB_SPLIT": [1, 2, 4, 8, 16],
    "BT_CAP": [1, 2, 4, 8, "NT"],
}
_KNOB = re.compile(r"^\.equ ((?:\w+_)?(" + "|".join(KNOB_VALUES) + r")),", re.MULTILINE)


def knobs(expert: str) -> dict[str, list[ParamValue]]:
    """The knobs an expert source defines (`.equ` of a name in KNOB_VALUES), with their values."""
    return {m.group(1): KNOB_VALUES[m.group(2)] for m in _KNOB.finditer(expert)}


def _value(value: ParamValue) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _inline(config: dict[str, ParamValue]) -> str:
    return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in config.items()) + " }"


def _wrap(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=96)


def render(t: TaskDef, tuned: dict[str, list[ParamValue]] | None = None) -> str:
    """The task.toml text; `tuned`: the expert's knobs, for the autotune agent."""
    regions = "\n".join(f"- {line}" for line in t.regions)
    rules = RULES.format(baseline=t.baseline.strip())
    description = "\n\n".join([_wrap(t.what), _wrap(CONTRACT), regions, _wrap(rules)])
    lines = [
        "# Rendered by tasks/accel/npu/_codegen/taskfiles.py; edit the table there, not this file.",
        f'id = "accel/npu/{t.name}"',
        'track = "accel"',
        'platform = "npu"',
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
    if tuned:
        lines += ["[autotune]", 'template = "expert.asm"', "", "[autotune.knobs]"]
        lines += [f"{k} = [{', '.join(map(_value, v))}]" for k, v in tuned.items()]
        lines.append("")
    return "\n".join(lines)
