"""The rvv manual's prose chapters, its syntax chapter, worked example and cost microbenchmarks.

The instruction reference is generated from the ISA table (`rvv.py`); what lives here is what a
table cannot say: the vector programming model (VL, grouping, strip-mining), the memory model,
the calling convention and the timing model. Parameter values are interpolated, so the manual of
a task configuration shows that configuration's sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gauntlet.accel.platform import Chapter, Microbenchmark

if TYPE_CHECKING:
    from gauntlet.accel.platforms.rvv import RvvParams

SYNTAX = """\
One statement per line. `;` or `#` starts a comment. A label is a name followed by `:` at the
start of a line; an instruction may follow it. Mnemonics are a domain and an operation joined
by a dot (`s.addk`, `f.mul`, `p.add`, `v.fmaf`, `k.pop`, `ld.vs`, `j.lt`); mnemonics and
register names are case-insensitive, symbols are not.

```asm
.equ ROW, COLS * 4               ; a symbol for later immediates
top:    v.cfg  s5, s4, m4        ; VL = min(s4, 4 * VLEN)
        ld.v   v0, [p0 + ROW]
        s.sub  s4, s4, s5
        j.ne   s4, s0, top
```

- Registers: `s0`..`s31` (integers, `s0` reads 0), `f0`..`f31` (fp32), `p0`..`p15`
  (pointers), `v0`..`v31` (vectors), `k0`..`k7` (masks).
- Immediates are integer expressions: literals (`42`, `0x2a`, `0b101`), symbols, `+ - * // %`,
  parentheses and `min`, `max`, `cdiv`. `/` is not integer division and is rejected where an
  integer is expected. Floating-point immediates (`f.set`) also accept `inf`, `-inf`, `nan`.
- Memory operands are `[pN]` or `[pN + offset]` / `[pN - offset]`: a pointer register plus an
  immediate byte offset.
- `.equ NAME, expression` defines a symbol for the rest of the program.

The assembler rejects, with line, column, what it found and what it expected: unknown
mnemonics and registers, wrong operand counts, immediates out of range, misaligned offsets, and
undefined or duplicate labels. `check_syntax` prints `All checks passed. 0 error(s), 0
warning(s)` for a clean program.
"""

#: The manual's fault table, in rvv's terms (there is no SRAM and no DMA engine).
FAULT_DOCS: dict[str, str] = {
    "uninitialized_read": (
        "a read of a vector register element, or of an output or scratch element of main "
        "memory, that nothing wrote since the program started (both start poisoned with NaN; "
        "the simulator tracks which elements were written)"
    ),
    "out_of_bounds": (
        "a main-memory access outside every region of the memory contract, or one that runs "
        "past the end of the region it starts in"
    ),
    "sram_overflow": (
        "a vector register group that runs past v31: VL elements from the named register do "
        "not fit in the register file"
    ),
    "protection": "a write to a main-memory region that is not an output or scratch region",
    "misaligned": (
        "a main-memory address or stride that is not a multiple of the element size of the "
        "region it falls in"
    ),
    "invalid_operand": (
        "an operand value the instruction cannot execute with (an application vector length "
        "below 1, a negative stride, a store stride shorter than an element)"
    ),
    "step_limit": "the program ran more instructions than the step limit (an endless loop?)",
}

EXAMPLE_SOURCE = """\
    s.set  s4, ROWS * COLS     ; elements left
    f.set  f1, 2.0
    f.set  f2, 1.0
next:
    v.cfg  s5, s4, m8          ; VL = min(left, 8 * VLEN): v0..v7 and v8..v15 are groups
    ld.v   v0, [p0]
    v.mulf v8, v0, f1
    v.addf v8, v8, f2
    st.v   [p1], v8
    s.shlk s6, s5, 2           ; bytes done: VL * 4
    p.add  p0, p0, s6
    p.add  p1, p1, s6
    s.sub  s4, s4, s5
    j.ne   s4, s0, next
    halt
"""

#: Symbols and shapes the example runs with.
EXAMPLE_SYMBOLS = {"ROWS": 64, "COLS": 64}


def chapters(p: RvvParams) -> tuple[Chapter, ...]:
    """The prose chapters for one set of parameters."""
    vlmax = 8 * p.vlen
    return (
        Chapter(
            "Machine overview",
            f"""\
rvv is a single in-order core with a vector extension. Data lives in **main memory**
(byte-addressed, {p.mem_bytes_per_cycle} bytes per cycle, {p.mem_latency} cycles of latency);
there is no scratchpad and no data cache, so data is reused by keeping it in registers.

- The **scalar front end** issues every instruction in program order, one per cycle, and itself
  runs integer (`s0`..`s31`), fp32 (`f0`..`f31`) and pointer (`p0`..`p15`) arithmetic and
  branches. Loops are scalar code: a counter, a compare-and-branch.
