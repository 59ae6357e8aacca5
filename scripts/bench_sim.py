"""Simulator speed: simulated instructions per second on representative npu programs.

    .venv/bin/python scripts/bench_sim.py            # print the table
    .venv/bin/python scripts/bench_sim.py --write    # also write docs/accel/BENCHMARK.md

Each program is a working kernel whose output is checked against NumPy, so the figures are for
real code paths. Time is the CPU time of this process (`time.process_time`), best of several
runs, so other processes on a shared machine inflate it less than wall-clock time would; it
covers `simulate` (binding, running, reading outputs back), not assembly.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gauntlet import devices
from gauntlet.accel import MemoryContract, SimResult, assemble, get_platform, simulate

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Bench:
    name: str
    what: str
    source: str
    contract: MemoryContract
    inputs: dict[str, np.ndarray]
    check: Callable[[dict[str, np.ndarray]], None]


def scalar_loops() -> Bench:
    """Address arithmetic of a three-deep tiled loop nest: scalar and control only."""
    source = """
        li r10, 0
        li r20, 64
    outer:
        li r11, 0
        loopi 64
            loopi 16
                muli r12, r10, 4096
                add  r13, r12, r11
                addi r14, r13, 32
                slli r15, r14, 2
                max  r16, r15, r13
                addi r11, r11, 1
            endloop
            addi r17, r17, 1
        endloop
        addi r10, r10, 1
        blt  r10, r20, outer
        li r2, 1
        li r3, 1
        li r4, 4
        li r5, 32
        itof f1, r17
        vbcast [r0], f1
        dstv [a1], [r0], r2, r3, r4, r5, 0
        dwait 0
    """
    contract = MemoryContract.pack(inputs={"x": (1,)}, outputs={"y": (1,)})

    def check(out: dict[str, np.ndarray]) -> None:
        assert out["y"][0] == 64 * 64

    return Bench(
        "scalar loops",
        "integer arithmetic, hardware loops, branches",
        source,
        contract,
        {"x": np.zeros(1, np.float32)},
        check,
    )


def vector_softmax(rows: int = 512, passes: int = 8) -> Bench:
    """Row softmax of a (rows, 64) fp32 matrix, `passes` times in place: reductions, exp and
    the scalar fp32 arithmetic between them."""
    source = f"""
        li r2, {rows}
        li r3, 64
        li r4, 256
        li r5, 64
        dldv [r0], [a0], r2, r3, r4, r5, 0
        fli f9, 1.0
        li r7, {rows * 64}          ; scratch vector
        dwait 0
        loopi {passes}
        li r1, 0
        loopi {rows}
            vmax    [r7], [r1], [r1 + 32]
            vredmax f1, [r7]
            fsub    f2, f0, f1
            vadds   [r1], [r1], f2
            vadds   [r1 + 32], [r1 + 32], f2
            vexp    [r1], [r1]
            vexp    [r1 + 32], [r1 + 32]
            vadd    [r7], [r1], [r1 + 32]
            vredsum f3, [r7]
            fdiv    f4, f9, f3
            vmuls   [r1], [r1], f4
            vmuls   [r1 + 32], [r1 + 32], f4
            addi    r1, r1, 64
        endloop
        endloop
        dstv [a1], [r0], r2, r3, r4, r5, 1
        dwait 1
    """
    x = np.random.default_rng(0).standard_normal((rows, 64)).astype(np.float32)
    contract = MemoryContract.pack(inputs={"x": (rows, 64)}, outputs={"y": (rows, 64)})

    def check(out: dict[str, np.ndarray]) -> None:
        expected = x.astype(np.float64)
        for _ in range(passes):
            e = np.exp(expected - expected.max(axis=1, keepdims=True))
            expected = e / e.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(out["y"], expected, rtol=1e-5)

    return Bench(
        "vector softmax",
        f"{passes} x {rows} rows of 64: 12 vector/fp32 ops per row",
        source,
        contract,
        {"x": x},
        check,
    )


def tile_gemm(tiles: int = 5, repeat: int = 64) -> Bench:
    """C = A @ B with every tile resident in SRAM: the matrix unit's inner loop."""
    n = tiles * 32
    source = f"""
        li r2, {n}
        li r3, 32
        li r4, {n * 4}
        li r5, 32
        ; A and B as column blocks of 32: block j of A at VSRAM j * n * 32 (tiles contiguous)
        li r1, 0
        mova a5, a0
        mova a6, a1
        loopi {tiles}
            dldv [r1], [a5], r2, r3, r4, r5, 0
            dldm [r1], [a6], r2, r3, r4, r5, 0
            addi r1, r1, {n * 32}
            addai a5, a5, 128
            addai a6, a6, 128
        endloop
        dfence
        li r15, {tiles * n * 32}           ; C, stored as column blocks too
        loopi {repeat}                     ; the same product again: more instructions to time
        li r10, 0                          ; i: tile row of A (offset within a block)
        loopi {tiles}
            li r11, 0                      ; j: column block of B
            loopi {tiles}
                mzero acc0
                mov  r12, r10              ; A block k at k * n * 32, row tile i
                muli r13, r11, {n * 32}
                loopi {tiles}
                    mm   acc0, [r12], [r13]
                    addi r12, r12, {n * 32}
                    addi r13, r13, 1024
                endloop
                muli r14, r11, {n * 32}
                add  r14, r14, r10
                add  r14, r14, r15
                mst  [r14], acc0
                addi r11, r11, 1
            endloop
            addi r10, r10, 1024
        endloop
        endloop
        li r1, {tiles * n * 32}
        mova a5, a2
        loopi {tiles}
            dstv [a5], [r1], r2, r3, r4, r5, 1
            addi r1, r1, {n * 32}
            addai a5, a5, 128
        endloop
        dfence
    """
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    contract = MemoryContract.pack(inputs={"a": (n, n), "b": (n, n)}, outputs={"c": (n, n)})

    def check(out: dict[str, np.ndarray]) -> None:
        np.testing.assert_allclose(out["c"], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)

    return Bench(
        "tile GEMM",
        f"{repeat} x {tiles**3} mm on 32x32 tiles, 3 loop ops each",
        source,
        contract,
        {"a": a, "b": b},
        check,
    )


