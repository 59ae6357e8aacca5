"""The `rvv` platform: a vector core in the style of RISC-V with the vector extension.

A scalar pipeline with integer, fp32 and pointer registers and ordinary branches; 32 vector
registers of VLEN fp32 elements that group into longer vectors (LMUL 1, 2, 4 or 8), with a
vector length set by `v.cfg` for vector-length-agnostic, strip-mined loops; a vector unit
LANES elements wide with fused multiply-add, reductions, masks and transcendental functions;
and a memory unit whose unit-stride and strided loads and stores move whole lines of main memory
at a fixed bandwidth and latency.

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
    Binder,
    Enum,
    Group,
    Imm,
    Instruction,
    Mem,
    Reg,
    RegGroup,
    RegisterFile,
    Step,
    evaluate_formula,
    formula_function,
)
from gauntlet.accel.isa import Field as F
from gauntlet.accel.machine import MEMORY_DEPENDENCY, REGISTER_DEPENDENCY, Machine, strided
from gauntlet.accel.platform import Platform, Space, Unit, platform

F64 = np.float64
INT_MIN, INT_MAX = semantics.INT_MIN, semantics.INT_MAX

#: Vector registers, and how many of them one operand may group (LMUL).
VREGS = 32
LMULS = ("m1", "m2", "m4", "m8")
MAX_LMUL = 8


class RvvParams(BaseModel):
    """Hardware parameters of the rvv core; defaults in `rvv.toml`, overridable per task config."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    vlen: int = Field(ge=4, le=1024)
    """fp32 elements per vector register (a power of two); LMUL registers hold LMUL * VLEN."""
    lanes: int = Field(ge=1, le=1024)
    """fp32 elements the vector unit processes per cycle (a power of two, at most VLEN)."""
    queue_depth: int = Field(ge=1, le=64)
    """Instructions the vector unit queues before the front end stalls."""
    mem_queue_depth: int = Field(ge=1, le=64)
    """Loads and stores the memory unit queues before the front end stalls."""
    memory_bytes: int = Field(ge=1 << 20)
    """Main-memory capacity in bytes; the memory contract must fit below it."""
    mem_bytes_per_cycle: int = Field(ge=1)
    """Bandwidth of the memory port in bytes per cycle."""
    line_bytes: int = Field(ge=4, le=4096)
    """Memory access granularity: an access moves every line it touches, whole (a power of
    two)."""
    mem_latency: int = Field(ge=0)
    """Cycles from the end of a load's transfer until its data is in the registers."""
    mem_setup: int = Field(ge=0)
    """Cycles the memory unit spends on each access (address generation, request)."""
    mem_inflight: int = Field(ge=1, le=256)
    """Vector loads and stores the memory unit keeps in flight (its miss-status entries): one
    more starts only when the oldest has landed."""
    clock_ghz: float = Field(gt=0)
    """Clock frequency, to convert cycles to time."""
    branch_penalty: int = Field(ge=0)
    """Extra front-end cycles after a taken branch."""
    vec_latency: int = Field(ge=0)
    """Cycles after the vector unit finishes an instruction until its result is visible to the
    memory unit and to scalar instructions."""
    special_cycles: int = Field(ge=1)
    """Cycles per group of LANES elements of exp, tanh, reciprocal and reciprocal square
    root."""
    reduce_cycles: int = Field(ge=0)
    """Cycles a reduction adds to its adder tree."""

    @model_validator(mode="after")
    def _sizes(self) -> RvvParams:
        for name in ("vlen", "lanes", "line_bytes"):
            value = getattr(self, name)
            if value & (value - 1):
                raise ValueError(f"{name}={value} must be a power of two")
        if self.lanes > self.vlen:
            raise ValueError(f"lanes={self.lanes} must be at most vlen={self.vlen}")
        return self


# -- register files ----------------------------------------------------------------------------