- The **vector unit** processes {p.lanes} fp32 elements per cycle, on vector registers
  `v0`..`v31` of VLEN = {p.vlen} elements each, grouped up to 8 at a time: elementwise
  arithmetic, fused multiply-add, exp, tanh, reciprocal, reciprocal square root, reductions
  into fp32 registers, comparisons into mask registers `k0`..`k7` and selection by them.
- The **memory unit** runs loads and stores between main memory and the vector registers
  (unit-stride and strided), and scalar fp32 loads and stores.

The three units run concurrently: while the vector unit computes on one register group, the
memory unit can load the next one and store the previous one.
""",
        ),
        Chapter(
            "Vector length, grouping and strip-mining",
            f"""\
Vector instructions process the first **VL** elements of their operands. `v.cfg sd, avl, m<n>`
sets VL = min(avl, n * VLEN) and writes VL to `sd`; n is the grouping **LMUL** (1, 2, 4 or 8),
so VL is at most {vlmax} elements. A vector operand `vN` names the VL elements that start at
register vN: the group vN, vN+1, .., vN + ceil(VL / VLEN) - 1. With LMUL = 4 the usable groups
are v0, v4, .., v28: eight registers of 4 * VLEN elements instead of 32 of VLEN. Groups may
start at any register, but they overlap when they share a register, and a group that runs past
v31 faults (`sram_overflow`). Elements from VL on are left as they were.

The idiom for any length n is a **strip-mined** loop, which works whatever VLEN is:

```asm
    s.set  s4, N               ; elements left
strip:
    v.cfg  s5, s4, m8          ; this strip: VL = min(left, 8 * VLEN)
    ld.v   v0, [p0]
    ...                        ; compute on v0.. (groups of 8 registers: v0, v8, v16, v24)
    st.v   [p1], v8
    s.shlk s6, s5, 2           ; VL * 4 bytes
    p.add  p0, p0, s6
    p.add  p1, p1, s6
    s.sub  s4, s4, s5
    j.ne   s4, s0, strip
```

The last strip is simply shorter. A larger LMUL means fewer, longer instructions (less loop
overhead per element) but fewer registers to keep data in; a vector instruction costs
cdiv(VL, LANES) cycles, so the cost grows with the strip's length, not with LMUL.

**Masks.** `v.cmp`/`v.cmpf` write a mask register (`k0`..`k7`, one bit per element, up to
{vlmax} elements); `v.sel` chooses per element; `k.and`, `k.or`, `k.not` combine masks;
`k.pop` counts set elements into an fp32 register.
""",
        ),
        Chapter(
            "Memory model",
            f"""\
**Main memory** is byte-addressed and holds the regions of the task's memory contract
(inputs, outputs, scratch). Each region has an element type, fp32 (4 bytes) or bf16 (2 bytes);
an access's element type is the type of the region its address falls in, and addresses and
strides must be multiples of that size (`misaligned`). An access must stay inside one region.
Addresses outside every region fault (`out_of_bounds`), as do writes to input regions
(`protection`).

**Registers.** Vector registers hold fp32 elements: loads convert (bf16 to fp32 is exact) and
stores round to the region's type (to nearest even for bf16). `v.bf16` rounds in registers to
mimic a bf16 datapath.

**Lines.** The memory port moves whole lines of {p.line_bytes} bytes: a unit-stride access of
VL elements moves the lines its bytes touch; a strided access whose stride is at least a line
moves one line per element, so a column of a row-major matrix costs a line per element. Prefer
unit-stride accesses along rows.

**Poison.** Main memory outside the inputs and every vector register start unwritten. Reading
an element nothing has written (an output or scratch element, a vector register element)
faults with `uninitialized_read`. The expected output is never in any memory the program can
read.
""",
        ),
        Chapter(
            "Calling convention",
            f"""\
When the program starts:

- pointer register `p<i>` holds the base address of region i of the memory contract, in the
  contract's order (inputs, then outputs, then scratch); up to 16 regions are passed;
- every other scalar register is 0 (`s0` always reads 0 and ignores writes); masks are all
  false; vector registers are unwritten;
- VL = VLEN = {p.vlen} (LMUL = 1).

The assembler knows these symbols, usable in any immediate: every hardware parameter in upper
case (`VLEN` = {p.vlen}, `LANES` = {p.lanes}, `LINE_BYTES` = {p.line_bytes}, ...), each
region's name (its base address), and the task configuration's symbols (shapes such as `M`,
`N`, `K`).

The program ends at `halt` or when it runs past its last instruction; queued instructions then
drain, and the run's cycle count includes them. Results count only once a store has put them in
an output region; output elements never written stay NaN.
""",
        ),
        Chapter(
            "Timing model",
            f"""\
