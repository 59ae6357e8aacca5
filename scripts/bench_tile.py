"""The tile platform's figures: expert vs baseline cycles per task, and simulator speed.

    .venv/bin/python scripts/bench_tile.py            # print the tables
    .venv/bin/python scripts/bench_tile.py --write    # also update docs/accel/BENCHMARK.md

For every task of `tasks/accel/tile/` the baseline and the expert run on each visible config
(first distribution, a fixed seed) through the trusted simulator, as the judge runs them; the
outputs are checked against the task's reference with the task's tolerance. The table gives the
simulated cycles and the expert's speedup per config, and the geometric mean per task and over
all tasks. Speed is simulated instructions per second of CPU time (`time.process_time`, best of
`--repeats` runs of a baseline and an expert, every tile's instructions counted), covering
`simulate` (binding, running, reading outputs), not assembly, on each task's H2 config.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from gauntlet import devices
from gauntlet.accel import assemble, simulate
from gauntlet.judge.asm_backend import config_setup, draw_inputs, reference_outputs
from gauntlet.task import Task, load_task

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tasks" / "accel" / "tile"
BEGIN, END = "<!-- tile:begin -->", "<!-- tile:end -->"
SEED = 7


def run_task(name: str) -> list[tuple[str, int, int]]:
    """(config, baseline cycles, expert cycles) per visible config, outputs checked."""
    task = load_task(TASKS / name)
    rows = []
    for config in task.visible_configs:
        setup = config_setup(task, config)
        distribution = task.spec.inputs.distributions[0]
        inputs = draw_inputs(task, config, SEED, distribution)
        wanted = reference_outputs(task, inputs)
        cycles = []
        for file in ("baseline.asm", "expert.asm"):
            program = assemble(setup.platform, task.path(file).read_text(), setup.symbols)
            result = simulate(program, setup.contract, inputs)
            if result.fault is not None:
                raise RuntimeError(f"{name} {file} {config.label()}: {result.fault.describe()}")
            atol, rtol = _tolerance(task, config.dtype)
            for got, want in zip(result.outputs.values(), wanted, strict=True):
                np.testing.assert_allclose(got, want, atol=atol * 8, rtol=rtol * 8)
            cycles.append(result.profile.cycles)
        rows.append((config.name, cycles[0], cycles[1]))
    return rows


def _tolerance(task: Task, dtype: str) -> tuple[float, float]:
    tol = task.spec.tolerance.dtypes[dtype]
    return float(tol.atol), float(tol.rtol)


def speed(name: str, file: str, repeats: int) -> tuple[str, int, float]:
    """The config, instructions and best CPU seconds of one program on the task's largest fixed
    hidden config (H2: long enough that binding 16 tiles is a small part of the run)."""
    task = load_task(TASKS / name)
    config = next(c for c in task.spec.configs.hidden.fixed if c.name == "H2")
    setup = config_setup(task, config)
    inputs = draw_inputs(task, config, SEED, task.spec.inputs.distributions[0])
    program = assemble(setup.platform, task.path(file).read_text(), setup.symbols)
    best, count = math.inf, 0
    for _ in range(repeats):
        start = time.process_time()
        result = simulate(program, setup.contract, inputs)
        best = min(best, time.process_time() - start)
        count = result.profile.instructions
    return config.label(), count, best


def geomean(values: list[float]) -> float:
    """The geometric mean."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update docs/accel/BENCHMARK.md")
    parser.add_argument("--speed", nargs="*", default=["colsum", "cumsum", "softmax", "gemm"])
    args = parser.parse_args()
    names = sorted(p.parent.name for p in TASKS.glob("*/task.toml"))
    table = []
    for name in names:
        rows = run_task(name)
        task_speedup = geomean([b / e for _, b, e in rows])
        table.append((name, rows, task_speedup))
        cells = "  ".join(f"{c}: {b}/{e}" for c, b, e in rows)
        print(f"{name:16s} {task_speedup:5.2f}x  {cells}")
    overall = geomean([s for _, _, s in table])
    print(f"geomean over {len(table)} tasks: {overall:.2f}x")
    rates = []
    loads = []
    for name in args.speed:
        for file in ("baseline.asm", "expert.asm"):
            loads.append(os.getloadavg()[0])
            label, count, seconds = speed(name, file, args.repeats)
            rates.append((f"{name} {file.removesuffix('.asm')}, {label}", count, seconds))
            print(
                f"{rates[-1][0]}: {count:,} instructions, {seconds * 1e3:.0f} ms CPU, "
                f"{count / seconds / 1e6:.2f} M instr/s"
            )
    loads.append(os.getloadavg()[0])
    print(f"load average (1 min) during the speed runs: {min(loads):.1f} to {max(loads):.1f}")
    if args.write:
        write(table, overall, rates, args.repeats, (min(loads), max(loads)))
    return 0


def machine() -> str:
    """The CPU model, the cores this process may use, and the Python and NumPy versions."""
    cores = len(os.sched_getaffinity(0))
    python = sys.version.split()[0]
    return f"{devices.cpu_model()}, {cores} cores, Python {python}, NumPy {np.__version__}"


def write(
    table: list[tuple[str, list[tuple[str, int, int]], float]],
    overall: float,
    rates: list[tuple[str, int, float]],
    repeats: int,
    loads: tuple[float, float],
) -> None:
    """Replace the tile section of docs/accel/BENCHMARK.md (between its markers)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cores = len(os.sched_getaffinity(0))
    lines = [
        BEGIN,
        "## The tile platform",
        "",
        f"Measured with `.venv/bin/python scripts/bench_tile.py --write` on {now} ({machine()}; "
        "shared with other work). Simulated cycles of the compiler baseline and of the "
        "expert on each visible config (outputs checked against the reference), and the "
        "expert's speedup: per task the geometric mean over its configs.",
        "",
        "| task | level | C1 | C2 | C3 | C4 | C5 | speedup |",
        "| --- | ---: | --- | --- | --- | --- | --- | ---: |",
    ]
    for name, rows, task_speedup in table:
        level = load_task(TASKS / name).spec.level
        cells = " | ".join(f"{b:,} / {e:,}" for _, b, e in rows)
        lines.append(f"| {name} | {level} | {cells} | {task_speedup:.2f}x |")
    lines += [
        "",
        f"Cells are baseline / expert cycles. Expert vs baseline geometric mean over the "
        f"{len(table)} tasks: **{overall:.2f}x**.",
        "",
        "Simulator speed on tile programs (baselines and experts on the task's H2 config, "
        f"every tile's instructions counted, CPU time of `simulate`, best of {repeats}; the "
        f"1-minute load average on the {cores} cores was {loads[0]:.1f} to {loads[1]:.1f} "
        "during these runs, from other sessions, so these are floors):",
        "",
        "| program | instructions | CPU time | simulated instr/s |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, count, seconds in rates:
        lines.append(
            f"| {name} | {count:,} | {seconds * 1e3:.0f} ms | {count / seconds / 1e6:.2f} M |"
        )
    slow = [name for name, count, seconds in rates if count / seconds < 1e6]
    lines += [
        "",
        "Every program runs above 1 M simulated instructions/s."
        if not slow
        else f"Below the target of 1 M simulated instructions/s here: {len(slow)} of "
        f"{len(rates)} programs.",
        END,
        "",
    ]
    path = ROOT / "docs" / "accel" / "BENCHMARK.md"
    text = path.read_text(encoding="utf-8")
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        text = head + "\n".join(lines).rstrip("\n") + tail
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines)
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
