"""The accel feedback tools, as library functions over (task, assembly source) returning text.

The function-calling agent and `gauntlet-ws` call these for `accel` tasks. Every function that
assembles or simulates does so through the judge's simulation workers
(`gauntlet.judge.asm_backend`), with the same symbols, hardware and inputs as the judge, on the
visible configurations only; the inputs are drawn from `seed` (never the run's secret).

- `grep_manual(task, pattern)`: instruction entries and paragraphs of the platform's manual;
- `check_syntax(task, source, config)`: `All checks passed. 0 error(s), 0 warning(s)` or the
  assembler's diagnostics;
- `run_eval(task, source)`: per visible config, the share of output elements that match;
- `view_output(task, source, config)`: per row, the kernel's result against the reference;
- `instruction_count(task, source, config)`: static and executed instructions, per unit;
- `profile(task, source, config)`: cycles, busy time per unit, stalls by cause, DMA bytes and
  the roofline bound of that configuration and hardware.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gauntlet.judge.asm_backend import ConfigCheck
    from gauntlet.task import Config, Task

#: Rows `view_output` shows at most, and elements per row of a 1-D output.
VIEW_ROWS = 32
VECTOR_ROW = 16


def _config(task: Task, name: str | None) -> Config:
    """A visible config by name (the first one when None)."""
    configs = task.visible_configs
    if name is None:
        return configs[0]
    for config in configs:
        if config.name == name:
            return config
    known = ", ".join(c.name for c in configs)
    from gauntlet.errors import UnknownNameError

    raise UnknownNameError("visible config", name, known.split(", "))


def grep_manual(task: Task, pattern: str) -> str:
    """Search the manual of the task's platform (default hardware) for a regular expression.

    The search runs in a separate process under a time and memory limit
    (`gauntlet.agents.tools.run_limited_python`): Python's `re` cannot be interrupted, so a
    pattern that backtracks without end, or one nested too deep, fails there.

    Raises:
        PatternError: The pattern is too long, too complex or too slow.
    """
    from gauntlet.agents.tools import MAX_PATTERN_CHARS, PatternError, run_limited_python

    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"the pattern has {len(pattern)} characters, above the limit of {MAX_PATTERN_CHARS}"
        )
    reply = run_limited_python(
        _GREP_MANUAL_CHILD,
        {
            "src": str(Path(__file__).resolve().parents[2]),
            "platform": str(task.spec.platform),
            "pattern": pattern,
        },
        what=f"the pattern {pattern[:80]!r}",
        site=True,
    )
    return str(reply["text"])


#: The search process of `grep_manual`: the manual is made before the timer starts.
_GREP_MANUAL_CHILD = """\
import json, resource, signal, sys
request = json.loads(sys.stdin.buffer.read())
sys.path.insert(0, request["src"])
from gauntlet.accel import get_platform, grep_manual, manual
platform = get_platform(request["platform"])
manual(platform)
limit = request["memory_bytes"]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
signal.setitimer(signal.ITIMER_REAL, request["limit_s"])
try:
    reply = {"text": grep_manual(platform, request["pattern"])}
except (RecursionError, MemoryError, OverflowError) as err:
    reply = {"error": f"too complex a regular expression ({type(err).__name__}); nest less"}