Every instruction executes, functionally, when the front end issues it, in program order; the
timing model then decides when it would run on its unit. The run takes as many cycles as the
last unit needs to finish.

- **Front end.** Issues one instruction per cycle and runs scalar, pointer, branch and `v.cfg`
  instructions itself (1 cycle each). A taken branch costs {p.branch_penalty} extra cycles.
- **Units.** The vector unit queues up to {p.queue_depth} instructions, the memory unit
  {p.mem_queue_depth}. Each unit runs its instructions one after another, in order; the front
  end stalls (`queue_full`) only when the queue it issues to is full.
- **Vector unit.** An elementwise instruction occupies it cdiv(VL, LANES) cycles
  (LANES = {p.lanes}); exp, tanh, reciprocal and rsqrt cost special_cycles = {p.special_cycles}
  times that; reductions add an adder tree. Results are visible to the other units
  vec_latency = {p.vec_latency} cycles after it finishes.
- **Memory unit.** An access occupies it mem_setup + cdiv(lines * LINE_BYTES,
  MEM_BYTES_PER_CYCLE) cycles; a load's data lands mem_latency = {p.mem_latency} cycles after
  that. Loads pipeline: the latency of one overlaps the transfer of the next, up to
  mem_inflight = {p.mem_inflight} vector accesses in flight; one more starts only when the
  oldest has landed (`memory_dependency`), so back-to-back loads sustain at most
  mem_inflight accesses per mem_latency cycles.
- **Dependencies.** An instruction starts only after every earlier instruction of the other
  unit that writes what it reads, reads what it writes, or writes what it writes (same vector
  register elements) has finished and its result has landed (`memory_dependency`); an
  instruction reading a scalar register that a unit still computes (a reduction, `ld.f`,
  `k.pop`) waits for it (`register_dependency`).
- **Overlap.** The memory unit is in order: a store that waits for its data holds up the loads
  behind it. A loop that loads, computes and stores one strip at a time pays the load latency
  every strip; **software pipelining** (load strip i + 1 into other registers before computing
  strip i) hides it behind compute.

The profile reports cycles, per-unit busy cycles, stall cycles by cause, bytes loaded and
stored (`dma_bytes_read`, `dma_bytes_written`) and the instruction count.
""",
        ),
        Chapter(
            "Arithmetic",
            """\
Every arithmetic result is an fp32 value, rounded once to nearest even:

- add, subtract, multiply, divide, min, max, square root and reciprocal are IEEE fp32
  operations;
- the fused multiply-adds (`v.fma`, `v.fmaf`, `v.fnma`, `v.fnmaf`), `v.exp`, `v.tanh` and
  `v.rsqrt` are computed in double precision and rounded once;
- `v.rsum` sums exactly and rounds once; `v.rmax` is exact;
- NaN propagates through min, max and the reductions; comparisons with NaN are false (except
  `ne`).