def _register_files(p: RvvParams) -> dict[str, RegisterFile]:
    return {
        "s": RegisterFile("s", "s", 32, "int", "integer registers", bits=32, zero=0),
        "f": RegisterFile("f", "f", 32, "float", "fp32 registers"),
        "p": RegisterFile("p", "p", 16, "address", "pointer registers", bits=48, signed=False),
        "k": RegisterFile(
            "k", "k", 8, "array", "mask registers", shape=(f"{MAX_LMUL} * vlen",), dtype="bool"
        ),
    }


# -- semantics ---------------------------------------------------------------------------------
# Data semantics receive the operands in field order: views of vector registers and masks
# (written in place), values of scalar registers read, immediates; a written scalar register is
# the return value. Every fp32 result is rounded once: numpy's fp32 sub, sqrt and abs are IEEE;
# fnma is computed in float64 and rounded once. The semantics shared with the other platforms
# (scalar arithmetic, elementwise operations, fma, the transcendentals) are in
# `gauntlet.accel.families`.


def _reversed(ufunc: Any) -> Callable[..., None]:
    def apply(d: np.ndarray, a: np.ndarray, b: float) -> None:
        ufunc(b, a, out=d)

    apply.__name__ = f"v_r{ufunc.__name__}"
    return apply


def _unary(ufunc: Any) -> Callable[..., None]:
    def apply(d: np.ndarray, a: np.ndarray) -> None:
        ufunc(a, out=d)

    apply.__name__ = f"v_{ufunc.__name__}"
    return apply


def _fnma(d: np.ndarray, a: np.ndarray, b: Any) -> None:
    d[...] = d - a.astype(F64) * b


# -- binders: configuration, control and memory instructions ------------------------------------


def _schedule(
    m: Machine,
    unit: int,
    cost: int,
    latency: int,
    accesses: tuple[tuple[int, int, int, bool], ...],
    ready_at: int = 0,
) -> int:
    """Put a memory-unit instruction on its timeline, as the vector unit's generated steps do.

    It waits for a queue slot (the front end stalls), for its unit, for a scalar register
    another unit still computes (`ready_at`), and for the other units' in-flight instructions
    touching the same vector registers; then it occupies its unit for `cost` cycles and its
    result lands `latency` cycles later. Returns that cycle.
    """
    t = m.t
    queue = m.queues[unit]
    if len(queue) == queue.maxlen and queue[0] > t:
        t = m.queue_stall(queue[0], t)
    start = max(t, m.free[unit])
    if ready_at > start:
        m.stalls[REGISTER_DEPENDENCY] += ready_at - start
        start = ready_at
    if accesses and any(m.horizon[u] > start for u in m.compute_units if u != unit):
        start = m.deps(unit, start, accesses)
    records = m.inflight[unit]
    if accesses and len(records) == records.maxlen and records[0][0] > start:
        # Every tracking entry holds an access still in flight: wait for the oldest to land.
        m.stalls[MEMORY_DEPENDENCY] += records[0][0] - start
        start = records[0][0]
    end = start + cost
    m.free[unit] = end
    m.busy[unit] += cost
    m.counts[unit] += 1
    queue.append(start)
    done = end + latency
    # Loads land later than stores: the horizon is the latest landing, not the last issued.
    if done > m.horizon[unit]:
        m.horizon[unit] = done
    if accesses:
        m.inflight[unit].append((done, *(x for access in accesses for x in access)))
    m.t = t + 1
    return done


def _bind_cfg(m: Machine, d: Decoded) -> Step:
    rd, source, lmul = d.operands
    immediate = d.instruction.mnemonic == "v.cfgk"
    vlmax = int(lmul[1:]) * int(m.params["vlen"])
    regs = m.regs["s"]
    nxt = d.pc + 1

    def step() -> int:
        avl = source if immediate else regs[source]
        if avl < 1:
            m.fault(
                "invalid_operand",
                f"v.cfg with an application vector length of {avl}; it must be >= 1",
            )
        vl = avl if avl < vlmax else vlmax
        m.set_vl(vl)
        if rd:
            regs[rd] = vl
        m.t += 1
        return nxt

    return step


