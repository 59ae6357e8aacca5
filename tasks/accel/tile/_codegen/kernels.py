"""The stages the tile tasks are made of, each as a baseline mapping and an expert one.

The baseline is what a simple compiler emits for an array it does not know how to use: the
whole job on tile 0 (the other tiles halt), every transfer waited for before the next step. The
expert spreads the work over every tile by its index (`r3`), keeps the DMA engine busy while the
units compute (double buffering on two tags), spreads its transfers over every column's shim,
and where tiles must combine results passes them between neighbours over the mesh.

Register use (stages run one after another, so they reuse registers): r1..r3 hold the tile's
place, r4..r7 a transfer's rows, columns, external and local row strides, r8..r19 a stage's
state, r20..r21 the strip loops, r22..r27 per-row state, r28..r30 counters, r31 conditions;
f0 stays 0.0, f1..f9 constants, f10.. per-row scalars; a8..a15 computed external addresses.
"""

from __future__ import annotations

from collections.abc import Callable

from .asm import Asm

TILES = "GRID_ROWS * GRID_COLS"

#: Local-memory layout of the row stages (words).
ROW_W, ROW_B, ROW_TMP, ROW_BUF, ROW_BUFW = 0, 1024, 2048, 3072, 3072

#: Per-strip vector code of the elementwise operations: (pointer, second pointer) -> lines.
Strip = Callable[[str, str], list[str]]

CONSTANTS = (
    "fli f1, -1.0",
    "fli f2, 1.0",
    "fli f3, 0.044715",
    "fli f4, 0.7978845608028654",
    "fli f5, 0.5",
)


def _silu_into_tmp(p: str) -> list[str]:
    return [
        f"vmuls [r19], [{p}], f1",
        "vexp [r19], [r19]",
        "vadds [r19], [r19], f2",
        "vrecip [r19], [r19]",
        f"vmul [r19], [r19], [{p}]",
    ]


ELEMENTWISE: dict[str, Strip] = {
    "relu": lambda p, q: [f"vmaxs [{p}], [{p}], f0"],
    "silu": lambda p, q: [*_silu_into_tmp(p), f"vmov [{p}], [r19]"],
    "gelu": lambda p, q: [
        f"vmul [r19], [{p}], [{p}]",
        "vmuls [r19], [r19], f3",
        "vadds [r19], [r19], f2",
        f"vmul [r19], [r19], [{p}]",
        "vmuls [r19], [r19], f4",
        "vtanh [r19], [r19]",
        "vadds [r19], [r19], f2",
        f"vmul [r19], [r19], [{p}]",
        f"vmuls [{p}], [r19], f5",
    ],
    "swiglu": lambda p, q: [*_silu_into_tmp(p), f"vmul [{p}], [r19], [{q}]"],
}


def _row_pass(a: Asm, body: list[str], pointers: list[str], starts: list[str]) -> None:
    """One strip-mined pass over a row of COLS words (r26); pointers start at `starts`."""
    a(
        *(
            f"{'li' if s.isdigit() else 'mov'} {p}, {s}"
            for p, s in zip(pointers, starts, strict=True)
        )
    )
    a.strips("r26", pointers, body)


def row_compute(a: Asm, op: str, rows: str, buf: str, second: str) -> None:
    """Compute `op` in place on `rows` (register) rows of COLS words at `buf` (register)."""
    if op in ELEMENTWISE:
        a(f"muli r16, {rows}, COLS", f"mov r22, {buf}", f"mov r23, {second}")
        a.strips("r16", ["r22", "r23"], ELEMENTWISE[op]("r22", "r23"))
        return
    a(f"mov r24, {buf}", "li r26, COLS")
    with a.hloop(rows):
        if op == "softmax":
            a("fli f10, -inf")
            _row_pass(a, ["vredmax f11, [r22]", "fmax f10, f10, f11"], ["r22"], ["r24"])
            a("fli f12, 0.0")
            body = ["vsubs [r22], [r22], f10", "vexp [r22], [r22]", "vredsum f11, [r22]"]
            _row_pass(a, [*body, "fadd f12, f12, f11"], ["r22"], ["r24"])
            a("fdiv f13, f2, f12")
            _row_pass(a, ["vmuls [r22], [r22], f13"], ["r22"], ["r24"])
        elif op == "layernorm":
            a("fli f12, 0.0")
            _row_pass(a, ["vredsum f11, [r22]", "fadd f12, f12, f11"], ["r22"], ["r24"])
            a("fmul f13, f12, f6")
            _row_pass(a, ["vsubs [r22], [r22], f13"], ["r22"], ["r24"])
            a("fli f12, 0.0")
            body = ["vmul [r19], [r22], [r22]", "vredsum f11, [r19]", "fadd f12, f12, f11"]
            _row_pass(a, body, ["r22"], ["r24"])
            a("fmul f12, f12, f6", "fadd f12, f12, f7", "fsqrt f12, f12", "fdiv f13, f2, f12")
            body = [
                "vmuls [r22], [r22], f13",
                "vmul [r22], [r22], [r25]",
                "vadd [r22], [r22], [r27]",
            ]
            a(f"li r25, {ROW_W}", f"li r27, {ROW_B}")
            _row_pass(a, body, ["r22", "r25", "r27"], ["r24", "r25", "r27"])
        elif op == "rmsnorm":
            a("fli f12, 0.0")
            body = ["vmul [r19], [r22], [r22]", "vredsum f11, [r19]", "fadd f12, f12, f11"]
            _row_pass(a, body, ["r22"], ["r24"])
            a("fmul f12, f12, f6", "fadd f12, f12, f7", "fsqrt f12, f12", "fdiv f13, f2, f12")
            a(f"li r25, {ROW_W}")
            _row_pass(
                a,
                ["vmuls [r22], [r22], f13", "vmul [r22], [r22], [r25]"],
                ["r22", "r25"],
                ["r24", "r25"],
            )
        else:
            raise ValueError(f"unknown row operation '{op}'")
        a("addi r24, r24, COLS")