signal.setitimer(signal.ITIMER_REAL, 0)
sys.stdout.write(json.dumps(reply))
"""


def check_syntax(task: Task, source: str, config: str | None = None) -> str:
    """Assemble with the symbols of a visible config (the first by default) and report."""
    from gauntlet.judge import asm_backend

    chosen = _config(task, config)
    outcome = asm_backend.assemble_source(task, chosen, source)
    if outcome.failure is not None:
        return f"The assembler did not finish ({outcome.failure}): {outcome.message}"
    lines = [*outcome.diagnostics, *outcome.warnings]
    errors, warnings = len(outcome.diagnostics), len(outcome.warnings)
    verdict = "All checks passed." if errors == 0 else "Found problems."
    lines.append(f"{verdict} {errors} error(s), {warnings} warning(s) (config {chosen.name})")
    return "\n".join(lines)


def _check(task: Task, config: Config, source: str, seed: int) -> ConfigCheck:
    from gauntlet.judge import asm_backend

    return asm_backend.check_config(task, config, source, seed, timed=True)


def _status(check: ConfigCheck) -> str:
    result = check.result
    if check.failure is not None:
        return f"{check.failure}: {check.reason}"
    if result.correct is None:
        return f"not checked: {result.reason}"
    if not result.correct:
        return f"wrong: {result.reason}"
    return "correct"


def run_eval(task: Task, source: str, seed: int = 0) -> str:
    """Every visible config: share of matching output elements, cycles and speedup."""
    lines = []
    passed = 0
    for config in task.visible_configs:
        check = _check(task, config, source, seed)
        result = check.result
        share = result.match_fraction
        shown = f"{share:.4f}" if share is not None else "-"
        timing = result.timing
        speed = (
            f"; {timing.candidate:.0f} cycles, {timing.speedup:.2f}x the baseline"
            if timing is not None
            else ""
        )
        passed += result.correct is True and check.failure is None
        lines.append(f"{config.label()}: matching elements {shown}{speed}; {_status(check)}")
    lines.append(f"{passed}/{len(task.visible_configs)} visible configs correct")
    return "\n".join(lines)


def view_output(
    task: Task, source: str, config: str | None = None, seed: int = 0, rows: int = VIEW_ROWS
) -> str:
    """A per-row table of the kernel's first trial against the reference, with each row's error."""
    from gauntlet.judge import asm_backend

    chosen = _config(task, config)
    check = _check(task, chosen, source, seed)
    if check.failure is not None or not check.runs:
        return f"{chosen.label()}: {_status(check)}"
    setup = asm_backend.config_setup(task, chosen)
    run = check.runs[0]
    out: list[str] = [f"{chosen.label()}, trial 1: {_status(check)}"]
    for region, expected in zip(setup.contract.with_role("output"), check.expected[0], strict=True):
        tol = task.spec.tolerance.dtypes.get(region.dtype)
        atol, rtol = (tol.atol, tol.rtol) if tol is not None else (0.0, 0.0)
        found = np.asarray(run.outputs[region.name], dtype=np.float64)
        out.append("")
        out.append(
            f"output '{region.name}' {region.shape} {region.dtype}: |kernel - reference| <= "
            f"{atol:g} + {rtol:g} * |reference|"
        )
        out += _row_table(found, expected, atol, rtol, rows)
    return "\n".join(out)


def _as_rows(values: np.ndarray) -> np.ndarray:
    if values.ndim == 1:
        pad = -values.size % VECTOR_ROW
        padded = np.concatenate([values, np.full(pad, np.nan)]) if pad else values
        return padded.reshape(-1, VECTOR_ROW)
    return values.reshape(-1, values.shape[-1])


def _row_table(
    found: np.ndarray, expected: np.ndarray, atol: float, rtol: float, limit: int
) -> list[str]:
    kernel, reference = _as_rows(found), _as_rows(expected)
    width = reference.shape[1]
    header = "row  | max abs err | wrong/cols | first wrong col: kernel vs reference"
    lines = [header, "-" * len(header)]
    shown = 0
    for index in range(reference.shape[0]):
        k_row, r_row = kernel[index], reference[index]
        valid = ~np.isnan(r_row) if found.ndim == 1 else np.ones(width, dtype=bool)
        diff = np.abs(k_row - r_row)
        ok = (diff <= atol + rtol * np.abs(r_row)) | ~valid
        ok &= np.isfinite(k_row) | ~valid
        err = float(np.nanmax(np.where(valid, diff, 0.0))) if valid.any() else 0.0
        wrong = int((~ok).sum())
        first = int(np.argmax(~ok)) if wrong else -1
        detail = (
            f"col {first}: {k_row[first]:.6g} vs {r_row[first]:.6g}"
            if wrong
            else f"e.g. col 0: {k_row[0]:.6g} vs {r_row[0]:.6g}"
        )
        label = f"{index * VECTOR_ROW}.." if found.ndim == 1 else str(index)
        lines.append(f"{label:<4} | {err:11.3g} | {wrong:4d}/{int(valid.sum()):<5d} | {detail}")
        shown += 1
        if shown == limit and reference.shape[0] > limit:
            lines.append(f"... {reference.shape[0] - limit} more rows")
            break
    return lines


def instruction_count(task: Task, source: str, config: str | None = None, seed: int = 0) -> str:
    """Static instructions of the program and instructions executed on one trial, per unit."""
    chosen = _config(task, config)
    check = _check(task, chosen, source, seed)
    if not check.runs:
        return f"{chosen.label()}: {_status(check)}"
    profile = check.runs[0].profile
    lines = [
        f"{chosen.label()}: {profile.instructions} instructions executed",
        *(f"  {unit}: {count}" for unit, count in profile.instructions_by_unit.items()),
    ]
    if check.baseline is not None:
        lines.append(f"the baseline executes {check.baseline.instructions} on this config")
    return "\n".join(lines)


def profile(task: Task, source: str, config: str | None = None, seed: int = 0) -> str:
    """Where the cycles of one trial went, next to the baseline and the roofline bound."""
    chosen = _config(task, config)
    check = _check(task, chosen, source, seed)
    if not check.runs:
        return f"{chosen.label()}: {_status(check)}"
    run = check.runs[0]
    prof = run.profile
    lines = [f"{chosen.label()}: {_status(check)}", f"cycles: {prof.cycles}"]
    if check.baseline is not None:
        speedup = check.baseline.cycles / prof.cycles if prof.cycles else float("inf")
        lines.append(f"baseline cycles: {check.baseline.cycles} (speedup {speedup:.2f}x)")
    if check.sol_cycles is not None:
        share = check.sol_cycles / prof.cycles if prof.cycles else 0.0
        lines.append(
            f"roofline bound: {check.sol_cycles:.0f} cycles for this config and hardware "
            f"({share:.1%} of it reached)"
        )
    lines.append(f"instructions executed: {prof.instructions}")
    lines.append("busy cycles per unit (share of the run):")
    utilization = prof.utilization()
    lines += [f"  {u}: {b} ({utilization[u]:.1%})" for u, b in prof.busy.items()]
    lines.append("stall cycles by cause:")
    lines += [f"  {cause}: {cycles}" for cause, cycles in prof.stalls.items()]
    lines.append(f"DMA bytes: {prof.dma_bytes_read} read, {prof.dma_bytes_written} written")
    if run.fault is not None:
        lines.append(f"fault: {run.fault.describe()}")
    return "\n".join(lines)
