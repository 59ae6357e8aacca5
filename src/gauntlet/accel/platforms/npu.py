"""The `npu` platform: a tensor accelerator for ML inference.

HBM off-chip; a vector SRAM (VSRAM) and a matrix SRAM (MSRAM) on chip; a weight-stationary
systolic matrix unit working on MLEN x MLEN tiles into accumulator registers; a vector unit of
VLEN lanes working VSRAM to VSRAM; a scalar front end with integer, fp32 and address registers
and hardware loops; and an asynchronous, strided DMA engine between HBM and the SRAMs.

The instruction table (`_instructions`) is the single definition of the ISA: the assembler, the
disassembler, the simulator and the manual are all derived from it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gauntlet.accel import semantics
from gauntlet.accel.assembler import Decoded
from gauntlet.accel.families import Dialect, Table
from gauntlet.accel.isa import (
    ISA,
    Enum,
    Group,
    Imm,
    Instruction,
    Mem,
    Reg,
    RegisterFile,
    Step,
    formula_function,
)
from gauntlet.accel.isa import Field as F
from gauntlet.accel.machine import Machine, bursts_touched, strided
from gauntlet.accel.platform import Platform, Space, Unit, platform

F64 = np.float64
INT_MIN, INT_MAX = semantics.INT_MIN, semantics.INT_MAX


class NpuParams(BaseModel):
    """Hardware parameters of the npu; defaults in `npu.toml`, overridable per task config."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mlen: int = Field(ge=4, le=256)
    """Edge of a matrix tile and of the systolic array (a power of two)."""
    vlen: int = Field(ge=4, le=1024)
    """Lanes of the vector unit: the most elements one vector instruction processes."""
    accumulators: int = Field(ge=1, le=16)
    """Number of accumulator registers (acc0..), each an MLEN x MLEN fp32 tile."""
    vsram_words: int = Field(ge=1)
    """Capacity of the vector SRAM in fp32 words."""
    msram_words: int = Field(ge=1)
    """Capacity of the matrix SRAM in fp32 words."""
    hbm_bytes: int = Field(ge=1 << 20)
    """HBM capacity in bytes; the memory contract must fit below it."""
    dma_tags: int = Field(ge=1, le=64)
    """Number of DMA tags (completion groups that `dwait` waits for)."""
    loop_depth: int = Field(ge=1, le=16)
    """Deepest nesting of hardware loops."""
    queue_depth: int = Field(ge=1, le=64)
    """Instructions the matrix and vector units each queue before the front end stalls."""
    dma_queue_depth: int = Field(ge=1, le=64)
    """Transfers the DMA engine queues before the front end stalls."""
    dma_outstanding: int = Field(ge=1, le=1024)
    """Transfers that may be issued and not yet waited for; issuing one more first waits for
    the oldest to land (and retires it)."""
    clock_ghz: float = Field(gt=0)
    """Clock frequency, to convert cycles to time."""
    hbm_bytes_per_cycle: int = Field(ge=1)
    """HBM bandwidth of the DMA engine in bytes per cycle."""
    hbm_latency: int = Field(ge=0)
    """Cycles from the end of a transfer's occupancy until its data has landed."""
    dma_setup: int = Field(ge=0)
    """Cycles the DMA engine spends on each transfer's descriptor."""
    dma_burst_bytes: int = Field(ge=1)
    """HBM access granularity: each row of a transfer moves a whole number of bursts."""
    sram_copy_words_per_cycle: int = Field(ge=1)
    """On-chip bandwidth of `dcpy` (VSRAM to MSRAM) in words per cycle."""
    branch_penalty: int = Field(ge=0)
    """Extra front-end cycles after a taken branch."""
    vec_cycles: int = Field(ge=1)
    """Cycles of an elementwise vector instruction (any VL up to VLEN)."""
    vec_special_cycles: int = Field(ge=1)
    """Cycles of exp, reciprocal and reciprocal square root."""
    vec_reduce_cycles: int = Field(ge=1)
    """Base cycles of a reduction; the adder tree adds ceil(log2(VL))."""

    @model_validator(mode="after")
    def _sizes(self) -> NpuParams:
        for name in ("mlen", "vlen"):
            value = getattr(self, name)
            if value & (value - 1):
                raise ValueError(f"{name}={value} must be a power of two")
        tile = self.mlen * self.mlen
        for name in ("vsram_words", "msram_words"):
            words = getattr(self, name)
            if words < tile or words % tile:
                raise ValueError(f"{name}={words} must be a positive multiple of mlen*mlen={tile}")
        return self