def _row_transfer(
    a: Asm,
    regions: list[str],
    block: str,
    bufs: list[str],
    tag: int,
    store: bool,
    size: str = "itemsize",
) -> None:
    """Move block `block` (register) of this tile's rows between `regions` and `bufs`.

    The regions' elements are `size` bytes: a float32 scratch region of a bfloat16 task has
    rows of another stride, set for its transfer only (r6 holds the task dtype's).
    """
    a(f"muli r16, {block}, R_BLOCK", "sub r4, r11, r16", "mini r4, r4, R_BLOCK")
    a("add r16, r16, r10", f"muli r16, r16, COLS * {size}")
    if size != "itemsize":
        a(f"li r6, COLS * {size}")
    for k, (region, buf) in enumerate(zip(regions, bufs, strict=True)):
        a(f"adda a{8 + k}, {region}, r16")
        if store:
            a(f"dst [a{8 + k}], [r0 + {buf}], r4, r5, r6, r7, {tag}")
        else:
            a(f"dld [r0 + {buf}], [a{8 + k}], r4, r5, r6, r7, {tag}")
    if size != "itemsize":
        a("li r6, COLS * itemsize")


def row_stage(
    a: Asm,
    op: str,
    inputs: list[str],
    output: str,
    params: list[str],
    expert: bool,
    out_size: str = "itemsize",
) -> None:
    """A row-wise stage: `output` = op(inputs) over ROWS rows of COLS words.

    The output's elements are `out_size` bytes (4 for a float32 scratch region).

    The baseline runs on tile 0, one row at a time, waiting for each transfer. The expert gives
    each tile a contiguous share of the rows and streams them in blocks of R_BLOCK rows through
    two buffers per input: block b + 1 loads while block b is computed and stored.
    """
    end = a.label("row_end")
    tiles = TILES if expert else "1"
    a.equ("R_BLOCK", f"max(1, {ROW_BUFW // max(1, len(inputs))} // COLS)" if expert else "1")
    a.equ("RPT", f"cdiv(ROWS, {tiles})")
    if not expert:
        a(f"bne r3, r0, {end}")
    a(*CONSTANTS, "fli f6, 1 / COLS", "fli f7, 1e-5", f"li r19, {ROW_TMP}")
    a("li r4, 1", "li r5, COLS", "li r6, COLS * itemsize", "li r7, COLS")
    for k, (param, at) in enumerate(zip(params, (ROW_W, ROW_B), strict=False)):
        a(f"dld [r0 + {at}], [{param}], r4, r5, r6, r7, {4 + k}")
    for k in range(len(params)):
        a(f"dwait {4 + k}")
    a("li r28, RPT", "mul r10, r3, r28", "li r29, ROWS", "sub r11, r29, r10", "min r11, r11, r28")
    a(f"bge r0, r11, {end}")
    a("addi r12, r11, R_BLOCK - 1", "divi r12, r12, R_BLOCK")
    width = ROW_BUFW // max(1, len(inputs)) if expert else ROW_BUFW
    bufs = [[ROW_BUF + (2 * k + p) * width for k in range(len(inputs))] for p in (0, 1)]
    if not expert:
        with a.loop("r30", "r12"):
            _row_transfer(a, inputs, "r30", [str(b) for b in bufs[0]], 0, store=False)
            a("dwait 0", "muli r18, r30, R_BLOCK", "sub r18, r11, r18")
            a("mini r18, r18, R_BLOCK", f"li r14, {bufs[0][0]}", f"li r15, {bufs[0][-1]}")
            row_compute(a, op, "r18", "r14", "r15")
            _row_transfer(a, [output], "r30", [str(bufs[0][0])], 2, True, out_size)
            a("dwait 2")
        a.place(end)
        return
    a("li r30, 0")
    _row_transfer(a, inputs, "r30", [str(b) for b in bufs[0]], 0, store=False)
    top, done = a.label("rows"), a.label("rows_done")
    a.place(top)
    for p in (0, 1):
        other = 1 - p
        skip = a.label("no_prefetch")
        a("addi r17, r30, 1", f"bge r17, r12, {skip}", f"dwait {2 + other}")
        _row_transfer(a, inputs, "r17", [str(b) for b in bufs[other]], other, store=False)
        a.place(skip)
        a(f"dwait {p}", "muli r18, r30, R_BLOCK", "sub r18, r11, r18", "mini r18, r18, R_BLOCK")
        a(f"li r14, {bufs[p][0]}", f"li r15, {bufs[p][-1]}")
        row_compute(a, op, "r18", "r14", "r15")
        _row_transfer(a, [output], "r30", [str(bufs[p][0])], 2 + p, True, out_size)
        a("addi r30, r30, 1", f"bge r30, r12, {done}")
    a(f"b {top}")
    a.place(done)
    a("dwait 2", "dwait 3")
    a.place(end)


#: Local-memory layout of the matrix stages (words): the A panel, two B panels, two output
#: panels, two bias panels and a strip of scratch.
MM_A, MM_B, MM_D, MM_BIAS, MM_TMP = 0, 4096, 12288, 12800, 13312


def _zero(a: Asm, at: str, words: str) -> None:
    """Write zeros to `words` (an expression) local words from `at` (an expression)."""
    a(f"li r16, {words}", f"li r17, {at}")
    a.strips("r16", ["r17"], ["vbcast [r17], f0"])


def _mm_panel(a: Asm, m: dict[str, str], parity: int) -> None:
    """Load the B panel (and bias panel) of column block r13 into buffer `parity`, tag parity."""
    a("muli r16, r13, MLEN", f"li r5, {m['N']}", "sub r5, r5, r16", "mini r5, r5, MLEN")
    a(f"muli r16, r16, {m['bsz']}", "adda a9, a11, r16")
    a(f"li r4, {m['K']}", f"li r6, {m['N']} * {m['bsz']}", "li r7, MLEN")
    a(f"dld [r0 + {MM_B + 4096 * parity}], [a9], r4, r5, r6, r7, {parity}")
    if m.get("bias"):
        a("li r4, 1", f"muli r16, r13, MLEN * {m['bsz']}", f"adda a10, {m['bias']}, r16")
        a(f"dld [r0 + {MM_BIAS + 32 * parity}], [a10], r4, r5, r6, r7, {parity}")


