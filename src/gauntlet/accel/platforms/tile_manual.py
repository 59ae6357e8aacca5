"""The tile manual's prose chapters, its syntax and fault chapters, and its cost microbenchmarks.

The instruction reference is generated from the ISA table (`tile.py`); what lives here is what a
table cannot say: the array, the memories, the calling convention, how tiles talk, and the
timing model. Parameter values are interpolated, so the manual of a task configuration shows
that configuration's sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gauntlet.accel.faults import FAULT_DOCS as COMMON_FAULTS
from gauntlet.accel.platform import Chapter, Microbenchmark

if TYPE_CHECKING:
    from gauntlet.accel.platforms.tile import TileParams

SYNTAX = """\
One statement per line. `;` or `#` starts a comment. A label is a name followed by `:` at the
start of a line; an instruction may follow it. Mnemonics and register names are
case-insensitive; symbols are not.

```asm
.equ ROWS_PER_TILE, cdiv(M, GRID_ROWS * GRID_COLS)   ; a symbol for later immediates
        muli r4, r3, ROWS_PER_TILE                   ; r3 = this tile's index
top:    vadd [r8], [r9 + 64], [r10]
        addi r5, r5, -1
        bne  r5, r0, top
```

- Registers: `r0`..`r31` (integers, `r0` reads 0), `f0`..`f31` (fp32), `a0`..`a15`
  (external-memory addresses).
- Immediates are integer expressions: literals (`42`, `0x2a`, `0b101`), symbols, `+ - * // %`,
  parentheses and `min`, `max`, `cdiv`. `/` is not integer division and is rejected where an
  integer is expected. Floating-point immediates (`fli`) also accept `inf`, `-inf`, `nan`.
- Memory operands are `[reg]` or `[reg + offset]` / `[reg - offset]`: local memory through an
  `r` register (in words), external memory through an `a` register (in bytes).
- `.equ NAME, expression` defines a symbol for the rest of the program.

The assembler rejects, with line, column, what it found and what it expected: unknown
mnemonics and registers, wrong operand counts, immediates out of range, misaligned offsets,
undefined or duplicate labels, unmatched hardware loops and branches into or out of them.
`check_syntax` prints `All checks passed. 0 error(s), 0 warning(s)` for a clean program.
"""

#: The manual's fault table: the common faults in the array's terms, and its own two.
FAULT_DOCS: dict[str, str] = {
    **{k: v for k, v in COMMON_FAULTS.items() if k not in ("sram_overflow", "dma_race")},
    "sram_overflow": "a local-memory access (or a send's destination) outside the LMEM_WORDS "
    "words of the tile's local memory",
    "dma_race": (
        "an access to local words that a DMA transfer not yet waited for (`dwait`) writes, a "
        "write to words a transfer or a send still reads, or a load of external memory a "
        "store not yet waited for writes"
    ),
    "stream_race": (
        "an access to local words a send delivers before a `wait` took its post; a send into "
        "words of the receiver that an earlier send delivered and the receiver has not "
        "released (`rel`), or that it released only after the new send starts (the sender "
        "must learn of the release from a `signal`)"
    ),
    "deadlock": (
        "every tile that has not halted waits (`wait`) for posts that no running tile can "
        "make any more; the fault lists each waiting tile, its line and its semaphore"
    ),
}


def chapters(p: TileParams) -> tuple[Chapter, ...]:
    """The prose chapters for one set of parameters."""
    tiles = p.grid_rows * p.grid_cols
    return (
        Chapter(
            "Machine overview",
            f"""\
The tile platform is a spatial array of {p.grid_rows} x {p.grid_cols} = {tiles} compute tiles
(`GRID_ROWS` x `GRID_COLS`), in the style of an AI-engine array. Tile `(row, col)` has index
`row * GRID_COLS + col`. Each tile has:

- a **scalar front end** that issues its program in order, one instruction per cycle, and runs
  integer, fp32 and address arithmetic, branches and hardware loops itself;