def _lines(address: int, count: int, stride: int, itemsize: int, line: int) -> int:
    """Lines of `line` bytes touched by `count` elements from `address`, `stride` bytes apart.

    Elements are aligned to their size, which divides the line, so none straddles two lines;
    with a stride shorter than a line no line between the first and the last is skipped.
    """
    if stride >= line:
        return count
    last = address + (count - 1) * stride + itemsize - 1
    return last // line - address // line + 1


def _bind_vector_access(store: bool, stride_operand: bool) -> Binder:
    def binder(m: Machine, d: Decoded) -> Step:
        operands = list(d.operands)
        if store:
            (preg, poff), *middle, (_, lo) = operands
        else:
            (_, lo), (preg, poff), *middle = operands
        sreg = middle[0] if stride_operand else 0
        vrf = m.sram["vrf"]
        sid = vrf.sid
        unit = m.platform.unit_index("memory")
        cost = formula_function(d.instruction.cost, m.env, ("lines",))
        latency = evaluate_formula(d.instruction.latency, m.env)
        line = int(m.params["line_bytes"])
        pregs, sregs = m.regs["p"], m.regs["s"]
        nxt = d.pc + 1

        def step() -> int:
            vl = m.vl
            hi = lo + vl
            if hi > vrf.words:
                m.bad_sram(sid, lo, vl)
            address = pregs[preg] + poff
            stride = sregs[sreg]  # s0 (0) when the instruction has no stride operand
            if stride_operand:
                region, view, offset = m.hbm_view(address, vl, 1, stride, store)
            else:
                region, view, offset = m.hbm_view(address, 1, vl, 0, store)
            size = region.itemsize
            lines = _lines(address, vl, stride if stride_operand else size, size, line)
            if store:
                if vrf.written.find(0, lo, hi) >= 0:
                    m.uninit_sram(sid, lo, vl)
                view[...] = vrf.data[lo:hi].reshape(view.shape)
                assert region.written is not None  # hbm_view refuses writes to inputs
                step_elements = stride // size if stride_operand else vl
                rows, cols = view.shape
                strided(region.written, offset, rows, cols, step_elements)[...] = True
                m.dma_bytes_written += vl * size
            else:
                vrf.data[lo:hi] = view.reshape(-1)
                m.mark_sram(sid, lo, vl)
                m.dma_bytes_read += vl * size
            _schedule(m, unit, cost(lines), latency, ((sid, lo, hi, not store),))
            return nxt

        return step

    return binder


def _bind_scalar_access(store: bool) -> Binder:
    def binder(m: Machine, d: Decoded) -> Step:
        if store:
            (preg, poff), freg = d.operands
        else:
            freg, (preg, poff) = d.operands
        unit = m.platform.unit_index("memory")
        cost = formula_function(d.instruction.cost, m.env, ("lines",))(1)
        latency = evaluate_formula(d.instruction.latency, m.env)
        pregs, fregs, fready = m.regs["p"], m.regs["f"], m.ready["f"]
        nxt = d.pc + 1

        def step() -> int:
            region, view, offset = m.hbm_view(pregs[preg] + poff, 1, 1, 0, store)
            if store:
                view[0, 0] = fregs[freg]
                assert region.written is not None  # hbm_view refuses writes to inputs
                region.written[offset] = True
                m.dma_bytes_written += region.itemsize
                _schedule(m, unit, cost, latency, (), fready[freg])
            else:
                fregs[freg] = float(view[0, 0])
                m.dma_bytes_read += region.itemsize
                fready[freg] = _schedule(m, unit, cost, latency, ())
            return nxt

        return step

    return binder


# -- the instruction table -----------------------------------------------------------------------