def _mm_a(a: Asm, m: dict[str, str]) -> None:
    """Load the A panel of the item's row block (r12, address a8) and wait for it."""
    a("muli r16, r12, MLEN", f"li r4, {m['M']}", "sub r4, r4, r16", "mini r4, r4, MLEN")
    a(f"li r5, {m['K']}", f"li r6, {m['K']} * {m['asz']}", f"li r7, {m['K']}")
    a(f"dld [r0 + {MM_A}], [a8], r4, r5, r6, r7, 4", "dwait 4")


def _panel_place(a: Asm, m: dict[str, str], base: str, at: str) -> None:
    """Point `at` at the output panel's place in a matrix shaped like C at `base`.

    Also sets the panel's rows (r4) and columns (r5) there and a transfer's strides (r6, r7).
    """
    a("muli r16, r12, MLEN", f"li r4, {m['M']}", "sub r4, r4, r16", "mini r4, r4, MLEN")
    a("muli r17, r13, MLEN", f"li r5, {m['N']}", "sub r5, r5, r17", "mini r5, r5, MLEN")
    a(f"muli r16, r16, {m['N']}", "add r16, r16, r17", f"muli r16, r16, {m['csz']}")
    a(f"adda {at}, {base}, r16", f"li r6, {m['N']} * {m['csz']}", "li r7, MLEN")


def _mm_tile(a: Asm, m: dict[str, str], parity: int) -> None:
    """Compute the output panel of row block r12, column block r13 into D[parity]; store it.

    B[parity] and the bias panel must have landed and D's last store (tag 2 + parity) have
    been waited for; the store goes out with tag 2 + parity.
    """
    d = MM_D + 256 * parity
    a("setvli MLEN", f"li r17, {d}", "li r16, MLEN")
    with a.hloop("r16"):
        if m.get("bias"):
            a(f"    vmov [r17], [r0 + {MM_BIAS + 32 * parity}]")
        else:
            a("    vbcast [r17], f0")
        a("    addi r17, r17, MLEN")
    if m.get("residual"):
        # The panel starts as the residual's (C's shape and dtype) over the zeros.
        _panel_place(a, m, m["residual"], "a14")
        a(f"dld [r0 + {d}], [a14], r4, r5, r6, r7, 5", "dwait 5")
    a(f"mmac [r0 + {d}], [r0 + {MM_A}], [r0 + {MM_B + 4096 * parity}], {m['K']}")
    if m.get("epilogue"):
        a("li r16, MLEN * MLEN", f"li r22, {d}", f"li r19, {MM_TMP}")
        a.strips("r16", ["r22"], ELEMENTWISE[m["epilogue"]]("r22", "r22"))
    _panel_place(a, m, "a13", "a12")
    a(f"dst [a12], [r0 + {d}], r4, r5, r6, r7, {2 + parity}")


def matmul_stage(a: Asm, m: dict[str, str], expert: bool) -> None:
    """C = epilogue(A @ B + bias) for BATCH products; see `m` for regions and shapes.

    `m` holds `A`, `B`, `C`, optional `bias` (address registers), `M`, `N`, `K`, `BATCH`
    (expressions), `asz`, `bsz`, `csz` (element sizes) and an optional `epilogue`. Work items
    are (batch, row block of MLEN rows). The baseline runs them all on tile 0 and, for every
    output panel, loads its A and B panels and waits for each transfer. The expert deals the
    items round-robin to every tile, loads an item's A panel once, and streams the B panels of
    its column blocks through two buffers (the next loads while the current multiplies), the
    output panels through two more.
    """
    end = a.label("mm_end")
    if not expert:
        a(f"bne r3, r0, {end}")
    a(*CONSTANTS)
    _zero(a, str(MM_A), f"MLEN * {m['K']}")
    a(f"li r28, {m['BATCH']} * cdiv({m['M']}, MLEN)", f"li r27, cdiv({m['N']}, MLEN)")
    a("mov r29, r3" if expert else "li r29, 0")
    top, done = a.label("items"), a.label("items_done")
    a(f"bge r29, r28, {done}")
    a.place(top)
    # Item r29: batch r10, row block r12; a8 / a11 / a13 point at this item's A, B and C.
    a(f"divi r10, r29, cdiv({m['M']}, MLEN)", f"remi r12, r29, cdiv({m['M']}, MLEN)")
    a(f"muli r16, r10, {m['K']} * {m['N']} * {m['bsz']}", f"adda a11, {m['B']}, r16")
    a(f"muli r16, r10, {m['M']} * {m['N']} * {m['csz']}", f"adda a13, {m['C']}, r16")
    a(f"muli r16, r10, {m['M']} * {m['K']} * {m['asz']}", f"adda a8, {m['A']}, r16")
    a(f"muli r16, r12, MLEN * {m['K']} * {m['asz']}", "adda a8, a8, r16")
    if not expert:
        with a.loop("r13", "r27"):
            # A naive compiler reloads the A panel for every output panel.
            _mm_a(a, m)
            _mm_panel(a, m, 0)
            a("dwait 0")
            _mm_tile(a, m, 0)
            a("dwait 2")
    else:
        _mm_a(a, m)
        a("li r13, 0")
        _mm_panel(a, m, 0)
        cols, cols_done = a.label("cols"), a.label("cols_done")
        a.place(cols)
        for parity in (0, 1):
            skip = a.label("no_prefetch")
            a("mov r14, r13", "addi r13, r13, 1", f"bge r13, r27, {skip}")
            _mm_panel(a, m, 1 - parity)
            a.place(skip)
            a("mov r15, r13", "mov r13, r14", f"dwait {parity}", f"dwait {2 + parity}")
            _mm_tile(a, m, parity)
            a("mov r13, r15", f"bge r13, r27, {cols_done}")
        a(f"b {cols}")
        a.place(cols_done)
    step = TILES if expert else "1"
    a(f"addi r29, r29, {step}", f"blt r29, r28, {top}")
    a.place(done)
    a("dwait 2", "dwait 3")
    a.place(end)


