"""The npu manual's prose chapters, its worked example and its cost microbenchmarks.

The instruction reference is generated from the ISA table (`npu.py`); what lives here is what a
table cannot say: how the memories, the calling convention and the timing model work. Parameter
values are interpolated, so the manual of a task configuration shows that configuration's sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gauntlet.accel.platform import Chapter, Microbenchmark

if TYPE_CHECKING:
    from gauntlet.accel.platforms.npu import NpuParams

#: A complete kernel, shown in the manual and run by the tests: y = 2 * x + 1.
EXAMPLE_SOURCE = """\
; y = 2 * x + 1 for x, y: (ROWS, COLS) fp32 (a0 = x, a1 = y by the calling convention)
    li   r2, ROWS              ; rows per transfer
    li   r3, COLS              ; elements per row
    li   r4, COLS * 4          ; HBM row stride in bytes (fp32)
    li   r5, COLS              ; SRAM row stride in words
    dldv [r0], [a0], r2, r3, r4, r5, 0   ; HBM x -> VSRAM[0 ..), tag 0
    fli  f1, 2.0
    fli  f2, 1.0
    dwait 0                    ; x has landed
    li   r1, 0
    loopi ROWS * COLS // VLEN  ; VL = VLEN at start
        vmuls [r1], [r1], f1
        vadds [r1], [r1], f2
        addi  r1, r1, VLEN
    endloop
    dstv [a1], [r0], r2, r3, r4, r5, 1   ; VSRAM -> HBM y, tag 1
    dwait 1
    halt
"""

#: Symbols and shapes the example runs with.
EXAMPLE_SYMBOLS = {"ROWS": 64, "COLS": 64}


def chapters(p: NpuParams) -> tuple[Chapter, ...]:
    """The prose chapters for one set of parameters."""
    tile = p.mlen * p.mlen
    align = min(p.mlen, p.vlen)
    return (
        Chapter(
            "Machine overview",
            f"""\
The npu is a tensor accelerator. Data lives in **HBM** (off-chip, {p.hbm_bytes_per_cycle} bytes
per cycle) and is moved by the **DMA engine** into two on-chip SRAMs:

- the **vector SRAM** (VSRAM, {p.vsram_words} fp32 words), which the vector unit reads and
  writes, which holds the left operand of the matrix unit, and from which results go back to HBM;
- the **matrix SRAM** (MSRAM, {p.msram_words} fp32 words), which holds the right operand
  ("weights") of the matrix unit.

The **matrix unit** is a {p.mlen} x {p.mlen} weight-stationary systolic array: `mm` multiplies a
VSRAM tile by an MSRAM tile and adds the product into one of {p.accumulators} accumulator
registers (`acc0`..), each a {p.mlen} x {p.mlen} fp32 tile; `mst` writes an accumulator back to
VSRAM. The **vector unit** processes up to VLEN = {p.vlen} elements per instruction, VSRAM to
VSRAM. The **scalar front end** issues every instruction in program order, one per cycle, and
itself runs integer, fp32 and address arithmetic, branches and hardware loops.

A typical kernel: DMA tiles of the inputs into VSRAM and MSRAM, wait, multiply into
accumulators, store them to VSRAM, post-process with vector instructions, DMA the result to
HBM. Fast kernels overlap the next transfer with the current computation (double buffering).
""",
        ),
        Chapter(
            "Memory model",
            f"""\
**HBM** is byte-addressed and holds the regions of the task's memory contract (inputs,
outputs, scratch). Each region has an element type, fp32 (4 bytes) or bf16 (2 bytes); a
transfer's element type is the type of the region its HBM address falls in, and HBM addresses
and row strides must be multiples of that size. A transfer must stay inside one region.
Addresses outside every region fault (`out_of_bounds`), as do writes to input regions
(`protection`). Only the DMA engine accesses HBM.

**The SRAMs** are arrays of fp32 words, addressed in words from 0. Every access must start at a
multiple of the SRAM's alignment: {align} words for VSRAM (min(MLEN, VLEN)), {p.mlen} for MSRAM,
and stay below its capacity (`sram_overflow`). Operand addresses are a register plus an
immediate offset, `[r3]` or `[r3 + 64]`; offsets are checked by the assembler, the register's
value by the simulator.