# -- register files ----------------------------------------------------------------------------


def _register_files(p: NpuParams) -> dict[str, RegisterFile]:
    return {
        "r": RegisterFile("r", "r", 32, "int", "integer registers", bits=32, zero=0),
        "f": RegisterFile("f", "f", 32, "float", "fp32 registers"),
        "a": RegisterFile("a", "a", 16, "address", "HBM address registers", bits=48, signed=False),
        "acc": RegisterFile(
            "acc",
            "acc",
            p.accumulators,
            "array",
            "accumulator tiles",
            shape=("mlen", "mlen"),
            tracked=True,
        ),
        "m": RegisterFile("m", "m", 8, "array", "vector masks", shape=("vlen",), dtype="bool"),
    }


# -- semantics ---------------------------------------------------------------------------------
# Data semantics receive the operands in field order: views of memory and array registers
# (written in place), values of scalar registers read, immediates. A written scalar register is
# the return value. Every result is rounded once to fp32: the matrix dot products are computed
# in float64 and rounded once. The semantics shared with the other platforms (scalar arithmetic,
# elementwise vector operations, fma, exp, rsqrt) are in `gauntlet.accel.families`.


def _wide(a: np.ndarray) -> np.ndarray:
    # Matrix operands are marked `wide`: the simulator may pass its float64 copy of the words,
    # which is then used as is (same values and layout as converting the fp32 view here).
    return a.astype(F64, copy=False)


def _accumulate(acc: np.ndarray, product: np.ndarray, total: np.ndarray | None) -> None:
    # One rounding to fp32 of acc + product (the product is exact enough in float64): the
    # float64 sum (acc first, as NaN payloads go) rounded once, as a mixed-type np.add into acc
    # would do, but in plain float64 arrays (NumPy's casting buffers cost more than the calls).
    if total is None:
        total = acc.astype(F64)
    else:
        total[...] = acc
    np.add(total, product, total)
    acc[...] = total


def _mm(
    acc: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    product: np.ndarray | None = None,
    total: np.ndarray | None = None,
) -> None:
    # The hot instruction of tile-granular code, so `_product` is inlined. The simulator
    # passes scratch only with wide (float64) operands: np.dot refuses fp32 ones into it.
    if product is None or total is None:
        _accumulate(acc, np.dot(_wide(a), _wide(b)), None)
        return
    np.dot(a, b, product)
    total[...] = acc
    np.add(total, product, total)
    acc[...] = total


def _product(
    d: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    product: np.ndarray | None,
    total: np.ndarray | None,
) -> None:
    """Accumulate a @ b (float64 operands) into d, rounding once to fp32."""
    if product is None:
        _accumulate(d, np.dot(a, b), None)
    else:
        _accumulate(d, np.dot(a, b, product), total)


def _mmt(
    acc: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    product: np.ndarray | None = None,
    total: np.ndarray | None = None,
) -> None:
    _product(acc, _wide(a), _wide(b.T), product, total)


def _mmb(
    acc: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    n: int,
    product: np.ndarray | None = None,
    total: np.ndarray | None = None,
) -> None:
    rows = acc.shape[0]
    # sum_t A_t @ B_t is one long dot product: [A_0 A_1 ...] @ [B_0; B_1; ...].
    wide = a.transpose(1, 0, 2).reshape(rows, -1)
    tall = b.reshape(-1, b.shape[-1])
    _product(acc, _wide(wide), _wide(tall), product, total)