def barrier(a: Asm) -> None:
    """Every tile waits here until all have arrived (their stores waited for first).

    Tiles signal tile 0 on semaphore 7; tile 0 takes them all and signals every tile back on
    semaphore 6.
    """
    other, done, release = a.label("barrier_other"), a.label("barrier_done"), a.label("release")
    a("dwait 2", "dwait 3", f"bne r3, r0, {other}")
    a(f"li r16, {TILES}", "li r17, 1", f"bge r17, r16, {done}")
    a(f"wait 7, max(1, {TILES} - 1)")
    a.place(release)
    a("signal r17, 6", "addi r17, r17, 1", f"blt r17, r16, {release}", f"b {done}")
    a.place(other)
    a("signal r0, 7", "wait 6, 1")
    a.place(done)


#: Local-memory layout of the GEMV stage: x, two W panels, two y panels.
MV_X, MV_W, MV_Y = 0, 2048, 14336


def _mv_w(a: Asm, parity: int) -> None:
    """Load the W panel of row block r13 into buffer `parity`, tag parity."""
    a("muli r16, r13, MLEN", "li r4, M", "sub r4, r4, r16", "mini r4, r4, MLEN")
    a("muli r16, r16, K * itemsize", "adda a8, a0, r16")
    a("li r5, K", "li r6, K * itemsize", "li r7, K")
    a(f"dld [r0 + {MV_W + 6144 * parity}], [a8], r4, r5, r6, r7, {parity}")


def _mv_row(a: Asm, parity: int) -> None:
    """Y panel of row block r13 from W[parity]: zero, multiply, store with tag 2 + parity."""
    y = MV_Y + 64 * parity
    a("setvli MLEN", f"vbcast [r0 + {y}], f0")
    a(f"mvac [r0 + {y}], [r0 + {MV_W + 6144 * parity}], [r0 + {MV_X}], K")
    a("muli r16, r13, MLEN", "li r5, M", "sub r5, r5, r16", "mini r5, r5, MLEN")
    a("muli r16, r16, itemsize", "adda a9, a2, r16", "li r4, 1", "li r6, 0", "li r7, MLEN")
    a(f"dst [a9], [r0 + {y}], r4, r5, r6, r7, {2 + parity}")


def gemv_stage(a: Asm, expert: bool) -> None:
    """Y = W @ x, W (M, K) at a0, x (K) at a1, y (M) at a2, by panels of MLEN rows (`mvac`).

    The baseline runs every panel on tile 0, waiting for each transfer. The expert deals the
    row panels round-robin to every tile (each loads x once) and double-buffers the W panels.
    """
    end = a.label("mv_end")
    if not expert:
        a(f"bne r3, r0, {end}")
    _zero(a, str(MV_W), "2 * 6144")
    a("li r4, 1", "li r5, K", "li r6, 0", "li r7, K")
    a(f"dld [r0 + {MV_X}], [a1], r4, r5, r6, r7, 4", "dwait 4")
    a("li r28, cdiv(M, MLEN)")
    a("mov r13, r3" if expert else "li r13, 0")
    a(f"bge r13, r28, {end}")
    step = TILES if expert else "1"
    if not expert:
        top = a.label("rows")
        a.place(top)
        _mv_w(a, 0)
        a("dwait 0")
        _mv_row(a, 0)
        a("dwait 2", f"addi r13, r13, {step}", f"blt r13, r28, {top}")
        a.place(end)
        return
    _mv_w(a, 0)
    top, done = a.label("rows"), a.label("rows_done")
    a.place(top)
    for parity in (0, 1):
        skip = a.label("no_prefetch")
        a("mov r14, r13", f"addi r13, r13, {step}", f"bge r13, r28, {skip}")
        _mv_w(a, 1 - parity)
        a.place(skip)
        a("mov r15, r13", "mov r13, r14", f"dwait {parity}", f"dwait {2 + parity}")
        _mv_row(a, parity)
        a("mov r13, r15", f"bge r13, r28, {done}")
    a(f"b {top}")
    a.place(done)
    a("dwait 2", "dwait 3")
    a.place(end)


#: Local-memory layout of the attention stage (words): Q panel, K (all rows of a head, or one
#: panel), V column panels, S panel, P rows (MLEN x N), O panel, scratch.
AT_Q, AT_K, AT_V, AT_S, AT_P, AT_O = 0, 1024, 5120, 9216, 9472, 13824