Integers are 32-bit two's complement and wrap; pointers are 48-bit unsigned.
""",
        ),
        Chapter(
            "A complete example",
            "A kernel computing y = 2 * x + 1 for x, y of shape (ROWS, COLS) fp32, with "
            f"ROWS = {EXAMPLE_SYMBOLS['ROWS']} and COLS = {EXAMPLE_SYMBOLS['COLS']} passed as "
            "symbols by the task, strip-mined with LMUL = 8:\n\n```asm\n"
            + EXAMPLE_SOURCE
            + "```\n",
        ),
    )


# -- microbenchmarks -------------------------------------------------------------------------
# Each measures the cycles one loop iteration adds (the cycles of 2n iterations minus those of n,
# divided by n), which cancels set-up and drain, and compares them with the cost formula. A loop
# is scalar code: the body, a decrement and a taken branch.

#: Elements the memory benchmarks move: 64, or all of a group of 8 registers when VLEN < 8.
_BENCH_VL = 64


def _loop(setup: str, body: list[str]) -> str:
    lines = "".join(f"    {line}\n" for line in body)
    return (
        setup
        + "    s.set s9, {n}\ntop:\n"
        + lines
        + "    s.addk s9, s9, -1\n    j.ne s9, s0, top\n"
    )


def _frontend(p: Mapping[str, int | float], body: int) -> int:
    """Front-end cycles of one iteration: the body, the decrement and the taken branch."""
    return body + 2 + int(p["branch_penalty"])


def _vl(p: Mapping[str, int | float]) -> int:
    return min(_BENCH_VL, 8 * int(p["vlen"]))


def _elementwise(p: Mapping[str, int | float], vl: int) -> int:
    return -(-vl // int(p["lanes"]))


def _access(p: Mapping[str, int | float], lines: int) -> int:
    return int(p["mem_setup"]) + -(-lines * int(p["line_bytes"]) // int(p["mem_bytes_per_cycle"]))


def _unit_lines(p: Mapping[str, int | float], elements: int) -> int:
    # Contract regions start at multiples of 4096 bytes, so x and y start a line.
    return -(-elements * 4 // int(p["line_bytes"]))


def _strided_lines(p: Mapping[str, int | float], elements: int, stride: int) -> int:
    line = int(p["line_bytes"])
    if stride >= line:
        return elements
    return ((elements - 1) * stride + 3) // line + 1


_SPLAT = "    f.set f0, 1.0\n    v.splat {reg}, f0\n"
_GROUP8 = f"    v.cfgk s0, {_BENCH_VL}, m8\n"


def microbenchmarks() -> tuple[Microbenchmark, ...]:
    """The programs documenting each cost formula; `{n}` is the iteration count."""
    return (
        Microbenchmark(
            "taken branch loop",
            "j.ne",
            _loop("", ["s.addk s1, s1, 1"]),
            lambda p: _frontend(p, 1),
            "a scalar loop: one instruction per cycle, plus the taken-branch penalty",
        ),
        Microbenchmark(
            "vector elementwise",
            "v.add",
            _loop(_SPLAT.format(reg="v1"), ["v.add v1, v1, v1"] * 8),
            lambda p: max(8 * _elementwise(p, int(p["vlen"])), _frontend(p, 8)),
            "eight vadds on one register (VL = VLEN): cdiv(VL, LANES) cycles each",
        ),
        Microbenchmark(
            "vector elementwise, LMUL 8",
            "v.add",
            _loop(
                "    v.cfgk s0, 8 * VLEN, m8\n" + _SPLAT.format(reg="v8"), ["v.add v8, v8, v8"] * 2
            ),
            lambda p: max(2 * _elementwise(p, 8 * int(p["vlen"])), _frontend(p, 2)),
            "a group of 8 registers costs 8 times one register: longer strips cost more",
        ),
        Microbenchmark(
            "vector special function",
            "v.exp",
            _loop(_SPLAT.format(reg="v1"), ["v.exp v1, v1"] * 4),
            lambda p: max(
                4 * int(p["special_cycles"]) * _elementwise(p, int(p["vlen"])), _frontend(p, 4)
            ),
            "exp, tanh, reciprocal and rsqrt: special_cycles per group of LANES elements",
        ),
        Microbenchmark(
            "vector reduction",
            "v.rsum",
            _loop(_SPLAT.format(reg="v1"), ["v.rsum f1, v1"] * 4),
            lambda p: max(
                4
                * (
                    _elementwise(p, int(p["vlen"]))
                    + math.ceil(math.log2(int(p["lanes"])))
                    + int(p["reduce_cycles"])
                ),
                _frontend(p, 4),
            ),
            "folding into LANES partial sums, then an adder tree of log2(LANES) levels",
        ),
        Microbenchmark(
            "unit-stride load bandwidth",
            "ld.v",
            _loop(_GROUP8, ["ld.v v8, [p0]"] * 4),
            lambda p: max(4 * _access(p, _unit_lines(p, _vl(p))), _frontend(p, 4)),
            "back-to-back loads of 64 fp32 elements: the memory unit's occupancy",
        ),
        Microbenchmark(
            "strided load bandwidth",
            "ld.vs",
            _loop(_GROUP8 + "    s.set s2, 256\n", ["ld.vs v8, [p0], s2"] * 4),
            lambda p: max(4 * _access(p, _strided_lines(p, _vl(p), 256)), _frontend(p, 4)),
            "a column of a 64 x 64 fp32 matrix: one whole line per element",
        ),
        Microbenchmark(
            "store bandwidth",
            "st.v",
            _loop(_GROUP8 + _SPLAT.format(reg="v8"), ["st.v [p1], v8"] * 4),
            lambda p: max(4 * _access(p, _unit_lines(p, _vl(p))), _frontend(p, 4)),
            "back-to-back stores of 64 fp32 elements",
        ),
        Microbenchmark(
            "scalar load",
            "ld.f",
            _loop("", ["ld.f f1, [p0]"] * 4),
            lambda p: max(4 * _access(p, 1), _frontend(p, 4)),
            "one line per scalar access",
        ),
        Microbenchmark(
            "load-use chain",
            "ld.v",
            _loop(_GROUP8, ["ld.v v8, [p0]", "v.add v16, v8, v8", "st.v [p1], v16"]),
            lambda p: max(
                2 * _access(p, _unit_lines(p, _vl(p)))
                + int(p["mem_latency"])
                + _elementwise(p, _vl(p))
                + int(p["vec_latency"]),
                _frontend(p, 3),
            ),
            "load, add, store, serialized by their dependencies: both latencies show",
        ),
    )
