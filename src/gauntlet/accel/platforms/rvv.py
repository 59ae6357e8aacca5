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

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gauntlet.accel import control, semantics
from gauntlet.accel.assembler import Decoded
from gauntlet.accel.isa import (
    ISA,
    Binder,
    Enum,
    FImm,
    Group,
    Imm,
    Instruction,
    Label,
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
# the return value. Every fp32 result is rounded once: numpy's fp32 add, sub, mul, div, sqrt,
# min and max are IEEE; fma and the transcendentals are computed in float64 and rounded once.


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


def _fma(d: np.ndarray, a: np.ndarray, b: Any) -> None:
    d[...] = a.astype(F64) * b + d


def _fnma(d: np.ndarray, a: np.ndarray, b: Any) -> None:
    d[...] = d - a.astype(F64) * b


def _in_double(function: Any) -> Callable[..., None]:
    def apply(d: np.ndarray, a: np.ndarray) -> None:
        d[...] = function(a.astype(F64))

    apply.__name__ = f"v_{function.__name__}"
    return apply


def _rsqrt(a: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(a)  # type: ignore[no-any-return]


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
    imm32 = Imm(INT_MIN, INT_MAX)
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

    table: list[Instruction] = []

    def add(**kwargs: Any) -> None:
        table.append(Instruction(**kwargs))

    def scalar(**kwargs: Any) -> None:
        add(group="scalar", unit="scalar", cost="1", **kwargs)

    # Scalar integer.
    scalar(
        mnemonic="s.set",
        fields=(sd(), F("imm", imm32)),
        summary="load an integer immediate",
        operation="sd <- imm",
        example="s.set s1, 8 * VLEN",
        semantics=lambda imm: imm,
    )
    scalar(
        mnemonic="s.mov",
        fields=(sd(), sa("sa")),
        summary="copy an integer register",
        operation="sd <- sa",
        example="s.mov s2, s1",
        semantics=lambda x: x,
    )
    binary_int: tuple[tuple[str, str, Callable[[int, int], int], str], ...] = (
        ("add", "add", operator.add, "sd <- sa + sb"),
        ("sub", "subtract", operator.sub, "sd <- sa - sb"),
        ("mul", "multiply", operator.mul, "sd <- sa * sb"),
        ("min", "minimum", min, "sd <- min(sa, sb)"),
        ("max", "maximum", max, "sd <- max(sa, sb)"),
    )
    for name, verb, function, operation in binary_int:
        scalar(
            mnemonic=f"s.{name}",
            fields=(sd(), sa("sa"), sa("sb")),
            summary=f"integer {verb}",
            operation=operation + " (wraps to 32 bits)",
            example=f"s.{name} s3, s1, s2",
            semantics=function,
        )
    immediate_int: tuple[tuple[str, str, Callable[[int, int], int], Imm, str], ...] = (
        ("addk", "add an immediate", operator.add, imm32, "sd <- sa + imm"),
        ("mulk", "multiply by an immediate", operator.mul, imm32, "sd <- sa * imm"),
        (
            "divk",
            "divide by a positive immediate, rounding down",
            operator.floordiv,
            Imm(1, INT_MAX),
            "sd <- floor(sa / imm)",
        ),
        (
            "remk",
            "remainder of division by a positive immediate",
            operator.mod,
            Imm(1, INT_MAX),
            "sd <- sa - imm * floor(sa / imm)",
        ),
        ("shlk", "shift left", operator.lshift, Imm(0, 31), "sd <- sa << imm"),
        ("shrk", "arithmetic shift right", operator.rshift, Imm(0, 31), "sd <- sa >> imm"),
    )
    for name, verb, function, kind, operation in immediate_int:
        scalar(
            mnemonic=f"s.{name}",
            fields=(sd(), sa("sa"), F("imm", kind)),
            summary=f"integer {verb}",
            operation=operation + " (wraps to 32 bits)",
            example=f"s.{name} s3, s1, 4",
            semantics=function,
        )
    scalar(
        mnemonic="s.cvt",
        fields=(sd(), fa("fa")),
        summary="convert fp32 to an integer, rounding toward zero",
        operation="sd <- trunc(fa), saturated to 32 bits; NaN gives 0",
        example="s.cvt s1, f2",
        semantics=semantics.ftoi,
    )
    # Scalar fp32.
    scalar(
        mnemonic="f.set",
        fields=(fd(), F("imm", FImm())),
        summary="load an fp32 immediate",
        operation="fd <- fp32(imm)",
        example="f.set f1, -inf",
        semantics=lambda x: x,
    )
    scalar(
        mnemonic="f.mov",
        fields=(fd(), fa("fa")),
        summary="copy an fp32 register",
        operation="fd <- fa",
        example="f.mov f2, f1",
        semantics=lambda x: x,
    )
    binary_float: tuple[tuple[str, str, Callable[[float, float], float], str], ...] = (
        ("add", "add", operator.add, "fd <- fa + fb"),
        ("sub", "subtract", operator.sub, "fd <- fa - fb"),
        ("mul", "multiply", operator.mul, "fd <- fa * fb"),
        ("div", "divide", semantics.fdiv, "fd <- fa / fb (IEEE: x/0 is +-inf, 0/0 is NaN)"),
        ("max", "maximum", semantics.fmax, "fd <- max(fa, fb) (NaN if either is NaN)"),
        ("min", "minimum", semantics.fmin, "fd <- min(fa, fb) (NaN if either is NaN)"),
    )
    for name, verb, float_function, operation in binary_float:
        scalar(
            mnemonic=f"f.{name}",
            fields=(fd(), fa("fa"), fa("fb")),
            summary=f"fp32 {verb}",
            operation=operation + ", rounded to fp32",
            example=f"f.{name} f3, f1, f2",
            semantics=float_function,
        )
    scalar(
        mnemonic="f.sqrt",
        fields=(fd(), fa("fa")),
        summary="fp32 square root",
        operation="fd <- sqrt(fa), rounded to fp32 (NaN if fa < 0)",
        example="f.sqrt f2, f1",
        semantics=semantics.fsqrt,
    )
    scalar(
        mnemonic="f.cvt",
        fields=(fd(), sa("sa")),
        summary="convert an integer to fp32",
        operation="fd <- fp32(sa)",
        example="f.cvt f1, s2",
        semantics=float,
    )
    # Pointers.
    pd = F("pd", Reg(ptr), "write")
    pa = F("pa", Reg(ptr), "read")
    scalar(
        mnemonic="p.set",
        fields=(pd, F("imm", Imm(0, (1 << 48) - 1))),
        summary="load a main-memory address",
        operation="pd <- imm",
        example="p.set p4, y + 256",
        semantics=lambda x: x,
    )
    scalar(
        mnemonic="p.mov",
        fields=(pd, pa),
        summary="copy a pointer register",
        operation="pd <- pa",
        example="p.mov p5, p0",
        semantics=lambda x: x,
    )
    scalar(
        mnemonic="p.add",
        fields=(pd, pa, sa("sb")),
        summary="add an integer register to a pointer",
        operation="pd <- pa + sb (bytes)",
        example="p.add p5, p0, s3",
        semantics=operator.add,
    )
    scalar(
        mnemonic="p.addk",
        fields=(pd, pa, F("imm", imm32)),
        summary="add an immediate to a pointer",
        operation="pd <- pa + imm (bytes)",
        example="p.addk p0, p0, VLEN * 4",
        semantics=operator.add,
    )
    # Control.
    target = F("target", Label())
    add(
        mnemonic="j.go",
        fields=(target,),
        group="control",
        unit="scalar",
        cost="1 + branch_penalty",
        summary="jump",
        operation="pc <- target",
        example="done:\n    j.go done",
        binder=control.bind_branch("s", None),
    )
    branches: tuple[tuple[str, str, Callable[[int, int], bool]], ...] = (
        ("j.eq", "==", operator.eq),
        ("j.ne", "!=", operator.ne),
        ("j.lt", "<", operator.lt),
        ("j.ge", ">=", operator.ge),
    )
    for mnemonic, symbol, compare in branches:
        add(
            mnemonic=mnemonic,
            fields=(sa("sa"), sa("sb"), target),
            group="control",
            unit="scalar",
            cost="1 + taken * branch_penalty",
            summary=f"branch if sa {symbol} sb",
            operation=f"if sa {symbol} sb: pc <- target",
            description="taken is 1 when the branch is taken, else 0. Comparing with `s0` "
            "compares with zero.",
            example=f"top:\n    s.addk s1, s1, 1\n    {mnemonic} s1, s2, top",
            binder=control.bind_branch("s", compare),
        )
    add(
        mnemonic="halt",
        fields=(),
        group="control",
        unit="scalar",
        cost="1",
        summary="end the program",
        operation="stop; queued instructions drain",
        description="Running past the last instruction also ends the program.",
        example="halt",
        binder=control.bind_halt,
    )
    add(
        mnemonic="nop",
        fields=(),
        group="control",
        unit="scalar",
        cost="1",
        summary="do nothing for a cycle",
        operation="nothing",
        example="nop",
        semantics=lambda: None,
    )
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
    special = "cdiv(vl, lanes) * special_cycles"

    def vector(**kwargs: Any) -> None:
        kwargs.setdefault("cost", elementwise)
        kwargs.setdefault("group", "vector")
        add(unit="vector", latency="vec_latency", **kwargs)

    binary_vec: tuple[tuple[str, str, Any, str], ...] = (
        ("add", "add", np.add, "+"),
        ("sub", "subtract", np.subtract, "-"),
        ("mul", "multiply", np.multiply, "*"),
        ("div", "divide", np.divide, "/"),
        ("max", "maximum", np.maximum, "max"),
        ("min", "minimum", np.minimum, "min"),
    )
    for name, verb, ufunc, symbol in binary_vec:
        infix = symbol in "+-*/"
        expression = f"va[i] {symbol} vb[i]" if infix else f"{symbol}(va[i], vb[i])"
        vector(
            mnemonic=f"v.{name}",
            fields=(vd(), va(), va("vb")),
            summary=f"vector {verb}",
            operation=f"vd[i] <- {expression} for i < VL",
            example=f"v.{name} v3, v1, v2",
            semantics=semantics.elementwise(ufunc),
        )
        scalar_expression = f"va[i] {symbol} fs" if infix else f"{symbol}(va[i], fs)"
        vector(
            mnemonic=f"v.{name}f",
            fields=(vd(), va(), fa("fs")),
            summary=f"vector {verb} with a scalar",
            operation=f"vd[i] <- {scalar_expression} for i < VL",
            example=f"v.{name}f v3, v1, f1",
            semantics=semantics.elementwise(ufunc),
        )
    vector(
        mnemonic="v.rsubf",
        fields=(vd(), va(), fa("fs")),
        summary="subtract a vector from a scalar",
        operation="vd[i] <- fs - va[i] for i < VL",
        example="v.rsubf v3, v1, f1",
        semantics=_reversed(np.subtract),
    )
    fma_doc = "The product and the sum are formed exactly and rounded once to fp32."
    vector(
        mnemonic="v.fma",
        fields=(vd(access="readwrite"), va(), va("vb")),
        summary="fused multiply-add into the destination",
        operation="vd[i] <- va[i] * vb[i] + vd[i] for i < VL",
        description=fma_doc,
        example="v.fma v4, v1, v2",
        semantics=_fma,
    )
    vector(
        mnemonic="v.fmaf",
        fields=(vd(access="readwrite"), va(), fa("fs")),
        summary="fused multiply-add of a vector and a scalar into the destination",
        operation="vd[i] <- va[i] * fs + vd[i] for i < VL",
        description=fma_doc,
        example="v.fmaf v4, v1, f2",
        semantics=_fma,
    )
    vector(
        mnemonic="v.fnma",
        fields=(vd(access="readwrite"), va(), va("vb")),
        summary="fused multiply-subtract from the destination",
        operation="vd[i] <- vd[i] - va[i] * vb[i] for i < VL",
        description=fma_doc,
        example="v.fnma v4, v1, v2",
        semantics=_fnma,
    )
    vector(
        mnemonic="v.fnmaf",
        fields=(vd(access="readwrite"), va(), fa("fs")),
        summary="fused multiply-subtract of a vector and a scalar from the destination",
        operation="vd[i] <- vd[i] - va[i] * fs for i < VL",
        description=fma_doc,
        example="v.fnmaf v4, v1, f2",
        semantics=_fnma,
    )
    unary_vec: tuple[tuple[str, str, Any, str], ...] = (
        ("mov", "vector copy", semantics.copy, "va[i]"),
        ("neg", "vector negation", _unary(np.negative), "-va[i]"),
        ("abs", "vector absolute value", _unary(np.abs), "|va[i]|"),
        ("sqrt", "vector square root", _unary(np.sqrt), "sqrt(va[i]) (NaN if va[i] < 0)"),
        (
            "bf16",
            "round to bf16 precision",
            semantics.to_bf16,
            "fp32(bf16(va[i])) (to nearest even)",
        ),
    )
    for name, summary, function, expression in unary_vec:
        vector(
            mnemonic=f"v.{name}",
            fields=(vd(), va()),
            summary=summary,
            operation=f"vd[i] <- {expression} for i < VL",
            description="Mimics a bf16 datapath: the result is still an fp32 element."
            if name == "bf16"
            else "",
            example=f"v.{name} v3, v1",
            semantics=function,
        )
    specials: tuple[tuple[str, str, Any, str], ...] = (
        ("exp", "exponential", _in_double(np.exp), "exp(va[i])"),
        ("tanh", "hyperbolic tangent", _in_double(np.tanh), "tanh(va[i])"),
        ("rcp", "reciprocal", _unary(np.reciprocal), "1 / va[i]"),
        ("rsqrt", "reciprocal square root", _in_double(_rsqrt), "1 / sqrt(va[i])"),
    )
    for name, noun, function, expression in specials:
        vector(
            mnemonic=f"v.{name}",
            fields=(vd(), va()),
            cost=special,
            summary=f"vector {noun}",
            operation=f"vd[i] <- {expression}, rounded once to fp32, for i < VL",
            description="Runs in the vector unit's special-function pipeline, special_cycles "
            "per group of LANES elements.",
            example=f"v.{name} v3, v1",
            semantics=function,
        )
    vector(
        mnemonic="v.splat",
        fields=(vd(), fa("fs")),
        summary="broadcast a scalar",
        operation="vd[i] <- fs for i < VL",
        example="v.splat v3, f0",
        semantics=lambda d, x: d.fill(x),
    )
    vector(
        mnemonic="v.iota",
        fields=(vd(),),
        summary="element indices",
        operation="vd[i] <- i for i < VL",
        example="v.iota v3",
        semantics=semantics.iota,
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
    reduce_cost = "cdiv(vl, lanes) + ceil(log2(lanes)) + reduce_cycles"
    reduce_doc = (
        "The adder tree folds the vector into LANES partial results, then into one. fd is "
        "ready when the vector unit finishes; a scalar instruction reading it earlier stalls "
        "the front end."
    )
    vector(
        mnemonic="v.rsum",
        fields=(fd(), va()),
        cost=reduce_cost,
        summary="sum of a vector",
        operation="fd <- sum(va[i] for i < VL), formed exactly and rounded once to fp32",
        description=reduce_doc,
        example="v.rsum f1, v8",
        semantics=semantics.reduce_sum,
    )
    vector(
        mnemonic="v.rmax",
        fields=(fd(), va()),
        cost=reduce_cost,
        summary="maximum of a vector",
        operation="fd <- max(va[i] for i < VL) (NaN if any is NaN)",
        description=reduce_doc,
        example="v.rmax f1, v8",
        semantics=semantics.reduce_max,
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
    return tuple(table)


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