def attention_stage(a: Asm, expert: bool) -> None:
    """o[h] = softmax(q[h] @ k[g]^T / sqrt(D)) @ v[g], g = h // (H // G), per head h.

    q (H, M, D), k and v (G, N, D), o (H, M, D) at a0..a3. Work items are (head, block of MLEN
    query rows). For each item: S = Q K^T panel by panel (`mmact`), its rows gathered into P
    (MLEN x N), a row softmax of P, then O = P V panel by panel (`mmac`, V loaded as N x MLEN
    column panels). The baseline runs every item on tile 0 and loads each K and V panel when
    it needs it, waiting each time. The expert deals the items round-robin to every tile and
    keeps the current head's K and V resident (one transfer each, reloaded when the head
    changes), so an item only loads its Q panel.
    """
    end = a.label("at_end")
    if not expert:
        a(f"bne r3, r0, {end}")
    a(*CONSTANTS, "fli f8, 1 / sqrt(D)", f"li r19, {AT_O + 256}")
    _zero(a, str(AT_Q), "MLEN * D")
    _zero(a, str(AT_K), "cdiv(N, MLEN) * MLEN * D")
    a("li r28, H * cdiv(M, MLEN)", "li r25, -1")
    a("mov r29, r3" if expert else "li r29, 0")
    top, done = a.label("items"), a.label("items_done")
    a(f"bge r29, r28, {done}")
    a.place(top)
    # Item r29: head r10 (group r11), query block r12.
    a("divi r10, r29, cdiv(M, MLEN)", "remi r12, r29, cdiv(M, MLEN)", "divi r11, r10, H // G")
    a("muli r16, r11, N * D * itemsize", "adda a9, a1, r16", "adda a10, a2, r16")
    if expert:
        same = a.label("same_head")
        a(f"beq r11, r25, {same}", "mov r25, r11")
        a("li r4, N", "li r5, D", "li r6, D * itemsize", "li r7, D")
        a(f"dld [r0 + {AT_K}], [a9], r4, r5, r6, r7, 0")
        _v_panels(a)
        a("dwait 0", "dwait 1")
        a.place(same)
    # Q panel.
    a("muli r16, r10, M", "muli r17, r12, MLEN", "add r16, r16, r17")
    a("muli r16, r16, D * itemsize", "adda a8, a0, r16")
    a("li r4, M", "sub r4, r4, r17", "mini r4, r4, MLEN", "li r5, D", "li r6, D * itemsize")
    a("li r7, D", f"dld [r0 + {AT_Q}], [a8], r4, r5, r6, r7, 4", "dwait 4")
    # S = Q K^T, panel j into S, its rows copied into P (row stride N).
    a("li r27, cdiv(N, MLEN)")
    with a.loop("r13", "r27"):
        a("muli r17, r13, MLEN", "li r5, N", "sub r5, r5, r17", "mini r5, r5, MLEN")
        if expert:
            a("muli r18, r17, D", f"addi r18, r18, {AT_K}")
        else:
            a("muli r16, r17, D * itemsize", "adda a11, a9, r16", "mov r4, r5", "li r5, D")
            a("li r6, D * itemsize", "li r7, D", f"dld [r0 + {AT_K}], [a11], r4, r5, r6, r7, 0")
            a("dwait 0", f"li r18, {AT_K}", "mov r5, r4")
        a("setvli MLEN", "li r16, MLEN", f"li r22, {AT_S}")
        with a.hloop("r16"):
            a("    vbcast [r22], f0", "    addi r22, r22, MLEN")
        a(f"mmact [r0 + {AT_S}], [r0 + {AT_Q}], [r18], D")
        a("setvl r5", f"li r22, {AT_S}", f"addi r23, r17, {AT_P}", "li r16, MLEN")
        with a.hloop("r16"):
            a("    vmov [r23], [r22]", "    addi r22, r22, MLEN", "    addi r23, r23, N")
    # Softmax of the MLEN rows of P (scaled by 1 / sqrt(D)).
    a(f"li r24, {AT_P}", "li r26, N", "li r16, MLEN")
    with a.hloop("r16"):
        _row_pass(a, ["vmuls [r22], [r22], f8"], ["r22"], ["r24"])
        a("fli f10, -inf")
        _row_pass(a, ["vredmax f11, [r22]", "fmax f10, f10, f11"], ["r22"], ["r24"])
        a("fli f12, 0.0")
        body = ["vsubs [r22], [r22], f10", "vexp [r22], [r22]", "vredsum f11, [r22]"]
        _row_pass(a, [*body, "fadd f12, f12, f11"], ["r22"], ["r24"])
        a("fdiv f13, f2, f12")
        _row_pass(a, ["vmuls [r22], [r22], f13"], ["r22"], ["r24"])
        a("addi r24, r24, N")
    # O = P V, column panel jd of V.
    a("li r27, cdiv(D, MLEN)")
    with a.loop("r13", "r27"):
        if expert:
            a("muli r18, r13, MLEN * N", f"addi r18, r18, {AT_V}")
        else:
            a("muli r17, r13, MLEN", "li r5, D", "sub r5, r5, r17", "mini r5, r5, MLEN")
            a("muli r16, r17, itemsize", "adda a11, a10, r16", "li r4, N", "li r6, D * itemsize")
            a("li r7, MLEN", f"dld [r0 + {AT_V}], [a11], r4, r5, r6, r7, 1", "dwait 1")
            a(f"li r18, {AT_V}")
        a("setvli MLEN", "li r16, MLEN", f"li r22, {AT_O}")
        with a.hloop("r16"):
            a("    vbcast [r22], f0", "    addi r22, r22, MLEN")
        a(f"mmac [r0 + {AT_O}], [r0 + {AT_P}], [r18], N")
        # Store the panel: rows of the block, its columns of D.
        a("muli r17, r13, MLEN", "li r5, D", "sub r5, r5, r17", "mini r5, r5, MLEN")
        a("muli r16, r10, M", "muli r14, r12, MLEN", "add r16, r16, r14", "muli r16, r16, D")
        a("add r16, r16, r17", "muli r16, r16, itemsize", "adda a12, a3, r16")
        a("li r4, M", "sub r4, r4, r14", "mini r4, r4, MLEN", "li r6, D * itemsize", "li r7, MLEN")
        a(f"dst [a12], [r0 + {AT_O}], r4, r5, r6, r7, 2", "dwait 2")
    step = TILES if expert else "1"
    a(f"addi r29, r29, {step}", f"blt r29, r28, {top}")
    a.place(done)
    a.place(end)


def _v_panels(a: Asm) -> None:
    """Load V of the head (a10) as cdiv(D, MLEN) column panels of N x MLEN, tag 1."""
    a("li r27, cdiv(D, MLEN)", "li r4, N", "li r6, D * itemsize", "li r7, MLEN")
    with a.loop("r13", "r27"):
        a("muli r17, r13, MLEN", "li r5, D", "sub r5, r5, r17", "mini r5, r5, MLEN")
        a("muli r16, r17, itemsize", "adda a11, a10, r16", "muli r18, r13, MLEN * N")
        a(f"addi r18, r18, {AT_V}", "dld [r18], [a11], r4, r5, r6, r7, 1")


#: Local-memory layout of the column sum: the partial sums, two row buffers, and one receive
#: buffer per level of the reduction tree.
CS_ACC, CS_BUF, CS_BUFW, CS_RECV = 0, 1024, 3072, 7168

#: Levels of the reduction tree: strides 1, 2, 4 (grids are at most 8 wide or tall).
CS_LEVELS = (1, 2, 4)


#: The column reductions: how the partial result starts, how a row goes into it, how two
#: partials combine. `gemvt` weighs row i by x[i] (a transposed GEMV, y = x @ w).
REDUCTIONS: dict[str, tuple[str, str, str]] = {
    "sum": ("fli f9, 0.0", "vadd [r22], [r22], [r23]", "vadd [r22], [r22], [r23]"),
    "max": ("fli f9, -inf", "vmax [r22], [r22], [r23]", "vmax [r22], [r22], [r23]"),
    "gemvt": ("fli f9, 0.0", "vfmas [r22], [r23], f3", "vadd [r22], [r22], [r23]"),
}