**Layouts.** A vector operand is VL consecutive words. A tile is MLEN x MLEN = {tile} words,
row-major and contiguous (row i at tile + i * MLEN). Strided DMA converts between row-major
matrices in HBM and tiles: load MLEN rows of MLEN elements with the HBM row stride of the
matrix and an SRAM row stride of MLEN.

**Conversions.** Loads convert to fp32 (exact for bf16); stores round fp32 to the region's
type (to nearest even for bf16). Loads pad each SRAM row from `cols` up to `sstride` with zeros,
which makes the tails of awkward sizes easy: the padding contributes nothing to a product.

**Poison.** Every memory starts filled with NaN and marked unwritten. Reading a word nothing
has written (SRAM, an HBM output or scratch element, an accumulator before `mzero`/`mld`) faults
with `uninitialized_read`. The expected output is never in any memory the program can read.

**Asynchronous DMA.** `dldv`, `dldm`, `dstv` and `dcpy` only enqueue a transfer and tag it
(0..{p.dma_tags - 1}). Until a `dwait` of that tag (or `dfence`) retires it, any access to the
SRAM words it writes, any write to the SRAM words it reads, and any load of HBM elements a store
writes faults with `dma_race`: on real hardware these would read stale or torn data. Waiting
stalls the front end until the tag's transfers have landed. At most {p.dma_outstanding}
transfers may be outstanding (issued and not waited for); issuing another first waits for the
oldest to land and retires it.
""",
        ),
        Chapter(
            "Calling convention",
            f"""\
When the program starts:

- address register `a<i>` holds the base address of region i of the memory contract, in the
  contract's order (inputs, then outputs, then scratch); up to 16 regions are passed;
- every other register is 0 (integer and fp32 registers; `r0` always reads 0 and ignores
  writes); the mask registers are all false;
- VL = VLEN = {p.vlen};
- the accumulators are unwritten; every SRAM word is unwritten.

The assembler knows these symbols, usable in any immediate: every hardware parameter in upper
case (`MLEN` = {p.mlen}, `VLEN` = {p.vlen}, `VSRAM_WORDS` = {p.vsram_words}, ...), each region's
name (its base address), and the task configuration's symbols (shapes such as `M`, `N`, `K`).

The program ends at `halt` or when it runs past its last instruction; queued instructions and
transfers then drain, and the run's cycle count includes them. Results count only once a DMA
store has put them in an output region; output elements never written stay NaN.
""",
        ),
        Chapter(
            "Timing model",
            f"""\
Every instruction executes, functionally, when the front end issues it, in program order; the
timing model then decides when it would run on its unit. The run takes as many cycles as the
last unit or transfer needs to finish.

- **Front end.** Issues one instruction per cycle and runs scalar and control instructions
  itself (1 cycle each). A taken branch costs {p.branch_penalty} extra cycles; the loop-back of
  a hardware loop (`endloop`) does not.
- **Units.** The matrix and vector units each queue up to {p.queue_depth} instructions, the
  DMA engine {p.dma_queue_depth} transfers. A unit runs its instructions one after another;
  each occupies it for its cost (below). The front end stalls (`queue_full`) only when the queue
  it issues to is full.
- **Dependencies.** An instruction starts only after every earlier instruction of another unit
  that writes what it reads, reads what it writes, or writes what it writes (same SRAM words)
  has finished (`memory_dependency`). A scalar instruction reading an fp32 register that a
  vector reduction still computes stalls the front end (`register_dependency`).
- **DMA.** A transfer occupies the engine for `dma_setup` + its bursts / bandwidth: each row
  moves every burst of {p.dma_burst_bytes} bytes it overlaps, whole, at
  {p.hbm_bytes_per_cycle} bytes per cycle, so short rows waste bandwidth and a row that starts
  inside a burst (an unaligned address or row stride) moves one burst more. Its data lands
  `hbm_latency` = {p.hbm_latency} cycles after that; transfers pipeline, so the latency of one
  overlaps the next. `dwait` stalls the front end until the tag's data has landed (`dma_wait`).
- **Overlap.** Units run concurrently. While the matrix unit multiplies tile k, the DMA engine
  can load tile k + 1 into another buffer and the vector unit can post-process tile k - 1:
  double buffering hides transfers behind compute, and a kernel that waits for every transfer
  before computing pays for both.