- a **vector unit** processing up to VLEN = {p.vlen} words per instruction, {p.lanes} per cycle;
- a **matrix unit** that accumulates an MLEN x MLEN = {p.mlen} x {p.mlen} panel product over
  any inner dimension k at {p.macs_per_cycle} multiply-accumulates per cycle (`mmac`, `mmact`,
  `mvac`);
- a **local memory** (LMEM) of {p.lmem_words} fp32 words, the only memory its units touch;
- a **DMA engine** between its local memory and the **external memory** shared by the whole
  array. Row 0 is nearest the external memory: each column reaches it through its own **shim
  link** ({p.shim_bytes_per_cycle} bytes per cycle), and the external memory serves
  {p.ext_bytes_per_cycle} bytes per cycle to all columns together;
- a **stream engine** that sends words from its local memory into another tile's local memory
  over the **mesh**: links of {p.link_bytes_per_cycle} bytes per cycle between neighbouring
  tiles, {p.hop_latency} cycles per hop, routed along the row first, then the column;
- {p.semaphores} **semaphores**, posted by other tiles' sends and signals, taken by `wait`.

Every tile runs the same program. It finds its place in registers (`r1` row, `r2` column,
`r3` index, see Calling convention) and branches or computes addresses from them. The array is
fast when the work is spread over the tiles, when transfers from external memory are spread
over the columns and overlap computation, and when data that several tiles need is loaded once
and passed between neighbours instead of being loaded by each.
""",
        ),
        Chapter(
            "Memory model",
            f"""\
**External memory** is byte-addressed and holds the regions of the task's memory contract
(inputs, outputs, scratch). Each region has an element type, fp32 (4 bytes) or bf16 (2 bytes);
a transfer's element type is the type of the region its address falls in, and addresses and row
strides must be multiples of that size. A transfer must stay inside one region. Addresses
outside every region fault (`out_of_bounds`), as do writes to input regions (`protection`).
Only DMA engines access external memory.

**Local memory** is an array of {p.lmem_words} fp32 words per tile, addressed in words from 0,
with no alignment requirement. Operand addresses are a register plus an immediate offset,
`[r8]` or `[r8 + 64]`. A vector operand is VL consecutive words; a matrix operand is a
row-major contiguous block (an MLEN x k panel is MLEN rows of k words).

**Conversions.** Loads convert to fp32 (exact for bf16) and pad each local row from `cols` up
to `lstride` with zeros; stores round fp32 to the region's type (to nearest even for bf16).

**Poison.** Every memory starts filled with NaN and marked unwritten; reading a word nothing has
written faults with `uninitialized_read`. The expected output is never in any memory the
program can read.

**Asynchronous transfers.** `dld`, `dst` and `send` only enqueue a transfer and tag it
(0..{p.dma_tags - 1}). Until a `dwait` of that tag retires it, any access to the local words a
load writes and any write to the local words a store or send reads fault with `dma_race`. At
most {p.dma_outstanding} of a tile's transfers may be outstanding; issuing another first waits
for the oldest and retires it.
""",
        ),
        Chapter(
            "Calling convention",
            f"""\
When the program starts, on every tile:

- `r1` holds the tile's row (0..{p.grid_rows - 1}), `r2` its column (0..{p.grid_cols - 1}) and
  `r3` its index (row * GRID_COLS + column, 0..{tiles - 1}); every other integer and fp32
  register is 0 (`r0` always reads 0 and ignores writes);
- address register `a<i>` holds the base address of region i of the memory contract, in the
  contract's order (inputs, then outputs, then scratch);
- VL = VLEN = {p.vlen}; every local word is unwritten; every semaphore has no posts.

The assembler knows these symbols, usable in any immediate: every hardware parameter in upper
case (`GRID_ROWS` = {p.grid_rows}, `GRID_COLS` = {p.grid_cols}, `VLEN` = {p.vlen}, `MLEN` =
{p.mlen}, `LMEM_WORDS` = {p.lmem_words}, ...), each region's name (its base address), and the
task configuration's symbols (shapes such as `M`, `N`, `K`, and `itemsize`).