#: Where the gemvt reduction keeps this tile's share of x.
CS_X = 13312


def colsum_stage(a: Asm, expert: bool, op: str = "sum") -> None:
    """y[j] = reduce_i x[i, j] over the rows of x (ROWS, COLS) at a0 into y (COLS) at a1.

    `op` is a `REDUCTIONS` entry; for `gemvt` the weights x (ROWS) are at a1 and y at a2.

    The baseline sums every row on tile 0, one row at a time. The expert gives each tile a
    contiguous share of the rows, streams them in double-buffered blocks and adds them into a
    partial sum, then combines the partial sums in a tree over the mesh: along each row of
    tiles first (column c sends to column c - s for s = 1, 2, 4 when c is an odd multiple of
    s), then down column 0 the same way, each send to a tile s links away in a straight line;
    tile (0, 0) stores the total. Every level has its own receive buffer, so no credits are
    needed.
    """
    end = a.label("cs_end")
    tiles = TILES if expert else "1"
    a.equ("R_BLOCK", f"max(1, {CS_BUFW} // COLS)" if expert else "1")
    a.equ("RPT", f"cdiv(ROWS, {tiles})")
    if not expert:
        a(f"bne r3, r0, {end}")
    a("li r26, COLS", f"li r22, {CS_ACC}")
    init, fold, combine = REDUCTIONS[op]
    a(init)
    a.strips("r26", ["r22"], ["vbcast [r22], f9"])
    a("li r5, COLS", "li r6, COLS * itemsize", "li r7, COLS")
    a("li r28, RPT", "mul r10, r3, r28", "li r29, ROWS", "sub r11, r29, r10", "min r11, r11, r28")
    summed = a.label("summed")
    a(f"bge r0, r11, {summed}")
    a("addi r12, r11, R_BLOCK - 1", "divi r12, r12, R_BLOCK")
    bufs = (CS_BUF, CS_BUF + CS_BUFW)

    if op == "gemvt":
        # This tile's weights: x[r10 .. r10 + r11) into CS_X, once.
        a("li r4, 1", "mov r5, r11", "mov r7, r11", "muli r16, r10, itemsize", "adda a8, a1, r16")
        a(f"dld [r0 + {CS_X}], [a8], r4, r5, r6, r7, 4", "dwait 4", "li r5, COLS", "li r7, COLS")

    def add_block(buf: int) -> None:
        a("muli r18, r30, R_BLOCK", "sub r18, r11, r18", "mini r18, r18, R_BLOCK")
        a(f"li r24, {buf}", "muli r25, r30, R_BLOCK", f"addi r25, r25, {CS_X}")
        with a.hloop("r18"):
            if op == "gemvt":
                a("setvli 1", "vredsum f3, [r25]", "addi r25, r25, 1")
            _row_pass(a, [fold], ["r22", "r23"], [str(CS_ACC), "r24"])
            a("addi r24, r24, COLS")

    if not expert:
        with a.loop("r30", "r12"):
            _row_transfer(a, ["a0"], "r30", [str(bufs[0])], 0, store=False)
            a("dwait 0")
            add_block(bufs[0])
    else:
        a("li r30, 0")
        _row_transfer(a, ["a0"], "r30", [str(bufs[0])], 0, store=False)
        top, done = a.label("blocks"), a.label("blocks_done")
        a.place(top)
        for p in (0, 1):
            skip = a.label("no_prefetch")
            a("addi r17, r30, 1", f"bge r17, r12, {skip}")
            _row_transfer(a, ["a0"], "r17", [str(bufs[1 - p])], 1 - p, store=False)
            a.place(skip)
            a(f"dwait {p}")
            add_block(bufs[p])
            a("addi r30, r30, 1", f"bge r30, r12, {done}")
        a(f"b {top}")
        a.place(done)
    a.place(summed)
    if expert:
        _tree(a, "r2", "GRID_COLS", "1", 0, combine)
        only = a.label("column0_done")
        a(f"bne r2, r0, {only}")
        _tree(a, "r1", "GRID_ROWS", "GRID_COLS", len(CS_LEVELS), combine)
        a.place(only)
        a(f"bne r3, r0, {end}")
    out = "a2" if op == "gemvt" else "a1"
    a("li r4, 1", f"dst [{out}], [r0 + {CS_ACC}], r4, r5, r6, r7, 2", "dwait 2")
    a.place(end)


def _tree(a: Asm, coord: str, extent: str, unit: str, first_level: int, combine: str) -> None:
    """Reduce the partial sums along one axis: coordinate `coord` (r1 or r2) of `extent`.

    At stride s a tile whose coordinate is an odd multiple of s sends its sum to the tile s
    steps back (index r3 - s * unit) and is done; one whose coordinate is a multiple of 2s
    takes the sum of the tile s steps on, if there is one, into its own.
    """
    finished = a.label("tree_done")
    for k, stride in enumerate(CS_LEVELS):
        level = first_level + k
        recv = CS_RECV + 1024 * level
        nxt = a.label("level")
        with a.when(f"{stride} < {extent}"):
            a(f"remi r16, {coord}, {2 * stride}", f"li r17, {stride}")
            receive = a.label("receive")
            a(f"bne r16, r17, {receive}")
            a(f"li r18, {stride} * {unit}", "sub r18, r3, r18", "li r26, COLS")
            a(f"send [r0 + {CS_ACC}], r26, r18, [r0 + {recv}], {level}, 0", "dwait 0")
            a(f"b {finished}")
            a.place(receive)
            a(f"bne r16, r0, {nxt}", f"addi r16, {coord}, {stride}", f"li r17, {extent}")
            a(f"bge r16, r17, {nxt}", f"wait {level}, 1", "li r26, COLS")
            _row_pass(a, [combine], ["r22", "r23"], [str(CS_ACC), str(recv)])
            a(f"li r22, {recv}", "rel [r22], r26")
        a.place(nxt)
    a.place(finished)