#: rvv's spelling of the instructions it shares with the other platforms
#: (`gauntlet.accel.families`): a unit prefix (`s.`, `f.`, `p.`, `j.`, `v.`), `k` for an
#: immediate form, `f` for a vector instruction's scalar form.
SPELLING: dict[str, str] = {
    "li": "s.set",
    "mov": "s.mov",
    **{op: f"s.{op}" for op in ("add", "sub", "mul", "min", "max")},
    **{f"{op}i": f"s.{op}k" for op in ("add", "mul", "div", "rem")},
    "slli": "s.shlk",
    "srai": "s.shrk",
    "ftoi": "s.cvt",
    "fli": "f.set",
    "fmov": "f.mov",
    **{f"f{op}": f"f.{op}" for op in ("add", "sub", "mul", "div", "max", "min", "sqrt")},
    "itof": "f.cvt",
    "la": "p.set",
    "mova": "p.mov",
    "adda": "p.add",
    "addai": "p.addk",
    "b": "j.go",
    **{f"b{c}": f"j.{c}" for c in ("eq", "ne", "lt", "ge")},
    **{f"v{op}": f"v.{op}" for op in ("add", "sub", "mul", "div", "max", "min")},
    **{f"v{op}s": f"v.{op}f" for op in ("add", "sub", "mul", "div", "max", "min")},
    "vfma": "v.fma",
    "vfmas": "v.fmaf",
    "vmov": "v.mov",
    "vbcast": "v.splat",
    "viota": "v.iota",
    **{f"v{op}": f"v.{op}" for op in ("exp", "tanh", "rsqrt", "bf16")},
    "vrecip": "v.rcp",
    "vredsum": "v.rsum",
    "vredmax": "v.rmax",
}


GROUPS = (
    Group(
        "scalar",
        "Scalar",
        "Integer, fp32 and pointer arithmetic, executed by the front end in one cycle each.",
    ),
    Group(
        "control",
        "Control",
        "Branches (loops are ordinary scalar code), the end of the program, and the vector "
        "configuration: `v.cfg` sets the vector length VL and the register grouping LMUL.",
    ),
    Group(
        "memory",
        "Memory",
        "Unit-stride and strided vector loads and stores, and scalar fp32 loads and stores, "
        "between main memory and the registers, run by the memory unit.",
    ),
    Group(
        "vector",
        "Vector",
        "Elementwise arithmetic, fused multiply-add, transcendental functions, reductions and "
        "moves on the first VL elements of vector register groups, run by the vector unit.",
    ),
    Group(
        "mask",
        "Mask",
        "Comparisons into mask registers, selection by a mask, and mask logic, on the first "
        "VL elements.",
    ),
)