The profile reports cycles, per-unit busy cycles, stall cycles by cause, DMA bytes and the
instruction count.
""",
        ),
        Chapter(
            "Arithmetic",
            """\
Every arithmetic result is an fp32 value, rounded once to nearest even:

- add, subtract, multiply, divide, min, max, square root and reciprocal are IEEE fp32
  operations;
- `vexp`, `vrsqrt` and `vfma` are computed in double precision and rounded once;
- reductions (`vredsum`) sum exactly and round once; `vredmax` is exact;
- the matrix unit forms each dot product in double precision and rounds once, when it adds to
  the accumulator (`mmb` rounds once for its whole chain); the double-precision sum comes from
  the host's BLAS, so in rare near-ties the last fp32 bit may differ between hosts;
- NaN propagates through min, max and the reductions; comparisons with NaN are false
  (except `ne`).

Integers are 32-bit two's complement and wrap; address registers are 48-bit unsigned.
bf16 data is exact in fp32; `vbf16` rounds a value to bf16 precision to mimic a bf16 datapath.
""",
        ),
        Chapter(
            "A complete example",
            "A kernel computing y = 2 * x + 1 for x, y of shape (ROWS, COLS) fp32, with "
            f"ROWS = {EXAMPLE_SYMBOLS['ROWS']} and COLS = {EXAMPLE_SYMBOLS['COLS']} passed as "
            "symbols by the task:\n\n```asm\n" + EXAMPLE_SOURCE + "```\n",
        ),
    )


# -- microbenchmarks -------------------------------------------------------------------------
# Each measures the cycles one loop iteration adds (the cycles of 2n iterations minus those of n,
# divided by n), which cancels set-up and drain, and compares them with the cost formula.

_FILL_TILES = """\
    li r1, 0
    loopi {tiles} * MLEN * MLEN // VLEN
        vbcast [r1], f0
        addi r1, r1, VLEN
    endloop
    li r2, {tiles} * MLEN * MLEN
    dcpy [r0], [r0], r2, 0
    dwait 0
    mzero acc0
"""

_DMA_SHAPE = """\
    li r2, {rows}
    li r3, {cols}
    li r4, 256
    li r5, {sstride}
    li r1, 0