#: Local-memory layout of the stencil: two buffers of a chunk with a halo word at each end,
#: and the steps' rates.
ST_A, ST_B, ST_W = 0, 8192, 12800


def _snake(a: Asm, logical: str, dst: str) -> None:
    """The physical index of the tile at place `logical` of the snake through the grid.

    Row r of the grid is walked left to right when r is even, right to left when odd, so
    places k and k + 1 are always neighbours on the mesh.
    """
    even = a.label("even")
    a(f"divi r16, {logical}, GRID_COLS", f"remi r17, {logical}, GRID_COLS", "remi r18, r16, 2")
    a(f"beq r18, r0, {even}", "li r18, GRID_COLS - 1", "sub r17, r18, r17")
    a.place(even)
    a(f"muli {dst}, r16, GRID_COLS", f"add {dst}, {dst}, r17")


def _stencil_step(a: Asm, cur: int, nxt: int) -> None:
    """nxt[i] = r cur[i - 1] + (1 - 2r) cur[i] + r cur[i + 1], r = w[step] / 4, over r12 words."""
    a("setvli 1", f"addi r24, r30, {ST_W}", "vredsum f3, [r24]")
    a("fmul f4, f3, f1", "fmul f5, f3, f2", "fsub f5, f6, f5")
    a(f"li r22, {cur}", f"li r23, {nxt + 1}")
    body = ["vmuls [r23], [r22], f4", "vfmas [r23], [r22 + 1], f5", "vfmas [r23], [r22 + 2], f4"]
    a.strips("r12", ["r22", "r23"], body)


def stencil_stage(a: Asm, expert: bool) -> None:
    """STEPS diffusion steps of x (N) at a0 with rates w (STEPS) at a1 into y (N) at a2.

    Step s replaces x[i] by x[i] + w[s] / 4 * (x[i - 1] - 2 x[i] + x[i + 1]), zero beyond
    both ends.

    The baseline keeps the whole vector on tile 0 and steps it there. The expert cuts it into
    chunks along a snake through the grid (consecutive chunks on neighbouring tiles), keeps
    each chunk in its tile for every step, and swaps only the boundary words with the two
    neighbours each step: a send into the neighbour's halo word of the next step's buffer
    (semaphore 0 from the left, 1 from the right). The data dependency is the credit: a tile
    sends step s + 1's boundary only after it took step s's halos, which its neighbour sent
    after releasing the halo words step s + 1 lands in.
    """
    end = a.label("st_end")
    a("fli f1, 0.25", "fli f2, 0.5", "fli f6, 1.0")
    if not expert:
        a(f"bne r3, r0, {end}", "li r11, 0", "li r12, N", "li r13, -1", "li r14, -1")
    else:
        a.equ("NT", f"cdiv(N, {TILES})")
        a("remi r16, r1, 2", "mov r10, r2")
        even = a.label("even")
        a(f"beq r16, r0, {even}", "li r17, GRID_COLS - 1", "sub r10, r17, r2")
        a.place(even)
        a("muli r16, r1, GRID_COLS", "add r10, r10, r16")
        a("li r28, NT", "mul r11, r10, r28", "li r29, N", "sub r12, r29, r11", "min r12, r12, r28")
        a(f"bge r0, r12, {end}", "li r13, -1", "li r14, -1")
        no_left, no_right = a.label("no_left"), a.label("no_right")
        a(f"beq r10, r0, {no_left}", "addi r15, r10, -1")
        _snake(a, "r15", "r13")
        a.place(no_left)
        a("add r15, r11, r12", f"bge r15, r29, {no_right}", "addi r15, r10, 1")
        _snake(a, "r15", "r14")
        a.place(no_right)
    # Zero halos where the vector ends (a neighbour's halo words are its sends' to write).
    a("setvli 1")
    for buf in (ST_A, ST_B):
        left, right = a.label("halo_left"), a.label("halo_right")
        a(f"bge r13, r0, {left}", f"vbcast [r0 + {buf}], f0")
        a.place(left)
        a(f"bge r14, r0, {right}", f"vbcast [r12 + {buf + 1}], f0")
        a.place(right)
    a(
        "li r4, 1",
        "li r5, STEPS",
        "li r6, 0",
        "li r7, STEPS",
        f"dld [r0 + {ST_W}], [a1], r4, r5, r6, r7, 2",
    )
    a("mov r5, r12", "mov r7, r12", "muli r16, r11, itemsize")
    a("adda a8, a0, r16", f"dld [r0 + {ST_A + 1}], [a8], r4, r5, r6, r7, 2", "dwait 2")
    if expert:
        _halo_sends(a, ST_A)
    a("li r30, 0", "li r29, STEPS")
    top, done = a.label("steps"), a.label("steps_done")
    a(f"bge r30, r29, {done}")
    a.place(top)
    for cur, nxt in ((ST_A, ST_B), (ST_B, ST_A)):
        if expert:
            got_left, got_right = a.label("got_left"), a.label("got_right")
            a(f"blt r13, r0, {got_left}", "wait 0, 1")
            a.place(got_left)
            a(f"blt r14, r0, {got_right}", "wait 1, 1")
            a.place(got_right)
            a("dwait 0")  # the sends of the last step read nxt's boundary words
        _stencil_step(a, cur, nxt)
        if expert:
            rel_left, rel_right = a.label("rel_left"), a.label("rel_right")
            a("li r26, 1", f"blt r13, r0, {rel_left}", f"rel [r0 + {cur}], r26")
            a.place(rel_left)
            a(f"blt r14, r0, {rel_right}", f"rel [r12 + {cur + 1}], r26")
            a.place(rel_right)
        a("addi r30, r30, 1", f"bge r30, r29, {done}_{cur}")
        if expert:
            _halo_sends(a, nxt)
    a(f"b {top}")
    for cur, nxt in ((ST_A, ST_B), (ST_B, ST_A)):
        a.place(f"{done}_{cur}")
        a(f"li r15, {nxt}", f"b {done}_out")
    a.place(done)
    a(f"li r15, {ST_A}")
    a.place(f"{done}_out")
    a("muli r16, r11, itemsize", "adda a9, a2, r16", "addi r15, r15, 1")
    a("li r4, 1", "mov r5, r12", "li r6, 0", "mov r7, r12", "dst [a9], [r15], r4, r5, r6, r7, 3")
    a("dwait 3", "dwait 0")
    a.place(end)


