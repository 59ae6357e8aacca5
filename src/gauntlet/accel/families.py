"""Instruction families the platforms share, each entry defined once and spelled per platform.

The npu, rvv and tile ISAs have the same scalar core (integer, fp32 and address arithmetic,
branches, halt), npu and tile the same hardware loops and vector length, and all three vector
units the same elementwise, fused multiply-add, special-function and reduction instructions.
`Table` builds one platform's instruction table: its family methods add the shared entries, in
the platform's spelling (`Dialect`: mnemonics, register files, operand names and examples), and
`add` the platform's own. Each platform's table remains the single definition its assembler,
simulator, manual and tools come from; this module only keeps the shared entries from being
written three times.

Canonical mnemonics are npu's (`addi`, `vadds`); a dialect renames what it spells otherwise
(rvv's `s.addk`, `v.addf`) and omits what its platform lacks.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gauntlet.accel import control, semantics
from gauntlet.accel.isa import Access, FImm, Imm, Instruction, Label, OperandKind, Reg, RegisterFile
from gauntlet.accel.isa import Field as F
from gauntlet.accel.semantics import INT_MAX, INT_MIN

F64 = np.float64

# -- semantics of the shared vector instructions ------------------------------------------------
# numpy's fp32 division is IEEE; fma and the transcendentals are formed in float64 and rounded
# once to fp32.


def _fma(d: np.ndarray, a: np.ndarray, b: Any) -> None:
    # a * b + d in float64, in place in one temporary: the same values as the expression (the
    # product of the operands converted to float64, then the sum, each rounded once).
    total = np.multiply(a, b, dtype=F64)
    total += d
    d[...] = total


def _recip(d: np.ndarray, a: np.ndarray) -> None:
    np.divide(1.0, a, out=d)


def _in_double(function: Any) -> Callable[..., None]:
    def apply(d: np.ndarray, a: np.ndarray) -> None:
        d[...] = function(a.astype(F64))

    apply.__name__ = f"v_{function.__name__}"
    return apply


def _rsqrt(a: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(a)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Dialect:
    """How one platform spells the shared entries."""

    ints: RegisterFile
    """Integer registers: operands `<prefix>d`, `<prefix>a`, `<prefix>b`."""
    floats: RegisterFile
    """fp32 registers, named the same way."""
    addresses: RegisterFile
    """Address registers (`<prefix>d`, and the single source as below)."""
    vectors: OperandKind
    """Where vector operands live (a memory or a register group), VL elements each."""
    single_source: str
    """Suffix of the operand name of a one-source scalar instruction (`rs` or `sa`)."""
    address_noun: str
    """What an address register holds, with its article (`an address`, `a pointer`)."""
    scale: str
    """A hardware parameter the examples compute with (`MLEN`, `VLEN`)."""
    example_ints: int
    """The first integer register of the examples (the others follow it)."""
    example_vectors: tuple[str, str, str]
    """Vector operands of the examples: destination, first and second source."""
    program: str = "the program"
    """What `halt` ends."""
    halt_note: str = ""
    """What else `halt` does on this platform (a sentence, leading space)."""
    mnemonics: Mapping[str, str] = field(default_factory=dict)
    """This platform's mnemonic of a canonical one it spells otherwise."""
    omit: frozenset[str] = frozenset()
    """Canonical mnemonics of shared entries this platform does not have."""