"""


def _ceil_log2(value: int) -> int:
    return math.ceil(math.log2(value))


def _dma(p: Mapping[str, int | float], rows: int, cols: int, itemsize: int = 4) -> int:
    bursts = -(-cols * itemsize // int(p["dma_burst_bytes"]))
    moved = rows * bursts * int(p["dma_burst_bytes"])
    return int(p["dma_setup"]) + -(-moved // int(p["hbm_bytes_per_cycle"]))


def microbenchmarks() -> tuple[Microbenchmark, ...]:
    """The programs documenting each cost formula; `{n}` is the iteration count."""
    return (
        Microbenchmark(
            "scalar",
            "addi",
            "loopi {n}\n    addi r1, r1, 1\nendloop\n",
            lambda p: 2,
            "one scalar instruction and the endloop: 1 cycle each",
        ),
        Microbenchmark(
            "taken branch",
            "blt",
            "li r2, {n}\ntop:\n    addi r1, r1, 1\n    blt r1, r2, top\n",
            lambda p: 2 + int(p["branch_penalty"]),
            "a software loop pays the taken-branch penalty that endloop avoids",
        ),
        Microbenchmark(
            "vector elementwise",
            "vadd",
            "vbcast [r0], f0\nloopi {n}\n    vadd [r0], [r0], [r0]\n"
            "    vadd [r0], [r0], [r0]\nendloop\n",
            lambda p: max(3, 2 * int(p["vec_cycles"])),
            "two dependent vadds per iteration; the vector unit is the bottleneck",
        ),
        Microbenchmark(
            "vector special function",
            "vexp",
            "vbcast [r0], f0\nloopi {n}\n    vexp [r0], [r0]\n    vexp [r0], [r0]\nendloop\n",
            lambda p: max(3, 2 * int(p["vec_special_cycles"])),
            "exp, reciprocal and rsqrt share the special-function cost",
        ),
        Microbenchmark(
            "vector reduction",
            "vredsum",
            "vbcast [r0], f0\nloopi {n}\n    vredsum f1, [r0]\n    vredsum f2, [r0]\nendloop\n",
            lambda p: max(3, 2 * (int(p["vec_reduce_cycles"]) + _ceil_log2(int(p["vlen"])))),
            "an adder tree of ceil(log2(VL)) levels after the base cost",
        ),
        Microbenchmark(
            "tile multiply",
            "mm",
            _FILL_TILES.format(tiles=1) + "loopi {n}\n    mm acc0, [r0], [r0]\nendloop\n",
            lambda p: 2 * int(p["mlen"]),
            "MLEN cycles to load the weights into the array, MLEN to stream the rows",
        ),
        Microbenchmark(
            "batched tile multiply",
            "mmb",
            _FILL_TILES.format(tiles=4) + "loopi {n}\n    mmb acc0, [r0], [r0], 4\nendloop\n",
            lambda p: 5 * int(p["mlen"]),
            "4 tile pairs: the next weights load while the current rows stream",
        ),
        Microbenchmark(
            "vector-matrix multiply",
            "mv",
            _FILL_TILES.format(tiles=1) + "loopi {n}\n    mv [r0], [r0], [r0]\nendloop\n",
            lambda p: int(p["mlen"]) + 1,
            "one row through the array; the weight load dominates",
        ),
        Microbenchmark(
            "accumulator store",
            "mst",
            _FILL_TILES.format(tiles=1)
            + "li r6, MLEN * MLEN\nloopi {n}\n    mst [r6], acc0\nendloop\n",
            lambda p: int(p["mlen"]),
            "one accumulator row per cycle",
        ),
        Microbenchmark(
            "DMA load bandwidth",
            "dldv",
            _DMA_SHAPE.format(rows=16, cols=32, sstride=32)
            + "loopi {n}\n    dldv [r1], [a0], r2, r3, r4, r5, 0\n    addi r1, r1, 512\n"
            "endloop\ndfence\n",
            lambda p: _dma(p, 16, 32),
            "back-to-back 16 x 32 fp32 loads into distinct buffers: the engine's occupancy",
        ),
        Microbenchmark(
            "DMA load, short rows",
            "dldv",
            _DMA_SHAPE.format(rows=16, cols=8, sstride=32)
            + "loopi {n}\n    dldv [r1], [a0], r2, r3, r4, r5, 0\n    addi r1, r1, 512\n"
            "endloop\ndfence\n",
            lambda p: _dma(p, 16, 8),
            "16 rows of 32 bytes each still move a whole burst per row",
        ),
        Microbenchmark(
            "DMA load latency",
            "dldv",
            _DMA_SHAPE.format(rows=16, cols=32, sstride=32)
            + "loopi {n}\n    dldv [r1], [a0], r2, r3, r4, r5, 0\n    dwait 0\nendloop\n",
            lambda p: _dma(p, 16, 32) + int(p["hbm_latency"]) + 2,
            "load then wait, serialized: occupancy + hbm_latency + issue of dldv and endloop",
        ),
        Microbenchmark(
            "DMA store bandwidth",
            "dstv",
            "li r1, 0\nloopi cdiv(32, VLEN)\n    vbcast [r1], f0\n    addi r1, r1, VLEN\nendloop\n"
            + _DMA_SHAPE.format(rows=1, cols=32, sstride=32)
            + "loopi {n}\n    dstv [a1], [r0], r2, r3, r4, r5, 0\nendloop\ndfence\n",
            lambda p: _dma(p, 1, 32),
            "back-to-back one-row stores",
        ),
        Microbenchmark(
            "on-chip copy",
            "dcpy",
            "li r1, 0\nloopi MLEN * MLEN // VLEN\n    vbcast [r1], f0\n    addi r1, r1, VLEN\n"
            "endloop\nli r2, MLEN * MLEN\nloopi {n}\n    dcpy [r0], [r0], r2, 0\n    dwait 0\n"
            "endloop\n",
            lambda p: (
                int(p["dma_setup"])
                + -(-(int(p["mlen"]) ** 2) // int(p["sram_copy_words_per_cycle"]))
                + 2
            ),
            "one tile VSRAM -> MSRAM, waited each time (no HBM latency)",
        ),
    )