def measure(benches: list[Bench], repeats: int) -> list[dict[str, float]]:
    """Best CPU time of each program over `repeats` rounds.

    The rounds take the programs in turn, so a spell of contention on a shared machine slows
    one run of each rather than every run of one.
    """
    npu = get_platform("npu")
    programs = [assemble(npu, b.source, b.contract.symbols()) for b in benches]
    best = [float("inf")] * len(benches)
    results: list[SimResult] = []
    for _ in range(repeats):
        results = []
        for i, (bench, program) in enumerate(zip(benches, programs, strict=True)):
            start = time.process_time()
            results.append(simulate(program, bench.contract, bench.inputs))
            best[i] = min(best[i], time.process_time() - start)
    figures = []
    for bench, result, seconds in zip(benches, results, best, strict=True):
        assert result.fault is None, result.fault
        bench.check(result.outputs)
        count = result.profile.instructions
        figures.append(
            {
                "instructions": count,
                "seconds": seconds,
                "rate": count / seconds,
                "cycles": result.profile.cycles,
            }
        )
    return figures


def numpy_floor(repeats: int) -> dict[str, float]:
    """Microseconds NumPy alone needs for the core of one vector and one tile instruction."""
    a = np.ones(32, np.float32)
    out = np.empty(32, np.float32)
    tile = np.ones((32, 32), np.float64)  # the SRAM's float64 copy, as `mm` reads it
    acc = np.zeros((32, 32), np.float32)
    product = np.empty((32, 32), np.float64)
    total = np.empty((32, 32), np.float64)

    def vector() -> None:
        np.add(a, a, out=out)

    def matrix() -> None:
        np.dot(tile, tile, product)
        total[...] = acc
        np.add(total, product, total)
        acc[...] = total

    figures = {}
    for name, op in (("vadd", vector), ("mm", matrix)):
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            for _ in range(10_000):
                op()
            best = min(best, (time.process_time() - start) / 10_000)
        figures[name] = best * 1e6
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="write docs/accel/BENCHMARK.md")
    args = parser.parse_args()
    benches = [scalar_loops(), vector_softmax(), tile_gemm()]
    rows = list(zip(benches, measure(benches, args.repeats), strict=True))
    for bench, figures in rows:
        print(
            f"{bench.name:15s} {figures['instructions']:>9,d} instructions "
            f"{figures['seconds'] * 1e3:8.1f} ms  {figures['rate'] / 1e6:6.2f} M instr/s"
        )
    floor = numpy_floor(args.repeats)
    print(
        f"NumPy alone: {floor['vadd']:.2f} us per 32-lane add, {floor['mm']:.2f} us per "
        "32x32 float64 tile product accumulated into fp32"
    )
    if args.write:
        write_report(rows, floor, args.repeats)
    return 0