def _instructions(p: RvvParams, rf: dict[str, RegisterFile]) -> tuple[Instruction, ...]:
    s, f, ptr, k = rf["s"], rf["f"], rf["p"], rf["k"]
    vreg = RegGroup(
        "vrf",
        s,
        align=p.vlen,
        offset_range=(0, (VREGS - 1) * p.vlen),
        prefix="v",
        count=VREGS,
        size=p.vlen,
        title="vector registers",
    )
    mem = Mem("main-memory", ptr, align=2, offset_range=(INT_MIN, INT_MAX), unit="bytes")
    vec = ("vl",)

    def sd(name: str = "sd") -> F:
        return F(name, Reg(s), "write")

    def sa(name: str, doc: str = "") -> F:
        return F(name, Reg(s), "read", doc=doc)

    def fd(name: str = "fd") -> F:
        return F(name, Reg(f), "write")

    def fa(name: str) -> F:
        return F(name, Reg(f), "read")

    def vd(name: str = "vd", access: Any = "write") -> F:
        return F(name, vreg, access, vec)

    def va(name: str = "va") -> F:
        return F(name, vreg, "read", vec)

    def kd(name: str = "kd") -> F:
        return F(name, Reg(k), "write", vec)

    def ka(name: str = "ka") -> F:
        return F(name, Reg(k), "read", vec)

    table = Table(
        Dialect(
            ints=s,
            floats=f,
            addresses=ptr,
            vectors=vreg,
            single_source="a",
            address_noun="a pointer",
            scale="VLEN",
            example_ints=1,
            example_vectors=("v3", "v1", "v2"),
            mnemonics=SPELLING,
            omit=frozenset(("mini", "maxi")),
        )
    )
    add = table.add
    table.scalar_core()
    table.branches()
    table.halt_and_nop()
    lmul = F("lmul", Enum(LMULS), doc="register grouping: m<n> groups n registers")
    cfg_doc = (
        "Sets the vector length for the instructions that follow: VL = min(avl, LMUL * VLEN), "
        "and writes VL to sd, so a strip-mined loop subtracts sd from the elements it has "
        "left. A vector operand `vN` then covers VL elements from the first element of vN on: "
        "the registers vN .. vN + ceil(VL / VLEN) - 1, which must exist (v31 is the last)."
    )
    add(
        mnemonic="v.cfg",
        fields=(sd("sd"), sa("avl", "application vector length: elements left to process"), lmul),
        group="control",
        unit="scalar",
        cost="1",
        summary="set the vector length and grouping",
        operation="VL <- min(avl, LMUL * VLEN); sd <- VL; fault if avl < 1",
        description=cfg_doc,
        example="v.cfg s5, s4, m4",
        binder=_bind_cfg,
    )
    add(
        mnemonic="v.cfgk",
        fields=(sd("sd"), F("avl", Imm(1, INT_MAX), doc="application vector length"), lmul),
        group="control",
        unit="scalar",
        cost="1",
        summary="set the vector length and grouping from an immediate",
        operation="VL <- min(avl, LMUL * VLEN); sd <- VL",
        description=cfg_doc,
        example="v.cfgk s0, 2 * VLEN, m2",
        binder=_bind_cfg,
    )
    # Memory.
    mem_cost = "mem_setup + cdiv(lines * line_bytes, mem_bytes_per_cycle)"
    lines_doc = (
        " The access moves every line of LINE_BYTES bytes it touches, whole: `lines` is how "
        "many (a strided access whose stride is at least a line moves one line per element)."
    )
    load_doc = (
        "Loads convert the region's element type (fp32 or bf16) to fp32 exactly. The "
        "destination is ready `mem_latency` cycles after the transfer: a vector instruction "
        "reading it earlier waits (memory_dependency), and so does the next load into a "
        "register a queued vector instruction still reads." + lines_doc
    )
    store_doc = (
        "Stores round fp32 to the region's element type (bf16: to nearest even). Only output "
        "and scratch regions are writable. A store waits until the vector instruction that "
        "computes its source has finished." + lines_doc
    )
    address = F("addr", mem, "read", doc="byte address of element 0")
    stride = sa("stride", "bytes from one element to the next (>= 0)")
    add(
        mnemonic="ld.v",
        fields=(vd(), address),
        group="memory",
        unit="memory",
        cost=mem_cost,
        latency="mem_latency",
        summary="unit-stride vector load",
        operation="vd[i] <- fp32(M[addr + i * itemsize]) for i < VL",
        description=load_doc,
        example="ld.v v8, [p0 + 64]",
        binder=_bind_vector_access(store=False, stride_operand=False),
    )
    add(
        mnemonic="ld.vs",
        fields=(vd(), address, stride),
        group="memory",
        unit="memory",
        cost=mem_cost,
        latency="mem_latency",
        summary="strided vector load",
        operation="vd[i] <- fp32(M[addr + i * stride]) for i < VL",
        description="A column of a row-major matrix is a strided load; a stride of 0 (`s0`) "
        "broadcasts one element. " + load_doc,
        example="ld.vs v8, [p0], s3",
        binder=_bind_vector_access(store=False, stride_operand=True),
    )
    add(
        mnemonic="st.v",
        fields=(F("addr", mem, "write", doc="byte address of element 0"), va("vs")),
        group="memory",
        unit="memory",
        cost=mem_cost,
        summary="unit-stride vector store",
        operation="M[addr + i * itemsize] <- round(vs[i]) for i < VL",
        description=store_doc,
        example="st.v [p1], v8",
        binder=_bind_vector_access(store=True, stride_operand=False),
    )
    add(
        mnemonic="st.vs",
        fields=(F("addr", mem, "write", doc="byte address of element 0"), stride, va("vs")),
        group="memory",
        unit="memory",
        cost=mem_cost,
        summary="strided vector store",
        operation="M[addr + i * stride] <- round(vs[i]) for i < VL",
        description="Elements may not overlap: the stride is at least the element size. "
        + store_doc,
        example="st.vs [p1], s3, v8",
        binder=_bind_vector_access(store=True, stride_operand=True),
    )
    add(
        mnemonic="ld.f",
        fields=(fd(), address),
        group="memory",
        unit="memory",
        cost=mem_cost,
        latency="mem_latency",
        summary="scalar fp32 load",
        operation="fd <- fp32(M[addr])",
        description="Runs on the memory unit (lines = 1); an instruction reading fd before the "
        "data has landed waits (register_dependency).",
        example="ld.f f3, [p2 + 8]",
        binder=_bind_scalar_access(store=False),
    )
    add(
        mnemonic="st.f",
        fields=(F("addr", mem, "write", doc="byte address"), fa("fs")),
        group="memory",
        unit="memory",
        cost=mem_cost,
        summary="scalar fp32 store",
        operation="M[addr] <- round(fs)",
        description="Runs on the memory unit (lines = 1), after the instruction computing fs "
        "(a reduction, say) has finished.",
        example="st.f [p1 + 4], f2",
        binder=_bind_scalar_access(store=True),
    )
    # Vector.
    elementwise = "cdiv(vl, lanes)"
    table.vector_core(
        cost=elementwise,
        special_cost="cdiv(vl, lanes) * special_cycles",
        reduce_cost="cdiv(vl, lanes) + ceil(log2(lanes)) + reduce_cycles",
        latency="vec_latency",
        special_note="Runs in the vector unit's special-function pipeline, special_cycles per "
        "group of LANES elements.",
        reduce_note="The adder tree folds the vector into LANES partial results, then into one. ",
    )

    def vector(**kwargs: Any) -> None:
        kwargs.setdefault("cost", elementwise)
        kwargs.setdefault("group", "vector")
        add(unit="vector", latency="vec_latency", **kwargs)

    vector(
        mnemonic="v.rsubf",
        fields=(vd(), va(), fa("fs")),
        summary="subtract a vector from a scalar",
        operation="vd[i] <- fs - va[i] for i < VL",
        example="v.rsubf v3, v1, f1",
        semantics=_reversed(np.subtract),
    )
    vector(
        mnemonic="v.fnma",
        fields=(vd(access="readwrite"), va(), va("vb")),
        summary="vector fused multiply-subtract",
        operation="vd[i] <- vd[i] - va[i] * vb[i], rounded once, for i < VL",
        example="v.fnma v3, v1, v2",
        semantics=_fnma,
    )
    vector(
        mnemonic="v.fnmaf",
        fields=(vd(access="readwrite"), va(), fa("fs")),
        summary="vector fused multiply-subtract with a scalar",
        operation="vd[i] <- vd[i] - va[i] * fs, rounded once, for i < VL",
        example="v.fnmaf v3, v1, f1",
        semantics=_fnma,
    )
    unary_vec: tuple[tuple[str, str, Any, str], ...] = (
        ("neg", "vector negation", _unary(np.negative), "-va[i]"),
        ("abs", "vector absolute value", _unary(np.abs), "|va[i]|"),
        ("sqrt", "vector square root", _unary(np.sqrt), "sqrt(va[i]) (NaN if va[i] < 0)"),
    )
    for name, summary, function, expression in unary_vec:
        vector(
            mnemonic=f"v.{name}",
            fields=(vd(), va()),
            summary=summary,
            operation=f"vd[i] <- {expression} for i < VL",
            example=f"v.{name} v3, v1",
            semantics=function,
        )
    vector(
        mnemonic="v.getf",
        fields=(fd(), F("va", vreg, "read", ("1",))),
        cost="1",
        summary="move element 0 to an fp32 register",
        operation="fd <- va[0]",
        description="Whatever VL is. fd is ready when the vector unit finishes; a scalar "
        "instruction reading it earlier stalls the front end.",
        example="v.getf f1, v3",
        semantics=lambda a: float(a[0]),
    )
    # Masks.
    cond = F("cond", Enum(tuple(semantics.COMPARE)))
    vector(
        mnemonic="v.cmp",
        fields=(kd(), va(), va("vb"), cond),
        group="mask",
        summary="compare two vectors into a mask",
        operation="kd[i] <- va[i] cond vb[i] for i < VL (false when either is NaN, except ne)",
        example="v.cmp k1, v1, v2, lt",
        semantics=semantics.compare,
    )
    vector(
        mnemonic="v.cmpf",
        fields=(kd(), va(), fa("fs"), cond),
        group="mask",
        summary="compare a vector with a scalar into a mask",
        operation="kd[i] <- va[i] cond fs for i < VL",
        example="v.cmpf k1, v1, f2, ge",
        semantics=semantics.compare,
    )
    vector(
        mnemonic="v.sel",
        fields=(vd(), ka("km"), va(), va("vb")),
        group="mask",
        summary="select by a mask",
        operation="vd[i] <- km[i] ? va[i] : vb[i] for i < VL",
        example="v.sel v3, k1, v1, v2",
        semantics=semantics.select,
    )
    mask_logic: tuple[tuple[str, str, Any, str], ...] = (
        ("and", "and", np.logical_and, "ka[i] and kb[i]"),
        ("or", "or", np.logical_or, "ka[i] or kb[i]"),
    )
    for name, verb, ufunc, expression in mask_logic:
        vector(
            mnemonic=f"k.{name}",
            fields=(kd(), ka(), ka("kb")),
            group="mask",
            summary=f"mask {verb}",
            operation=f"kd[i] <- {expression} for i < VL",
            example=f"k.{name} k3, k1, k2",
            semantics=semantics.elementwise(ufunc),
        )
    vector(
        mnemonic="k.not",
        fields=(kd(), ka()),
        group="mask",
        summary="mask negation",
        operation="kd[i] <- not ka[i] for i < VL",
        example="k.not k2, k1",
        semantics=_unary(np.logical_not),
    )
    vector(
        mnemonic="k.pop",
        fields=(fd(), ka()),
        group="mask",
        summary="count the set elements of a mask",
        operation="fd <- fp32(number of i < VL with ka[i])",
        description="The count arrives as an fp32 value, ready to divide a masked sum by "
        "(`s.cvt` makes it an integer). fd is ready when the vector unit finishes; a scalar "
        "instruction reading it earlier stalls the front end.",
        example="k.pop f4, k1",
        semantics=lambda a: float(np.count_nonzero(a)),
    )
    return table.instructions()