A tile's program ends at `halt` or when it runs past its last instruction; its queued
instructions and transfers then drain. The run ends when every tile has ended, and takes as many
cycles as the last tile needs. Results count only once a DMA store has put them in an output
region; output elements never written stay NaN.
""",
        ),
        Chapter(
            "Streams and semaphores",
            """\
Tiles share nothing but the external memory; data moves between them with `send`, which copies
words from this tile's local memory into the receiver's and, when they arrive, posts one of the
receiver's semaphores. A semaphore counts posts; `wait sem, count` takes `count` of them, in
order, and stalls the tile until they have arrived. `signal tile, sem` posts without data.

The protocol the simulator enforces, like the locks of a real array:

1. The receiver touches delivered words only after a `wait` took the send's post (else
   `stream_race`).
2. Delivered words stay the receiver's until it releases them with `rel`; a send into words
   still held faults (`stream_race`), and so does a send that would start before the
   receiver released its destination. A sender learns of the release from a `signal` the
   receiver makes after `rel`: the usual pattern is a double buffer, two destination buffers,
   and a credit semaphore on the sender.
3. The sender may overwrite its source words only after `dwait` of the send's tag.

```asm
; a producer (tile P) streams blocks into two buffers of a consumer (tile C)
; producer, block i:                      consumer, block i:
;   wait 1, 1      (credit, from i >= 2)    wait 0, 1       (block i arrived)
;   send [r8], r4, rC, [rB], 0, 0           ... use [rB] ...
;   dwait 0                                 rel [rB], r4
;                                           signal rP, 1     (credit back)
```

When every tile that has not halted waits and no running tile can post, the run stops with a
`deadlock` fault that lists each waiting tile, its line and its semaphore.
""",
        ),
        Chapter(
            "Timing model",
            f"""\
Every instruction executes, functionally, when its tile's front end issues it, in program
order; the timing model then decides when it would run. Each tile has its own clock, units and
queues; the run takes as many cycles as the last tile needs.

- **Front end.** Issues one instruction per cycle and runs scalar and control instructions
  itself (1 cycle each). A taken branch costs {p.branch_penalty} extra cycles; the loop-back
  of a hardware loop (`endloop`) does not.
- **Units.** The vector and matrix units each queue up to {p.queue_depth} instructions, the DMA
  and stream engines {p.dma_queue_depth}. A unit runs its instructions in order, each for its
  cost; the front end stalls (`queue_full`) only when the queue it issues to is full. An
  instruction starts only after every earlier instruction of another unit that conflicts with
  it on the same local words has finished (`memory_dependency`).
- **External memory.** A transfer occupies its tile's DMA engine and its column's shim link for
  dma_setup = {p.dma_setup} + cdiv(bursts * {p.burst_bytes}, {p.shim_bytes_per_cycle}) cycles
  and the external memory for cdiv(bursts * {p.burst_bytes}, {p.ext_bytes_per_cycle}), where
  `bursts` counts the {p.burst_bytes}-byte bursts its rows touch, whole. These links are
  shared: a transfer takes the earliest slot in which its shim and the external memory are
  both free, so tiles of one column, or many columns at once, queue (`link_contention`). Its
  data lands ext_latency = {p.ext_latency} cycles later plus hop_latency per row up from the
  shim.
- **Mesh.** A send occupies its stream engine and every link of its route for stream_setup =
  {p.stream_setup} + cdiv(4 * n, {p.link_bytes_per_cycle}) cycles (the links are booked like the
  shims: crossing sends queue, `link_contention`) and arrives hops * hop_latency cycles after.
  A signal arrives hops * hop_latency cycles after it is issued, plus one.
- **Semaphores.** `wait` moves the tile's clock to the arrival of the last post it takes
  (`semaphore_wait`).
- **Vector unit.** An elementwise instruction costs cdiv(VL, LANES) cycles; exp, tanh,
  reciprocal and rsqrt special_cycles = {p.special_cycles} times that; reductions add
  reduce_cycles = {p.reduce_cycles} + ceil(log2(VL)).
- **Matrix unit.** MLEN * MLEN * k multiply-accumulates at {p.macs_per_cycle} per cycle.