def write_report(
    rows: list[tuple[Bench, dict[str, float]]], floor: dict[str, float], repeats: int
) -> None:
    import ml_dtypes

    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    cores = len(os.sched_getaffinity(0))
    lines = [
        "# Simulator speed",
        "",
        "Measured with `.venv/bin/python scripts/bench_sim.py --write` on "
        f"{today}: {devices.cpu_model()}, {cores} cores (the benchmark uses one), Python "
        f"{sys.version.split()[0]}, NumPy {np.__version__}, ml-dtypes {ml_dtypes.__version__}. "
        f"Time is the simulating process's CPU time, best of {repeats} rounds that run the "
        "programs in turn; the machine was shared with other work, so the figures are a floor "
        "rather than a ceiling.",
        "",
        "| program | what it exercises | instructions | CPU time | simulated instr/s |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for bench, f in rows:
        lines.append(
            f"| {bench.name} | {bench.what} | {int(f['instructions']):,} | "
            f"{f['seconds'] * 1e3:.0f} ms | {f['rate'] / 1e6:.2f} M |"
        )
    slow = [bench.name for bench, f in rows if f["rate"] < 1e6]
    verdict = (
        "Every program runs above 1 M simulated instructions/s."
        if not slow
        else f"Below 1 M simulated instructions/s: {', '.join(slow)}."
    )
    lines += [
        "",
        "Each program is a working kernel; its output is checked against NumPy before the "
        "figure is recorded. See `scripts/bench_sim.py` for the sources. "
        f"{verdict}",
        "",
        "## Where the time goes",
        "",
        "The simulator compiles each straight-line run of instructions (up to a label, a loop "
        "body or the instruction after a loop) into one Python function on first use "
        "(`gauntlet/accel/codegen.py`): operands are literals, an address is computed and "
        "checked once per block until its register changes, the instructions of a block that "
        "access the same operand share one view of SRAM (built once per run when the address "
        "is on the hardwired-zero register, kept per address for a tile at a register "
        "address), and the front end's clock stays a local. A block that is a loop body on "
        "its own runs several iterations per call. A scalar or control instruction costs "
        "about a hundred nanoseconds, so loop and address arithmetic is cheap. A vector or "
        "tile instruction pays for its timing model (queue, unit timeline, scoreboard record) "
        f"and its NumPy calls: on this machine NumPy alone takes {floor['vadd']:.2f} us for a "
        f"32-lane add and {floor['mm']:.2f} us for a 32 x 32 tile product accumulated as the "
        "matrix unit does (one dgemm into float64 scratch, the fp32 accumulator widened, one "
        "float64 add, one rounding back), of which the dgemm is about 1.9 us.",
        "",
        "The matrix instructions read their SRAM operands as float64 (`Field.wide`): each SRAM "
        "keeps a float64 copy of its words, made current word by word by the first wide read "
        "after a write and marked stale by every write (only in programs that read wide, so "
        "vector code pays nothing), and the products and sums go into float64 scratch kept "
        "per machine (`Instruction.work`). Nothing is computed differently: the same dgemm "
        "on the same float64 values and layout, the same float64 addition (accumulator "
        "first) and the same single rounding to fp32, so every result stays bit-identical; "
        "`tests/accel/test_speed_equivalence.py` pins the simulator's outputs, cycles and "
        "faults against the instruction-by-instruction simulator it replaced. Tile-granular "
        "code is still bound by the tile product: going further would need fewer NumPy calls "
        "per `mm` (the rounding points the manual promises allow no fewer than a dgemm, a "
        "widening, an add and a rounding) or a faster dgemm.",
        "",
        f"Before the float64 copies and loop blocks (commit 41e5bb5, measured on {today} on "
        "this machine in runs alternating with the ones above, best of each): scalar loops "
        "9.03 M, vector softmax 1.05 M, tile GEMM 0.83 M instructions/s. Before the block "
        "compiler (one "
        "pre-bound closure per instruction; 2026-11-22, same machine type): scalar loops "
        "4.52 M, vector softmax 0.54 M, tile GEMM 0.45 M instructions/s.",
        "",
    ]
    path = ROOT / "docs" / "accel" / "BENCHMARK.md"
    # Keep the tile platform's section, which scripts/bench_tile.py writes between markers.
    kept = path.read_text(encoding="utf-8").partition("<!-- tile:begin -->")
    tail = kept[1] + kept[2] if kept[1] else ""
    path.write_text("\n".join(lines) + ("\n" + tail if tail else ""), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