def _halo_sends(a: Asm, buf: int) -> None:
    """Send this tile's boundary words of `buf` into its neighbours' halo words of `buf`."""
    left, right = a.label("send_left"), a.label("send_right")
    a("li r26, 1", f"blt r13, r0, {left}")
    a(f"send [r0 + {buf + 1}], r26, r13, [r0 + {buf} + NT + 1], 1, 0")
    a.place(left)
    a(f"blt r14, r0, {right}", f"send [r12 + {buf}], r26, r14, [r0 + {buf}], 0, 0")
    a.place(right)


#: Local-memory layout of the cumulative sum: the chunk's column sums, the running sum, the
#: sum passed on, the sum received, two row buffers.
CU_ACC, CU_RUN, CU_OUT, CU_RECV, CU_BUF, CU_BUFW = 0, 1024, 2048, 3072, 4096, 3072


def _cumsum_rows(a: Asm, expert: bool, store: bool) -> None:
    """Stream this tile's rows (r10 first, r11 count, r12 blocks) through the row buffers.

    Without `store`: add every row into the column sums. With it: make every row the running
    sum (the running sum carried from row to row) and store it.
    """
    bufs = (CU_BUF, CU_BUF + CU_BUFW)
    if store:
        body = ["vadd [r22], [r22], [r23]", "vmov [r23], [r22]"]
        starts, anchor = ["r24", str(CU_RUN)], "r24"
    else:
        body = ["vadd [r22], [r22], [r23]"]
        starts, anchor = [str(CU_ACC), "r24"], "r24"

    def block(buf: int) -> None:
        a("muli r18, r30, R_BLOCK", "sub r18, r11, r18", "mini r18, r18, R_BLOCK", f"li r24, {buf}")
        with a.hloop("r18"):
            _row_pass(a, body, ["r22", "r23"], starts)
            a(f"addi {anchor}, {anchor}, COLS")

    if not expert:
        with a.loop("r30", "r12"):
            _row_transfer(a, ["a0"], "r30", [str(bufs[0])], 0, store=False)
            a("dwait 0")
            block(bufs[0])
            if store:
                _row_transfer(a, ["a1"], "r30", [str(bufs[0])], 2, store=True)
                a("dwait 2")
        return
    a("li r30, 0")
    _row_transfer(a, ["a0"], "r30", [str(bufs[0])], 0, store=False)
    top, done = a.label("blocks"), a.label("blocks_done")
    a.place(top)
    for p in (0, 1):
        skip = a.label("no_prefetch")
        a("addi r17, r30, 1", f"bge r17, r12, {skip}", f"dwait {3 - p}")
        _row_transfer(a, ["a0"], "r17", [str(bufs[1 - p])], 1 - p, store=False)
        a.place(skip)
        a(f"dwait {p}")
        block(bufs[p])
        if store:
            _row_transfer(a, ["a1"], "r30", [str(bufs[p])], 2 + p, store=True)
        a("addi r30, r30, 1", f"bge r30, r12, {done}")
    a(f"b {top}")
    a.place(done)
    a("dwait 2", "dwait 3")


def cumsum_stage(a: Asm, expert: bool) -> None:
    """y[i, j] = sum over k <= i of x[k, j], x and y (ROWS, COLS) at a0, a1.

    The baseline runs down the rows on tile 0, one at a time. The expert cuts the rows into
    chunks along a snake through the grid (consecutive chunks on neighbouring tiles); each tile
    sums its chunk's columns, then the running total passes down the snake (each tile waits for
    the total of the chunks before it, adds its own and sends it on), and each tile streams its
    rows again from that total. Both passes double-buffer their rows.
    """
    end = a.label("cu_end")
    tiles = TILES if expert else "1"
    a.equ("R_BLOCK", f"max(1, {CU_BUFW} // COLS)" if expert else "1")
    a.equ("RPT", f"cdiv(ROWS, {tiles})")
    a("li r26, COLS")
    if not expert:
        a(f"bne r3, r0, {end}", "li r9, 0")
    else:
        a("remi r16, r1, 2", "mov r9, r2")
        even = a.label("even")
        a(f"beq r16, r0, {even}", "li r17, GRID_COLS - 1", "sub r9, r17, r2")
        a.place(even)
        a("muli r16, r1, GRID_COLS", "add r9, r9, r16")
    a("li r28, RPT", "mul r10, r9, r28", "li r29, ROWS", "sub r11, r29, r10", "min r11, r11, r28")
    a(f"bge r0, r11, {end}")
    a("addi r12, r11, R_BLOCK - 1", "divi r12, r12, R_BLOCK")
    a("li r5, COLS", "li r6, COLS * itemsize", "li r7, COLS")
    _row_pass(a, ["vbcast [r22], f0"], ["r22"], [str(CU_RUN)])
    if expert:
        _row_pass(a, ["vbcast [r22], f0"], ["r22"], [str(CU_ACC)])
        _cumsum_rows(a, expert, store=False)
        first, last = a.label("first"), a.label("last")
        a(f"beq r9, r0, {first}", "wait 0, 1")
        _row_pass(a, ["vmov [r22], [r23]"], ["r22", "r23"], [str(CU_RUN), str(CU_RECV)])
        a(f"li r22, {CU_RECV}", "rel [r22], r26")
        a.place(first)
        a("add r15, r10, r11", f"bge r15, r29, {last}", "addi r15, r9, 1")
        _snake(a, "r15", "r14")
        body = ["vadd [r22], [r23], [r25]"]
        _row_pass(a, body, ["r22", "r23", "r25"], [str(CU_OUT), str(CU_RUN), str(CU_ACC)])
        a(f"send [r0 + {CU_OUT}], r26, r14, [r0 + {CU_RECV}], 0, 4", "dwait 4")
        a.place(last)
    _cumsum_rows(a, expert, store=True)
    a.place(end)