The profile reports the array's cycles, per-unit busy cycles and stall cycles summed over the
tiles (with `semaphore_wait` and `link_contention`), external-memory bytes and the instruction
count of all tiles.

**What is not modelled**, and why it cannot be used to look faster: the front end's
instruction fetch (every tile runs from its own program memory); bank conflicts inside a local
memory (each unit's accesses are serialized by its own timeline); the mesh's flow control
below a whole send (a send holds its whole route for its whole transfer, which is the slower
case); external-memory refresh and page effects (bandwidth and burst granularity are charged
per transfer).
""",
        ),
    )


def _only_tile(body: str, tile: int = 0) -> str:
    """A microbenchmark run by one tile; the others halt at once (their cycles do not count)."""
    return f"li r9, {tile}\nbne r3, r9, idle\n{body}idle:\n    halt\n"


def _elementwise(p: Mapping[str, int | float], vl: int) -> int:
    return -(-vl // int(p["lanes"]))


def _dma(p: Mapping[str, int | float], rows: int, row_bytes: int) -> int:
    bursts = rows * -(-row_bytes // int(p["burst_bytes"]))
    moved = bursts * int(p["burst_bytes"])
    return int(p["dma_setup"]) + -(-moved // int(p["shim_bytes_per_cycle"]))


def _send(p: Mapping[str, int | float], words: int) -> int:
    return int(p["stream_setup"]) + -(-4 * words // int(p["link_bytes_per_cycle"]))


_FILL = "li r8, 0\nloopi 8\n    vbcast [r8], f0\n    addi r8, r8, VLEN\nendloop\n"
_DMA = "li r4, {rows}\nli r5, {cols}\nli r6, {cols} * 4\nli r7, {cols}\nli r8, 0\n"


def microbenchmarks() -> tuple[Microbenchmark, ...]:
    """The programs documenting each cost formula; `{n}` is the iteration count."""
    return (
        Microbenchmark(
            "scalar",
            "addi",
            _only_tile("loopi {n}\n    addi r10, r10, 1\nendloop\n"),
            lambda p: 2,
            "one scalar instruction and the endloop: 1 cycle each",
        ),
        Microbenchmark(
            "taken branch",
            "blt",
            _only_tile("li r11, {n}\ntop:\n    addi r10, r10, 1\n    blt r10, r11, top\n"),
            lambda p: 2 + int(p["branch_penalty"]),
            "a software loop pays the taken-branch penalty that endloop avoids",
        ),
        Microbenchmark(
            "vector elementwise",
            "vadd",
            _only_tile(
                _FILL + "loopi {n}\n    vadd [r0], [r0], [r0]\n    vadd [r0], [r0], [r0]\nendloop\n"
            ),
            lambda p: max(3, 2 * _elementwise(p, int(p["vlen"]))),
            "two dependent vadds per iteration at VL = VLEN: cdiv(VL, LANES) cycles each",
        ),
        Microbenchmark(
            "vector special function",
            "vexp",
            _only_tile(_FILL + "loopi {n}\n    vexp [r0], [r0]\n    vexp [r0], [r0]\nendloop\n"),
            lambda p: max(3, 2 * int(p["special_cycles"]) * _elementwise(p, int(p["vlen"]))),
            "exp, tanh, reciprocal and rsqrt: special_cycles per group of LANES",
        ),
        Microbenchmark(
            "vector reduction",
            "vredsum",
            _only_tile(_FILL + "loopi {n}\n    vredsum f1, [r0]\n    vredsum f2, [r0]\nendloop\n"),
            lambda p: max(
                3,
                2
                * (
                    _elementwise(p, int(p["vlen"]))
                    + int(p["reduce_cycles"])
                    + math.ceil(math.log2(int(p["vlen"])))
                ),
            ),
            "an adder tree of ceil(log2(VL)) levels after the elementwise pass",
        ),
        Microbenchmark(
            "panel multiply",
            "mmac",
            _only_tile(
                "li r8, 0\nloopi cdiv(MLEN * MLEN * 4, VLEN)\n    vbcast [r8], f0\n"
                "    addi r8, r8, VLEN\nendloop\n"
                "loopi {n}\n    mmac [r0], [r0 + MLEN * MLEN], [r0 + MLEN * MLEN], 2 * MLEN\n"
                "endloop\n"
            ),
            lambda p: max(2, -(-2 * int(p["mlen"]) ** 3 // int(p["macs_per_cycle"]))),
            "MLEN x MLEN x 2 MLEN multiply-accumulates at MACS_PER_CYCLE",
        ),
        Microbenchmark(
            "matrix-vector multiply",
            "mvac",
            _only_tile(
                "li r8, 0\nloopi cdiv(MLEN * 8 + 8, VLEN)\n    vbcast [r8], f0\n"
                "    addi r8, r8, VLEN\nendloop\n"
                "loopi {n}\n    mvac [r0], [r0 + 8], [r0], 8\nendloop\n"
            ),
            lambda p: max(2, -(-8 * int(p["mlen"]) // int(p["macs_per_cycle"]))),
            "MLEN rows of 8 times a vector",
        ),
        Microbenchmark(
            "DMA load bandwidth",
            "dld",
            _only_tile(
                _DMA.format(rows=16, cols=32)
                + "loopi {n}\n    dld [r8], [a0], r4, r5, r6, r7, 0\n    addi r8, r8, 512\n"
                "    remi r8, r8, LMEM_WORDS // 512 * 512\nendloop\n"
            ),
            lambda p: max(3, _dma(p, 16, 128)),
            "back-to-back 16 x 32 fp32 loads: the shim link's occupancy",
        ),
        Microbenchmark(
            "DMA load latency",
            "dld",
            _only_tile(
                _DMA.format(rows=16, cols=32)
                + "loopi {n}\n    dld [r8], [a0], r4, r5, r6, r7, 0\n    dwait 0\nendloop\n"
            ),
            lambda p: _dma(p, 16, 128) + int(p["ext_latency"]) + int(p["hop_latency"]) + 2,
            "load then wait: occupancy, latency, one hop up to row 0, issue of dld and endloop",
        ),
        Microbenchmark(
            "DMA store bandwidth",
            "dst",
            _only_tile(
                _FILL
                + _DMA.format(rows=1, cols=32)
                + "loopi {n}\n    dst [a1], [r8], r4, r5, r6, r7, 0\nendloop\n"
            ),
            lambda p: max(2, _dma(p, 1, 128)),
            "back-to-back one-row stores",
        ),
        Microbenchmark(
            "send bandwidth",
            "send",
            "li r9, 1\nbeq r3, r9, receiver\nbne r3, r0, done\n"
            "li r8, 0\nloopi 128 // VLEN\n    vbcast [r8], f0\n    addi r8, r8, VLEN\n"
            "endloop\nli r4, 128\nli r6, 0\nloopi {n}\n"
            "    send [r0], r4, r9, [r6], 0, 0\n    addi r6, r6, 128\nendloop\nhalt\n"
            "receiver:\nwait 0, {n}\ndone:\n",
            lambda p: max(3, _send(p, 128)),
            "back-to-back sends of 128 words to a neighbour, taken at the end in one wait",
        ),
        Microbenchmark(
            "shared mesh link",
            "send",
            "li r9, 2\nbge r3, r9, receiver\n"
            "li r8, 0\nloopi 64 // VLEN\n    vbcast [r8], f0\n    addi r8, r8, VLEN\nendloop\n"
            "li r4, 64\nli r5, 2\nmuli r6, r3, 8192\nloopi {n}\n"
            "    send [r0], r4, r5, [r6], 0, 0\n    addi r6, r6, 64\nendloop\nhalt\n"
            "receiver:\nbne r3, r9, done\nwait 0, 2 * {n}\ndone:\n",
            lambda p: max(3, 2 * _send(p, 64)),
            "tiles 0 and 1 both send to tile 2: their routes share the link (0, 1) -> (0, 2), "
            "so the sends take turns",
        ),
    )