def _mv(
    d: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    product: np.ndarray | None = None,
    total: np.ndarray | None = None,
) -> None:
    _product(d, _wide(a), _wide(b), product, total)


def _mvt(
    d: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    product: np.ndarray | None = None,
    total: np.ndarray | None = None,
) -> None:
    _product(d, _wide(b), _wide(a), product, total)


# -- binders: control and memory instructions ---------------------------------------------------


def _bind_dwait(m: Machine, d: Decoded) -> Step:
    tag = d.operands[0] if d.operands else None
    nxt = d.pc + 1

    def step() -> int:
        m.wait_dma(tag)
        m.t += 1
        return nxt

    return step


def _dma_shape(m: Machine, rows: int, cols: int, sstride: int, align: int) -> None:
    if rows <= 0 or cols <= 0:
        m.fault("invalid_operand", f"DMA of {rows} rows x {cols} columns; both must be >= 1")
    if cols > sstride:
        m.fault(
            "invalid_operand",
            f"DMA row of {cols} elements is longer than its SRAM row stride {sstride}",
        )
    if sstride % align:
        m.fault("misaligned", f"SRAM row stride {sstride} is not a multiple of {align} words")


def _bind_load(space: str) -> Callable[[Machine, Decoded], Step]:
    def binder(m: Machine, d: Decoded) -> Step:
        (sreg, soff), (areg, aoff), rows_r, cols_r, hs_r, ss_r, tag = d.operands
        regs, addr = m.regs["r"], m.regs["a"]
        sram = m.sram[space]
        unit = m.platform.unit_index("dma")
        cost = formula_function(d.instruction.cost, m.env, ("bursts",))
        burst = int(m.params["dma_burst_bytes"])
        latency = int(m.params["hbm_latency"])
        nxt = d.pc + 1

        def step() -> int:
            m.dma_slot()
            rows, cols, hstride, sstride = regs[rows_r], regs[cols_r], regs[hs_r], regs[ss_r]
            _dma_shape(m, rows, cols, sstride, sram.align)
            start = regs[sreg] + soff
            words = rows * sstride
            m.check_sram(sram.sid, start, words, True)
            hbm = addr[areg] + aoff
            region, view, _ = m.hbm_view(hbm, rows, cols, hstride, False)
            m.dma_issue(
                unit,
                cost(bursts_touched(hbm, rows, cols * region.itemsize, hstride, burst)),
                latency,
                tag,
                ((sram.sid, start, start + words, True),),
            )
            block = sram.data[start : start + words].reshape(rows, sstride)
            block[:, :cols] = view
            if cols < sstride:
                block[:, cols:] = 0.0
            m.mark_sram(sram.sid, start, words)
            m.dma_bytes_read += rows * cols * region.itemsize
            m.t += 1
            return nxt

        return step

    return binder