# -- the platform ------------------------------------------------------------------------------


@platform("rvv", RvvParams, Path(__file__).with_name("rvv.toml"))
def build_rvv(p: RvvParams) -> Platform:
    """Build the rvv core for one set of hardware parameters."""
    from gauntlet.accel.platforms.rvv_manual import (
        FAULT_DOCS,
        SYNTAX,
        chapters,
        microbenchmarks,
    )

    rf = _register_files(p)
    isa = ISA(_instructions(p, rf), GROUPS, tuple(rf.values()))
    units = (
        Unit("scalar", "scalar front end", "frontend"),
        Unit(
            "memory",
            "memory unit (loads and stores)",
            "compute",
            p.mem_queue_depth,
            tracked=p.mem_inflight,
        ),
        Unit("vector", "vector unit", "compute", p.queue_depth),
    )
    spaces = (Space("vrf", "vector register file", VREGS * p.vlen, p.vlen),)
    return Platform(
        name="rvv",
        title="rvv: a vector core in the style of RISC-V with the vector extension",
        summary=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "",
        params=p,
        isa=isa,
        units=units,
        spaces=spaces,
        chapters=chapters(p),
        microbenchmarks=microbenchmarks(),
        # One fused multiply-add per lane per cycle.
        peak_flops_per_cycle=2.0 * p.lanes,
        hbm_bytes_per_cycle=float(p.mem_bytes_per_cycle),
        clock_ghz=p.clock_ghz,
        hbm_bytes=p.memory_bytes,
        syntax=SYNTAX,
        fault_docs=FAULT_DOCS,
    )