class Table:
    """One platform's instruction table under construction."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.entries: list[Instruction] = []
        first = dialect.example_ints
        prefix = dialect.ints.prefix
        self._x, self._y, self._z = (f"{prefix}{first + i}" for i in (2, 0, 1))

    def add(self, **kwargs: Any) -> None:
        """Add the platform's own entry."""
        self.entries.append(Instruction(**kwargs))

    def instructions(self) -> tuple[Instruction, ...]:
        """The table, in the order its entries were added."""
        return tuple(self.entries)

    def name(self, canonical: str) -> str:
        """This platform's mnemonic of a shared instruction."""
        return self.dialect.mnemonics.get(canonical, canonical)

    def _shared(self, canonical: str, **kwargs: Any) -> None:
        if canonical in self.dialect.omit:
            return
        mnemonic = self.name(canonical)
        example = kwargs.pop("example").replace("{mn}", mnemonic)
        self.add(mnemonic=mnemonic, example=example, **kwargs)

    def _scalar(self, canonical: str, **kwargs: Any) -> None:
        self._shared(canonical, group="scalar", unit="scalar", cost="1", **kwargs)

    def _regs(self, rf: RegisterFile, access: Access, *names: str) -> tuple[F, ...]:
        return tuple(F(f"{rf.prefix}{n}", Reg(rf), access) for n in names)

    # -- the scalar core -----------------------------------------------------------------------

    def scalar_core(self) -> None:
        """Integer, fp32 and address arithmetic: one front-end cycle each."""
        d = self.dialect
        x, y, z = self._x, self._y, self._z
        s = d.single_source
        (rd,) = self._regs(d.ints, "write", "d")
        ra, rb, rs = self._regs(d.ints, "read", "a", "b", s)
        (fd,) = self._regs(d.floats, "write", "d")
        fa, fb, fs = self._regs(d.floats, "read", "a", "b", s)
        (ad,) = self._regs(d.addresses, "write", "d")
        (as_,) = self._regs(d.addresses, "read", s)
        f = d.floats.prefix
        imm32 = Imm(INT_MIN, INT_MAX)
        self._scalar(
            "li",
            fields=(rd, F("imm", imm32)),
            summary="load an integer immediate",
            operation=f"{rd.name} <- imm",
            example=f"{{mn}} {y}, {d.scale} * {d.scale}",
            semantics=semantics.same,
        )
        self._scalar(
            "mov",
            fields=(rd, rs),
            summary="copy an integer register",
            operation=f"{rd.name} <- {rs.name}",
            example=f"{{mn}} {z}, {y}",
            semantics=semantics.same,
        )
        binary_int: tuple[tuple[str, str, Callable[[int, int], int], str], ...] = (
            ("add", "add", operator.add, "{d} <- {a} + {b}"),
            ("sub", "subtract", operator.sub, "{d} <- {a} - {b}"),
            ("mul", "multiply", operator.mul, "{d} <- {a} * {b}"),
            ("min", "minimum", min, "{d} <- min({a}, {b})"),
            ("max", "maximum", max, "{d} <- max({a}, {b})"),
        )
        names = {"d": rd.name, "a": ra.name, "b": rb.name}
        for canonical, verb, function, operation in binary_int:
            self._scalar(
                canonical,
                fields=(rd, ra, rb),
                summary=f"integer {verb}",
                operation=operation.format(**names) + " (wraps to 32 bits)",
                example=f"{{mn}} {x}, {y}, {z}",
                semantics=function,
            )
        positive = Imm(1, INT_MAX)
        immediate_int: tuple[tuple[str, str, Callable[[int, int], int], Imm, str], ...] = (
            ("addi", "add an immediate", operator.add, imm32, "{d} <- {a} + imm"),
            ("muli", "multiply by an immediate", operator.mul, imm32, "{d} <- {a} * imm"),
            (
                "divi",
                "divide by a positive immediate, rounding down",
                operator.floordiv,
                positive,
                "{d} <- floor({a} / imm)",
            ),
            (
                "remi",
                "remainder of division by a positive immediate",
                operator.mod,
                positive,
                "{d} <- {a} - imm * floor({a} / imm)",
            ),
            ("slli", "shift left", operator.lshift, Imm(0, 31), "{d} <- {a} << imm"),
            ("srai", "arithmetic shift right", operator.rshift, Imm(0, 31), "{d} <- {a} >> imm"),
            ("mini", "minimum with an immediate", min, imm32, "{d} <- min({a}, imm)"),
            ("maxi", "maximum with an immediate", max, imm32, "{d} <- max({a}, imm)"),
        )
        for canonical, verb, function, kind, operation in immediate_int:
            self._scalar(
                canonical,
                fields=(rd, ra, F("imm", kind)),
                summary=f"integer {verb}",
                operation=operation.format(**names) + " (wraps to 32 bits)",
                example=f"{{mn}} {x}, {y}, 4",
                semantics=function,
            )
        self._scalar(
            "fli",
            fields=(fd, F("imm", FImm())),
            summary="load an fp32 immediate",
            operation=f"{fd.name} <- fp32(imm)",
            example=f"{{mn}} {f}1, -inf",
            semantics=semantics.same,
        )
        self._scalar(
            "fmov",
            fields=(fd, fs),
            summary="copy an fp32 register",
            operation=f"{fd.name} <- {fs.name}",
            example=f"{{mn}} {f}2, {f}1",
            semantics=semantics.same,
        )
        binary_float: tuple[tuple[str, str, Callable[[float, float], float], str], ...] = (
            ("fadd", "add", operator.add, "{d} <- {a} + {b}"),
            ("fsub", "subtract", operator.sub, "{d} <- {a} - {b}"),
            ("fmul", "multiply", operator.mul, "{d} <- {a} * {b}"),
            ("fdiv", "divide", semantics.fdiv, "{d} <- {a} / {b} (IEEE: x/0 is +-inf, 0/0 is NaN)"),
            ("fmax", "maximum", semantics.fmax, "{d} <- max({a}, {b}) (NaN if either is NaN)"),
            ("fmin", "minimum", semantics.fmin, "{d} <- min({a}, {b}) (NaN if either is NaN)"),
        )
        float_names = {"d": fd.name, "a": fa.name, "b": fb.name}
        for canonical, verb, float_function, operation in binary_float:
            self._scalar(
                canonical,
                fields=(fd, fa, fb),
                summary=f"fp32 {verb}",
                operation=operation.format(**float_names) + ", rounded to fp32",
                example=f"{{mn}} {f}3, {f}1, {f}2",
                semantics=float_function,
            )
        self._scalar(
            "fsqrt",
            fields=(fd, fa),
            summary="fp32 square root",
            operation=f"{fd.name} <- sqrt({fa.name}), rounded to fp32 (NaN if {fa.name} < 0)",
            example=f"{{mn}} {f}2, {f}1",
            semantics=semantics.fsqrt,
        )
        self._scalar(
            "itof",
            fields=(fd, rs),
            summary="convert an integer to fp32",
            operation=f"{fd.name} <- fp32({rs.name})",
            example=f"{{mn}} {f}1, {z}",
            semantics=float,
        )
        self._scalar(
            "ftoi",
            fields=(rd, fs),
            summary="convert fp32 to an integer, rounding toward zero",
            operation=f"{rd.name} <- trunc({fs.name}), saturated to 32 bits; NaN gives 0",
            example=f"{{mn}} {y}, {f}2",
            semantics=semantics.ftoi,
        )
        a = d.addresses.prefix
        self._scalar(
            "la",
            fields=(ad, F("imm", Imm(0, (1 << 48) - 1))),
            summary=f"load {d.address_noun}",
            operation=f"{ad.name} <- imm",
            example=f"{{mn}} {a}4, y + 256",
            semantics=semantics.same,
        )
        self._scalar(
            "mova",
            fields=(ad, as_),
            summary=f"copy {d.address_noun} register",
            operation=f"{ad.name} <- {as_.name}",
            example=f"{{mn}} {a}5, {a}0",
            semantics=semantics.same,
        )
        self._scalar(
            "adda",
            fields=(ad, as_, rb),
            summary=f"add an integer register to {d.address_noun}",
            operation=f"{ad.name} <- {as_.name} + {rb.name} (bytes)",
            example=f"{{mn}} {a}5, {a}0, {x}",
            semantics=operator.add,
        )
        self._scalar(
            "addai",
            fields=(ad, as_, F("imm", imm32)),
            summary=f"add an immediate to {d.address_noun}",
            operation=f"{ad.name} <- {as_.name} + imm (bytes)",
            example=f"{{mn}} {a}0, {a}0, {d.scale} * 4",
            semantics=operator.add,
        )

    # -- control ---------------------------------------------------------------------------------

    def branches(self) -> None:
        """The jump and the branches on two integer registers."""
        d = self.dialect
        y, z = self._y, self._z
        ra, rb = self._regs(d.ints, "read", "a", "b")
        target = F("target", Label())
        self._shared(
            "b",
            fields=(target,),
            group="control",
            unit="scalar",
            cost="1 + branch_penalty",
            summary="branch",
            operation="pc <- target",
            example="done:\n    {mn} done",
            binder=control.bind_branch(d.ints.name, None),
        )
        taken = "taken is 1 when the branch is taken, else 0."
        if d.ints.zero is not None:
            taken += f" Comparing with `{d.ints.prefix}{d.ints.zero}` compares with zero."
        branches: tuple[tuple[str, str, Callable[[int, int], bool]], ...] = (
            ("beq", "==", operator.eq),
            ("bne", "!=", operator.ne),
            ("blt", "<", operator.lt),
            ("bge", ">=", operator.ge),
        )
        for canonical, symbol, compare in branches:
            condition = f"{ra.name} {symbol} {rb.name}"
            self._shared(
                canonical,
                fields=(ra, rb, target),
                group="control",
                unit="scalar",
                cost="1 + taken * branch_penalty",
                summary=f"branch if {condition}",
                operation=f"if {condition}: pc <- target",
                description=taken,
                example=f"top:\n    {self.name('addi')} {y}, {y}, 1\n    {{mn}} {y}, {z}, top",
                binder=control.bind_branch(d.ints.name, compare),
            )

    def hardware_loops(self) -> None:
        """`loop`, `loopi` and `endloop`: counted loops whose loop-back costs no branch."""
        d = self.dialect
        y, z = self._y, self._z
        doc = (
            "Runs the instructions up to the matching `endloop` count times (not at all when "
            "count < 1). The loop-back is free of the taken-branch penalty. Loops nest up to "
            "loop_depth deep; branches may not enter or leave a loop body."
        )
        body = f"\n    {self.name('addi')} {y}, {y}, "
        counts = (
            ("loop", F("count", Reg(d.ints), "read", doc="iterations"), "register", z, "1"),
            ("loopi", F("count", Imm(0, INT_MAX), doc="iterations"), "immediate", "4", d.scale),
        )
        for canonical, count, kind, iterations, step in counts:
            self._shared(
                canonical,
                fields=(count,),
                group="control",
                unit="scalar",
                cost="1",
                summary=f"start a hardware loop of count ({kind}) iterations",
                operation="repeat count times: body up to endloop",
                description=doc,
                example=f"{{mn}} {iterations}{body}{step}\nendloop",
                binder=control.bind_loop,
                block="open",
            )
        self._shared(
            "endloop",
            fields=(),
            group="control",
            unit="scalar",
            cost="1",
            summary="end of a hardware loop body",
            operation="if --count > 0: pc <- loop body",
            example=f"{self.name('loopi')} 4\n    nop\n{{mn}}",
            binder=control.bind_endloop,
            block="close",
        )

    def halt_and_nop(self) -> None:
        """The end of the program and the empty instruction."""
        d = self.dialect
        self._shared(
            "halt",
            fields=(),
            group="control",
            unit="scalar",
            cost="1",
            summary=f"end {d.program}",
            operation="stop; queued instructions and transfers drain",
            description=f"Running past the last instruction also ends {d.program}." + d.halt_note,
            example="{mn}",
            binder=control.bind_halt,
        )
        self._shared(
            "nop",
            fields=(),
            group="control",
            unit="scalar",
            cost="1",
            summary="do nothing for a cycle",
            operation="nothing",
            example="{mn}",
            semantics=lambda: None,
        )

    def vector_length(self, vlen: int) -> None:
        """`setvl` and `setvli`: the vector length of the instructions that follow."""
        (rs,) = self._regs(self.dialect.ints, "read", self.dialect.single_source)
        self._shared(
            "setvl",
            fields=(rs,),
            group="vector",
            unit="scalar",
            cost="1",
            summary="set the vector length from a register",
            operation=f"VL <- min({rs.name}, VLEN); fault if {rs.name} < 1",
            example=f"{{mn}} {self._x}",
            description="Later vector instructions process VL elements. A remaining count can "
            "be passed directly: VL becomes VLEN while more remain.",
            binder=control.bind_setvl,
        )
        self._shared(
            "setvli",
            fields=(F("n", Imm(1, vlen)),),
            group="vector",
            unit="scalar",
            cost="1",
            summary="set the vector length",
            operation="VL <- n",
            example="{mn} 16",
            binder=control.bind_setvli,
        )

    # -- vector ----------------------------------------------------------------------------------

    def vector_core(
        self,
        *,
        cost: str,
        special_cost: str,
        reduce_cost: str,
        latency: str = "0",
        special_note: str = "",
        reduce_note: str = "",
    ) -> None:
        """Elementwise arithmetic (with scalar forms), fma, moves, special functions, reductions.

        Args:
            cost: cycles of an elementwise instruction.
            special_cost: cycles of exp, tanh, reciprocal and rsqrt.
            reduce_cost: cycles of a reduction.
            latency: cycles from the end of an instruction until its result is visible.
            special_note: what the manual adds about the special functions.
            reduce_note: what the manual adds about the reductions (before when fd is ready).
        """
        d = self.dialect
        vd_, va_, vb_ = d.example_vectors
        vec = ("vl",)
        vd = F("vd", d.vectors, "write", vec)
        acc = F("vd", d.vectors, "readwrite", vec)
        va = F("va", d.vectors, "read", vec)
        vb = F("vb", d.vectors, "read", vec)
        (fd,) = self._regs(d.floats, "write", "d")
        (fs,) = self._regs(d.floats, "read", "s")
        f = d.floats.prefix

        def vector(canonical: str, **kwargs: Any) -> None:
            kwargs.setdefault("cost", cost)
            self._shared(canonical, group="vector", unit="vector", latency=latency, **kwargs)

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
                f"v{name}",
                fields=(vd, va, vb),
                summary=f"vector {verb}",
                operation=f"vd[i] <- {expression} for i < VL",
                example=f"{{mn}} {vd_}, {va_}, {vb_}",
                semantics=semantics.elementwise(ufunc),
            )
            scalar_expression = f"va[i] {symbol} fs" if infix else f"{symbol}(va[i], fs)"
            vector(
                f"v{name}s",
                fields=(vd, va, fs),
                summary=f"vector {verb} with a scalar",
                operation=f"vd[i] <- {scalar_expression} for i < VL",
                example=f"{{mn}} {vd_}, {va_}, {f}1",
                semantics=semantics.elementwise(ufunc),
            )
        vector(
            "vfma",
            fields=(acc, va, vb),
            summary="vector fused multiply-add",
            operation="vd[i] <- va[i] * vb[i] + vd[i], rounded once, for i < VL",
            example=f"{{mn}} {vd_}, {va_}, {vb_}",
            semantics=_fma,
        )
        vector(
            "vfmas",
            fields=(acc, va, fs),
            summary="vector fused multiply-add with a scalar",
            operation="vd[i] <- va[i] * fs + vd[i], rounded once, for i < VL",
            example=f"{{mn}} {vd_}, {va_}, {f}1",
            semantics=_fma,
        )
        vector(
            "vmov",
            fields=(vd, va),
            summary="vector copy",
            operation="vd[i] <- va[i] for i < VL",
            example=f"{{mn}} {vd_}, {va_}",
            semantics=semantics.copy,
        )
        vector(
            "vbcast",
            fields=(vd, fs),
            summary="broadcast a scalar",
            operation="vd[i] <- fs for i < VL",
            example=f"{{mn}} {vd_}, {f}0",
            semantics=lambda out, value: out.fill(value),
        )
        vector(
            "viota",
            fields=(vd,),
            summary="element indices",
            operation="vd[i] <- i for i < VL",
            example=f"{{mn}} {vd_}",
            semantics=semantics.iota,
        )
        specials: tuple[tuple[str, str, Callable[..., None], str], ...] = (
            ("vexp", "exponential", _in_double(np.exp), "exp(va[i])"),
            ("vtanh", "hyperbolic tangent", _in_double(np.tanh), "tanh(va[i])"),
            ("vrecip", "reciprocal", _recip, "1 / va[i]"),
            ("vrsqrt", "reciprocal square root", _in_double(_rsqrt), "1 / sqrt(va[i])"),
        )
        for canonical, noun, function, expression in specials:
            vector(
                canonical,
                fields=(vd, va),
                cost=special_cost,
                summary=f"vector {noun}",
                operation=f"vd[i] <- {expression}, rounded once to fp32, for i < VL",
                description=special_note,
                example=f"{{mn}} {vd_}, {va_}",
                semantics=function,
            )
        vector(
            "vbf16",
            fields=(vd, va),
            summary="round to bf16 precision",
            operation="vd[i] <- fp32(bf16(va[i])) (to nearest even) for i < VL",
            description="Mimics a bf16 datapath: the result is still an fp32 value.",
            example=f"{{mn}} {vd_}, {va_}",
            semantics=semantics.to_bf16,
        )
        ready = (
            f"{reduce_note}fd is ready when the vector unit finishes; a scalar instruction "
            "reading it earlier stalls the front end."
        )
        reductions: tuple[tuple[str, str, Callable[..., float], str], ...] = (
            (
                "vredsum",
                "sum of a vector",
                semantics.reduce_sum,
                "fd <- sum(va[i] for i < VL), formed exactly and rounded once to fp32",
            ),
            (
                "vredmax",
                "maximum of a vector",
                semantics.reduce_max,
                "fd <- max(va[i] for i < VL) (NaN if any is NaN)",
            ),
        )
        for canonical, summary, reduce, operation in reductions:
            vector(
                canonical,
                fields=(fd, va),
                cost=reduce_cost,
                summary=summary,
                operation=operation,
                description=ready,
                example=f"{{mn}} {f}1, {va_}",
                semantics=reduce,
            )