def _bind_store(m: Machine, d: Decoded) -> Step:
    (areg, aoff), (sreg, soff), rows_r, cols_r, hs_r, ss_r, tag = d.operands
    regs, addr = m.regs["r"], m.regs["a"]
    sram = m.sram["vsram"]
    written = np.frombuffer(sram.written, dtype=np.uint8)
    unit = m.platform.unit_index("dma")
    cost = formula_function(d.instruction.cost, m.env, ("bursts",))
    burst = int(m.params["dma_burst_bytes"])
    latency = int(m.params["hbm_latency"])
    nxt = d.pc + 1

    def step() -> int:
        m.dma_slot()
        rows, cols, hstride, sstride = regs[rows_r], regs[cols_r], regs[hs_r], regs[ss_r]
        _dma_shape(m, rows, cols, sstride, sram.align)
        start = regs[sreg] + soff
        end = start + (rows - 1) * sstride + cols
        if start % sram.align or start < 0 or end > sram.words:
            m.bad_sram(sram.sid, start, end - start)
        # Only the first `cols` words of each row are read (the last row may end the SRAM).
        source = strided(sram.data, start, rows, cols, sstride)
        if not strided(written, start, rows, cols, sstride).all():
            m.uninit_sram(sram.sid, start, end - start)
        if m.pending:
            m.check_pending(sram.sid, start, end, False)
        hbm = addr[areg] + aoff
        region, view, offset = m.hbm_view(hbm, rows, cols, hstride, True)
        view[...] = source
        counters = m.hbm_mark(region, offset, rows, cols, hstride // region.itemsize)
        m.dma_issue(
            unit,
            cost(bursts_touched(hbm, rows, cols * region.itemsize, hstride, burst)),
            latency,
            tag,
            ((sram.sid, start, end, False),),
            (counters, region),
        )
        m.dma_bytes_written += rows * cols * region.itemsize
        m.t += 1
        return nxt

    return step


def _bind_copy(m: Machine, d: Decoded) -> Step:
    (dreg, doff), (sreg, soff), n_r, tag = d.operands
    regs = m.regs["r"]
    vsram, msram = m.sram["vsram"], m.sram["msram"]
    unit = m.platform.unit_index("dma")
    cost = formula_function(d.instruction.cost, m.env, ("n",))
    nxt = d.pc + 1

    def step() -> int:
        m.dma_slot()
        n = regs[n_r]
        src = regs[sreg] + soff
        dst = regs[dreg] + doff
        m.check_sram(vsram.sid, src, n, False)
        m.check_sram(msram.sid, dst, n, True)
        m.dma_issue(
            unit,
            cost(n),
            0,
            tag,
            ((vsram.sid, src, src + n, False), (msram.sid, dst, dst + n, True)),
        )
        msram.data[dst : dst + n] = vsram.data[src : src + n]
        m.mark_sram(msram.sid, dst, n)
        m.t += 1
        return nxt

    return step


# -- the instruction table -----------------------------------------------------------------------

GROUPS = (
    Group(
        "scalar",
        "Scalar",
        "Integer, fp32 and address arithmetic, executed by the front end in one cycle each.",
    ),
    Group(
        "control",
        "Control",
        "Branches, zero-overhead hardware loops and the end of the program.",
    ),
    Group(
        "memory",
        "Memory (DMA)",
        "Asynchronous strided transfers between HBM and the SRAMs, and the waits that complete "
        "them.",
    ),
    Group(
        "vector",
        "Vector",
        "Elementwise, special-function, reduction and mask instructions on VL consecutive "
        "VSRAM words (VL <= VLEN, set by `setvl`).",
    ),
    Group(
        "matrix",
        "Matrix",
        "The systolic array: tile products accumulated in fp32 accumulator registers, and "
        "moves between accumulators and VSRAM.",
    ),
)


def _instructions(p: NpuParams, rf: dict[str, RegisterFile]) -> tuple[Instruction, ...]:
    r, f, acc, mask = rf["r"], rf["f"], rf["acc"], rf["m"]
    valign = min(p.mlen, p.vlen)
    vmem = Mem("vsram", r, align=valign)
    mmem = Mem("msram", r, align=p.mlen)
    hmem = Mem("hbm", rf["a"], align=2, offset_range=(INT_MIN, INT_MAX), unit="bytes")
    tag = Imm(0, p.dma_tags - 1)

    def rs(name: str, doc: str = "") -> F:
        return F(name, Reg(r), "read", doc=doc)

    def fs(name: str) -> F:
        return F(name, Reg(f), "read")

    vec = ("vl",)
    tile = ("mlen", "mlen")

    def vd(name: str = "vd", access: Any = "write", shape: tuple[str, ...] = vec) -> F:
        return F(name, vmem, access, shape)

    def va(name: str = "va", shape: tuple[str, ...] = vec) -> F:
        return F(name, vmem, "read", shape)

    table = Table(
        Dialect(
            ints=r,
            floats=f,
            addresses=rf["a"],
            vectors=vmem,
            single_source="s",
            address_noun="an address",
            scale="MLEN",
            example_ints=1,
            example_vectors=("[r3]", "[r1]", "[r2]"),
            omit=frozenset(("mini", "maxi", "vdiv", "vdivs", "vfmas", "vtanh")),
        )
    )
    add = table.add
    table.scalar_core()
    table.vector_length(p.vlen)
    table.branches()
    table.hardware_loops()
    table.halt_and_nop()
    # Memory.
    dma_cost = "dma_setup + cdiv(bursts * dma_burst_bytes, hbm_bytes_per_cycle)"
    tag_field = F("tag", tag, doc="completion group that dwait waits for")
    shape_fields = (
        rs("rows", "rows to transfer"),
        rs("cols", "elements per row"),
        rs("hstride", "bytes from one HBM row to the next"),
        rs("sstride", "words from one SRAM row to the next (>= cols)"),
        tag_field,
    )
    bursts_doc = (
        " Cost: `bursts` counts the DMA_BURST_BYTES-byte bursts of HBM that the rows touch, "
        "whole: each row moves every burst it overlaps, so a row that starts inside a burst "
        "(an unaligned address or row stride) moves one burst more than an aligned one."
    )
    load_doc = (
        "Copies rows x cols elements from HBM (row i starts at src + i * hstride bytes; the "
        "element type is the region's) into rows x sstride SRAM words at dst (row i at "
        "dst + i * sstride), converting to fp32 and filling columns cols..sstride-1 with 0. "
        "The transfer runs in the background: wait for its tag before touching dst." + bursts_doc
    )
    for mnemonic, space, sram_mem in (("dldv", "vsram", vmem), ("dldm", "msram", mmem)):
        add(
            mnemonic=mnemonic,
            fields=(F("dst", sram_mem, "write"), F("src", hmem, "read"), *shape_fields),
            group="memory",
            unit="dma",
            cost=dma_cost,
            latency="hbm_latency",
            summary=f"DMA a strided block from HBM into {space.upper()}",
            operation=f"{space.upper()}[dst + i*sstride + j] <- fp32(HBM[src + i*hstride + "
            "j*itemsize]) for i < rows, j < cols; 0 for cols <= j < sstride",
            description=load_doc,
            example=f"{mnemonic} [r1], [a0], r2, r3, r4, r5, 0",
            binder=_bind_load(space),
        )
    add(
        mnemonic="dstv",
        fields=(F("dst", hmem, "write"), F("src", vmem, "read"), *shape_fields),
        group="memory",
        unit="dma",
        cost=dma_cost,
        latency="hbm_latency",
        summary="DMA a strided block from VSRAM to HBM",
        operation="HBM[dst + i*hstride + j*itemsize] <- round(VSRAM[src + i*sstride + j]) "
        "for i < rows, j < cols",
        description="Rounds to the region's element type (bf16: to nearest even). Only output "
        "and scratch regions are writable; rows may not overlap (hstride >= cols * itemsize). "
        "Wait for the tag before writing src again or reading the stored HBM bytes back."
        + bursts_doc,
        example="dstv [a1], [r1], r2, r3, r4, r5, 1",
        binder=_bind_store,
    )
    add(
        mnemonic="dcpy",
        fields=(F("dst", mmem, "write"), F("src", vmem, "read"), rs("n", "words"), tag_field),
        group="memory",
        unit="dma",
        cost="dma_setup + cdiv(n, sram_copy_words_per_cycle)",
        summary="DMA n words from VSRAM to MSRAM",
        operation="MSRAM[dst + i] <- VSRAM[src + i] for i < n",
        description="Moves a tile computed by the vector or matrix unit to where the matrix "
        "unit reads its second operand.",
        example="dcpy [r6], [r1], r7, 2",
        binder=_bind_copy,
    )
    add(
        mnemonic="dwait",
        fields=(F("tag", tag),),
        group="memory",
        unit="scalar",
        cost="1",
        summary="wait for the DMA transfers of a tag",
        operation="stall until every transfer issued with tag has landed; retire them",
        example="dwait 0",
        binder=_bind_dwait,
    )
    add(
        mnemonic="dfence",
        fields=(),
        group="memory",
        unit="scalar",
        cost="1",
        summary="wait for every DMA transfer",
        operation="dwait every tag",
        example="dfence",
        binder=_bind_dwait,
    )
    table.vector_core(
        cost="vec_cycles",
        special_cost="vec_special_cycles",
        reduce_cost="vec_reduce_cycles + ceil(log2(vl))",
    )
    cond = F("cond", Enum(tuple(semantics.COMPARE)))
    mask_out = F("md", Reg(mask), "write", vec)
    add(
        mnemonic="vcmp",
        fields=(mask_out, va(), va("vb"), cond),
        group="vector",
        unit="vector",
        cost="vec_cycles",
        summary="compare two vectors into a mask",
        operation="md[i] <- va[i] cond vb[i] for i < VL (false when either is NaN, except ne)",
        example="vcmp m1, [r1], [r2], lt",
        semantics=semantics.compare,
    )
    add(
        mnemonic="vcmps",
        fields=(mask_out, va(), fs("fs"), cond),
        group="vector",
        unit="vector",
        cost="vec_cycles",
        summary="compare a vector with a scalar into a mask",
        operation="md[i] <- va[i] cond fs for i < VL",
        example="vcmps m1, [r1], f2, ge",
        semantics=semantics.compare,
    )
    add(
        mnemonic="vsel",
        fields=(vd(), F("ms", Reg(mask), "read", vec), va(), va("vb")),
        group="vector",
        unit="vector",
        cost="vec_cycles",
        summary="select by a mask",
        operation="vd[i] <- ms[i] ? va[i] : vb[i] for i < VL",
        example="vsel [r3], m1, [r1], [r2]",
        semantics=semantics.select,
    )
    # Matrix.
    acc_rw = F("acc", Reg(acc), "readwrite", tile)
    a_tile = F("va", vmem, "read", tile)
    # The products read their operands as float64 (`wide`): see `_wide`.
    a_wide = F("va", vmem, "read", tile, wide=True)
    b_tile = F("mb", mmem, "read", tile, wide=True)
    mm_doc = (
        "A is a tile of VSRAM, B a tile of MSRAM, each MLEN x MLEN fp32 words stored row-major "
        "and contiguous. Each dot product is formed exactly enough (in float64) that only the "
        "final addition to the accumulator rounds to fp32."
    )
    add(
        mnemonic="mzero",
        fields=(F("acc", Reg(acc), "write", tile),),
        group="matrix",
        unit="matrix",
        cost="1",
        summary="zero an accumulator",
        operation="acc <- 0",
        example="mzero acc0",
        semantics=lambda t: t.fill(0.0),
    )
    add(
        mnemonic="mm",
        fields=(acc_rw, a_wide, b_tile),
        group="matrix",
        unit="matrix",
        cost="2 * mlen",
        summary="tile matrix multiply-accumulate",
        operation="acc <- acc + A @ B",
        description=mm_doc + " Cost: MLEN cycles to load B "
        "into the array, MLEN to stream the rows of A.",
        example="mm acc0, [r1], [r2]",
        semantics=_mm,
        work=(tile, tile),
    )
    add(
        mnemonic="mmt",
        fields=(acc_rw, a_wide, b_tile),
        group="matrix",
        unit="matrix",
        cost="2 * mlen",
        summary="tile multiply-accumulate with B transposed",
        operation="acc <- acc + A @ transpose(B)",
        description=mm_doc + " Useful for Q @ K^T with K loaded row-major.",
        example="mmt acc1, [r1], [r2]",
        semantics=_mmt,
        work=(tile, tile),
    )
    add(
        mnemonic="mmb",
        fields=(
            acc_rw,
            F("va", vmem, "read", ("n", "mlen", "mlen"), wide=True),
            F("mb", mmem, "read", ("n", "mlen", "mlen"), wide=True),
            F("n", Imm(1, 256), doc="tile pairs"),
        ),
        group="matrix",
        unit="matrix",
        cost="mlen + n * mlen",
        summary="batched multiply-accumulate over n consecutive tile pairs",
        operation="acc <- acc + sum(A_t @ B_t for t < n), A_t at va + t*MLEN*MLEN, "
        "B_t at mb + t*MLEN*MLEN",
        description="Loads the next B into the array while the current A streams, so n tiles "
        "cost (n + 1) * MLEN cycles instead of 2n * MLEN. The chain rounds to fp32 once.",
        example="mmb acc0, [r1], [r2], 4",
        semantics=_mmb,
        work=(tile, tile),
    )
    vec_m = ("mlen",)
    add(
        mnemonic="mv",
        fields=(F("vd", vmem, "readwrite", vec_m), F("va", vmem, "read", vec_m, wide=True), b_tile),
        group="matrix",
        unit="matrix",
        cost="mlen + 1",
        summary="vector-matrix multiply-accumulate",
        operation="vd <- vd + va @ B (vectors of MLEN words)",
        description="One row through the array: the weight load dominates (GEMV is "
        "bandwidth-bound).",
        example="mv [r3], [r1], [r2]",
        semantics=_mv,
        work=(vec_m, vec_m),
    )
    add(
        mnemonic="mvt",
        fields=(F("vd", vmem, "readwrite", vec_m), F("va", vmem, "read", vec_m, wide=True), b_tile),
        group="matrix",
        unit="matrix",
        cost="mlen + 1",
        summary="matrix-vector multiply-accumulate (B transposed)",
        operation="vd <- vd + B @ va (vectors of MLEN words)",
        example="mvt [r3], [r1], [r2]",
        semantics=_mvt,
        work=(vec_m, vec_m),
    )
    add(
        mnemonic="mst",
        fields=(F("vd", vmem, "write", tile), F("acc", Reg(acc), "read", tile)),
        group="matrix",
        unit="matrix",
        cost="mlen",
        summary="store an accumulator to VSRAM",
        operation="VSRAM tile vd <- acc",
        example="mst [r3], acc0",
        semantics=semantics.copy,
    )
    add(
        mnemonic="mld",
        fields=(F("acc", Reg(acc), "write", tile), a_tile),
        group="matrix",
        unit="matrix",
        cost="mlen",
        summary="load an accumulator from VSRAM",
        operation="acc <- VSRAM tile va",
        example="mld acc2, [r1]",
        semantics=semantics.copy,
    )
    return table.instructions()


# -- the platform ------------------------------------------------------------------------------


@platform("npu", NpuParams, Path(__file__).with_name("npu.toml"))
def build_npu(p: NpuParams) -> Platform:
    """Build the npu for one set of hardware parameters."""
    from gauntlet.accel.platforms.npu_manual import chapters, microbenchmarks

    rf = _register_files(p)
    isa = ISA(_instructions(p, rf), GROUPS, tuple(rf.values()))
    units = (
        Unit("scalar", "scalar front end", "frontend"),
        Unit("dma", "DMA engine", "dma", p.dma_queue_depth),
        Unit("matrix", "matrix unit", "compute", p.queue_depth),
        Unit("vector", "vector unit", "compute", p.queue_depth),
    )
    spaces = (
        Space("vsram", "vector SRAM", p.vsram_words, min(p.mlen, p.vlen)),
        Space("msram", "matrix SRAM", p.msram_words, p.mlen),
    )
    return Platform(
        name="npu",
        title="npu: a tensor accelerator for ML inference",
        summary=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "",
        params=p,
        isa=isa,
        units=units,
        spaces=spaces,
        chapters=chapters(p),
        microbenchmarks=microbenchmarks(),
        # The array retires MLEN x MLEN multiply-adds per cycle when batched (mmb).
        peak_flops_per_cycle=2.0 * p.mlen * p.mlen,
        hbm_bytes_per_cycle=float(p.hbm_bytes_per_cycle),
        clock_ghz=p.clock_ghz,
        hbm_bytes=p.hbm_bytes,
    )
