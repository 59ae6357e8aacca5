"""The declarative ISA framework: operand kinds, fields, instructions and the ISA table.

Each instruction is defined once, as an `Instruction` holding its mnemonic, its typed operand
fields, its semantics, the unit that executes it, its cost formula and its documentation. The
assembler parses with the fields' kinds, the disassembler prints with the same kinds, the
simulator binds the semantics to a machine (`codegen.py`), and the manual renders the whole table.

Operand kinds are the only place that knows the text form of an operand: `parse` and `format` are
inverses, which is what makes assemble -> disassemble -> assemble an identity.

Formulas (operand shapes and cost) are strings over the platform's numeric parameters, the
instruction's own immediate fields, `vl` (the current vector length) and the functions of
`gauntlet.expr` (`min`, `max`, `ceil`, `floor`, `log2`, `cdiv`), so that the manual can print them
as written and the simulator can compile them.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gauntlet import expr

if TYPE_CHECKING:
    from gauntlet.accel.assembler import Decoded
    from gauntlet.accel.machine import Machine

Access = Literal["read", "write", "readwrite"]
RegisterKind = Literal["int", "float", "address", "array"]

#: A bound instruction: runs one step on its machine and returns the next program counter.
Step = Callable[[], int]

#: Builds the step of a control or memory instruction from the machine and the decoded instruction.
Binder = Callable[["Machine", "Decoded"], Step]


class OperandError(ValueError):
    """An operand that does not parse; the assembler adds the line and column."""

    def __init__(self, found: str, expected: str, message: str = "", offset: int = 0) -> None:
        self.found = found
        self.expected = expected
        self.message = message or f"expected {expected}, found '{found}'"
        self.offset = offset
        """Column offset of the problem inside the operand text."""
        super().__init__(self.message)


@dataclass(frozen=True)
class ParseContext:
    """What an operand needs to parse: the symbols and the program's labels."""

    symbols: Mapping[str, int | float]
    labels: Mapping[str, int]


def evaluate_int(text: str, symbols: Mapping[str, int | float], expected: str) -> int:
    """Evaluate an integer expression over symbols (`gauntlet.expr` syntax).

    Raises:
        OperandError: if it does not parse, names an unknown symbol or is not an integer.
    """
    source = text.strip()
    if not source:
        raise OperandError("nothing", expected)
    try:
        value = expr.evaluate(source, symbols)
    except expr.ExprError as err:
        raise OperandError(source, expected, f"{err}; expected {expected}") from err
    except (ArithmeticError, ValueError, TypeError) as err:
        raise OperandError(source, expected, f"'{source}' fails: {err}") from err
    if isinstance(value, bool) or not isinstance(value, int):
        hint = " (use // for integer division)" if isinstance(value, float) else ""
        raise OperandError(source, expected, f"'{source}' is {value!r}, not an integer{hint}")
    return value


class OperandKind(ABC):
    """How one kind of operand is written, read back and documented."""

    @abstractmethod
    def parse(self, text: str, ctx: ParseContext) -> Any:
        """Decode the operand text into its value; raises OperandError."""

    @abstractmethod
    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print a decoded value so that `parse` reads it back unchanged."""

    @abstractmethod
    def describe(self) -> str:
        """One line for the manual: what may be written here."""


@dataclass(frozen=True)
class RegisterFile:
    """A named set of registers, e.g. the integer registers r0..r31."""

    name: str
    """Identifier used by fields and the machine (`r`, `f`, `a`, `acc`, `m`)."""
    prefix: str
    """What a register's name starts with; the index follows (`r7`, `acc2`)."""
    count: int
    kind: RegisterKind
    title: str
    bits: int = 32
    """Width of integer and address registers; values wrap modulo 2**bits."""
    signed: bool = True
    zero: int | None = None
    """Index of a register that always reads zero and ignores writes."""
    shape: tuple[str, ...] = ()
    """For `array` registers: the shape, as formulas (`("mlen", "mlen")`)."""
    dtype: Literal["float32", "bool"] = "float32"
    """For `array` registers: the element type."""
    tracked: bool = False
    """Whether reading an array register nobody wrote faults (`uninitialized_read`)."""

    def register_name(self, index: int) -> str:
        """The assembly name of register `index`."""
        return f"{self.prefix}{index}"

    def wrap(self, value: int) -> int:
        """Reduce an integer result to this register's width, as the hardware does."""
        span = 1 << self.bits
        value %= span
        if self.signed and value >= span >> 1:
            value -= span
        return value

    @property
    def value_range(self) -> tuple[int, int]:
        """The smallest and largest value an integer or address register holds."""
        if self.signed:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, (1 << self.bits) - 1


_REGISTER = re.compile(r"([A-Za-z_]+)(\d+)")


@dataclass(frozen=True)
class Reg(OperandKind):
    """A register of one register file."""

    file: RegisterFile

    def parse(self, text: str, ctx: ParseContext) -> int:
        """Decode `r7` into 7."""
        return parse_register(text.strip(), self.file, self.describe())

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print 7 as `r7`."""
        return self.file.register_name(int(value))

    def describe(self) -> str:
        """Which registers are accepted."""
        last = self.file.count - 1
        return f"{self.file.title} {self.file.prefix}0..{self.file.prefix}{last}"


def parse_register(token: str, file: RegisterFile, expected: str) -> int:
    """Decode one register name of `file`; raises OperandError naming what was expected."""
    match = _REGISTER.fullmatch(token)
    if not match or match.group(1).lower() != file.prefix:
        raise OperandError(token or "nothing", expected)
    index = int(match.group(2))
    if index >= file.count or (len(match.group(2)) > 1 and match.group(2)[0] == "0"):
        raise OperandError(token, expected, f"unknown register '{token}': expected {expected}")
    return index


@dataclass(frozen=True)
class Imm(OperandKind):
    """An integer immediate: a literal or an expression over symbols, range- and align-checked."""

    lo: int
    hi: int
    align: int = 1

    def parse(self, text: str, ctx: ParseContext) -> int:
        """Evaluate and check the range and alignment."""
        value = evaluate_int(text, ctx.symbols, self.describe())
        if not self.lo <= value <= self.hi:
            raise OperandError(
                str(value), self.describe(), f"immediate {value} out of range {self.lo}..{self.hi}"
            )
        if value % self.align:
            raise OperandError(
                str(value),
                self.describe(),
                f"immediate {value} is not a multiple of {self.align}",
            )
        return value

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print the decimal value."""
        return str(int(value))

    def describe(self) -> str:
        """The accepted range."""
        multiple = f", a multiple of {self.align}" if self.align > 1 else ""
        return f"an integer in {self.lo}..{self.hi}{multiple}"


_FLOAT_NAMES = {"inf": math.inf, "nan": math.nan}


@dataclass(frozen=True)
class FImm(OperandKind):
    """A floating-point immediate, rounded to fp32 when assembled."""

    def parse(self, text: str, ctx: ParseContext) -> float:
        """Evaluate a float expression (`0.5`, `-inf`, `1/EPS`) and round it to fp32."""
        source = text.strip()
        if not source:
            raise OperandError("nothing", self.describe())
        try:
            value = expr.evaluate(source, {**_FLOAT_NAMES, **ctx.symbols})
        except expr.ExprError as err:
            raise OperandError(source, self.describe(), f"{err}; expected a number") from err
        except (ArithmeticError, ValueError, TypeError) as err:
            raise OperandError(source, self.describe(), f"'{source}' fails: {err}") from err
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise OperandError(source, self.describe())
        return round_f32(float(value))

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print the shortest text that reads back as the same fp32 value."""
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return repr(number)

    def describe(self) -> str:
        """What is accepted."""
        return "a number (rounded to fp32; inf, -inf and nan allowed)"


def round_f32(value: float) -> float:
    """Round a Python float to the nearest fp32 value (ties to even), keeping it a float."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


@dataclass(frozen=True)
class Enum(OperandKind):
    """One word out of a fixed set, such as a comparison (`lt`, `ge`)."""

    choices: tuple[str, ...]

    def parse(self, text: str, ctx: ParseContext) -> str:
        """Accept one of the choices, case-insensitively."""
        word = text.strip().lower()
        if word not in self.choices:
            raise OperandError(text.strip() or "nothing", self.describe())
        return word

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print the word."""
        return str(value)

    def describe(self) -> str:
        """The choices."""
        return "one of " + ", ".join(self.choices)


@dataclass(frozen=True)
class Label(OperandKind):
    """A branch target, written as a label defined elsewhere in the program."""

    def parse(self, text: str, ctx: ParseContext) -> int:
        """Resolve the label to its program counter."""
        name = text.strip()
        if not re.fullmatch(r"[A-Za-z_.][\w.]*", name):
            raise OperandError(name or "nothing", self.describe())
        if name not in ctx.labels:
            known = ", ".join(sorted(ctx.labels)) or "none"
            raise OperandError(
                name, self.describe(), f"undefined label '{name}' (defined: {known})"
            )
        return ctx.labels[name]

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print the label defined at the target."""
        return labels[int(value)]

    def describe(self) -> str:
        """What is accepted."""
        return "a label defined in the program"


@dataclass(frozen=True)
class Mem(OperandKind):
    """A memory address `[base]` or `[base + offset]`: a register plus an immediate offset."""

    space: str
    """The memory space addressed (`vsram`, `msram`, `hbm`)."""
    base: RegisterFile
    align: int = 1
    """Alignment the offset must keep (the runtime address is checked by the simulator)."""
    offset_range: tuple[int, int] = (-(1 << 20), (1 << 20) - 1)
    unit: str = "words"

    def parse(self, text: str, ctx: ParseContext) -> tuple[int, int]:
        """Decode `[r3 + 64]` into (3, 64)."""
        source = text.strip()
        if not (source.startswith("[") and source.endswith("]")):
            raise OperandError(source or "nothing", self.describe())
        inner = source[1:-1]
        match = re.fullmatch(r"\s*([A-Za-z_]+\d+)\s*(?:([+-])(.*))?", inner, re.DOTALL)
        if not match:
            raise OperandError(source, self.describe(), offset=1)
        try:
            register = parse_register(match.group(1), self.base, Reg(self.base).describe())
        except OperandError as err:
            raise OperandError(err.found, err.expected, err.message, 1 + match.start(1)) from err
        offset = 0
        if match.group(2):
            text_offset = match.group(3)
            at = 1 + match.start(3) + len(text_offset) - len(text_offset.lstrip())
            try:
                magnitude = evaluate_int(text_offset, ctx.symbols, "an offset")
            except OperandError as err:
                raise OperandError(err.found, err.expected, err.message, at) from err
            offset = magnitude if match.group(2) == "+" else -magnitude
            lo, hi = self.offset_range
            if not lo <= offset <= hi:
                raise OperandError(
                    str(offset),
                    self.describe(),
                    f"offset {offset} out of range {lo}..{hi}",
                    at,
                )
            if offset % self.align:
                raise OperandError(
                    str(offset),
                    self.describe(),
                    f"misaligned offset {offset}: {self.space} addresses are multiples of "
                    f"{self.align} {self.unit}",
                    at,
                )
        return register, offset

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print (3, 64) as `[r3 + 64]` and (3, 0) as `[r3]`."""
        register, offset = value
        name = self.base.register_name(register)
        if offset == 0:
            return f"[{name}]"
        sign = "+" if offset > 0 else "-"
        return f"[{name} {sign} {abs(offset)}]"

    def describe(self) -> str:
        """What is accepted."""
        return (
            f"a {self.space} address [{self.base.prefix}N] or [{self.base.prefix}N + offset] "
            f"(offset a multiple of {self.align} {self.unit})"
        )


@dataclass(frozen=True)
class RegGroup(Mem):
    """A register, or a group of consecutive registers, held in an on-chip memory space.

    Vector registers whose file is one array of words (so that a group of consecutive registers
    is one contiguous operand, as with grouped vector registers) are written `v4`, but to the
    simulator they are memory operands: the base is the hardwired-zero register of `base` and
    the offset is the first word of the register, `index * size`. Parsing and printing use the
    register syntax; everything else (bounds, written-ness, dependencies) is the memory's.
    """

    prefix: str = "v"
    count: int = 32
    size: int = 1
    """Words per register: register i starts at word i * size of the space."""
    title: str = "registers"

    def __post_init__(self) -> None:
        if self.base.zero is None:
            raise ValueError(f"register group '{self.prefix}' needs a base file with a zero reg")

    def parse(self, text: str, ctx: ParseContext) -> tuple[int, int]:
        """Decode `v4` into (zero register, 4 * size)."""
        token = text.strip()
        match = _REGISTER.fullmatch(token)
        if not match or match.group(1).lower() != self.prefix:
            raise OperandError(token or "nothing", self.describe())
        index = int(match.group(2))
        if index >= self.count or (len(match.group(2)) > 1 and match.group(2)[0] == "0"):
            raise OperandError(
                token, self.describe(), f"unknown register '{token}': expected {self.describe()}"
            )
        assert self.base.zero is not None  # checked in __post_init__
        return self.base.zero, index * self.size

    def format(self, value: Any, labels: Mapping[int, str]) -> str:
        """Print (zero register, 4 * size) as `v4`."""
        return f"{self.prefix}{int(value[1]) // self.size}"

    def describe(self) -> str:
        """Which registers are accepted."""
        return f"{self.title} {self.prefix}0..{self.prefix}{self.count - 1}"


@dataclass(frozen=True)
class Field:
    """One operand of an instruction: its name, kind, and how the instruction uses it."""

    name: str
    kind: OperandKind
    access: Access | None = None
    """For registers and memory: read, written or both; None for immediates and labels."""
    shape: tuple[str, ...] = ()
    """For memory and array registers: the shape accessed, as formulas (`("vl",)`)."""
    doc: str = ""
    """What the operand means, for the manual (`rows to transfer`)."""
    wide: bool = False
    """For memory read: the semantics uses the operand only through its exact float64 values
    (it converts with `astype(np.float64, copy=False)` first), so the simulator may pass its
    float64 copy of the words instead of an fp32 view. The results are the same either way;
    the copy saves a conversion per instruction when the same words are read again."""


@dataclass(frozen=True)
class Group:
    """A named set of instructions, one chapter of the manual."""

    name: str
    title: str
    description: str


@dataclass(frozen=True)
class Instruction:
    """One instruction, defined once; every product of the ISA is derived from this."""

    mnemonic: str
    fields: tuple[Field, ...]
    group: str
    unit: str
    cost: str
    """Cycles the unit is busy, as a formula (see the module docstring)."""
    summary: str
    """One line: what it does."""
    operation: str
    """Pseudocode of the operation, as printed in the manual."""
    example: str
    """Assembly using it, a line or a short snippet (the tests assemble every example)."""
    description: str = ""
    semantics: Callable[..., Any] | None = None
    """The operation as a NumPy function over the operands' values (data instructions)."""
    binder: Binder | None = None
    """Builds the step of control and memory instructions, which act on the machine itself."""
    block: Literal["open", "close"] | None = None
    """Opens or closes a structured block (hardware loops); the assembler pairs them."""
    latency: str = "0"
    """Cycles after the unit finishes until the result is visible, as a formula."""
    work: tuple[tuple[str, ...], ...] = ()
    """Shapes (formulas) of float64 scratch arrays the semantics takes after the operands. The
    simulator passes arrays allocated once per machine; a reference call passes none and the
    semantics allocates its own (scratch never changes a result, only saves allocations)."""

    def __post_init__(self) -> None:
        if (self.semantics is None) == (self.binder is None):
            raise ValueError(
                f"instruction '{self.mnemonic}' needs exactly one of semantics, binder"
            )

    @property
    def format_line(self) -> str:
        """The instruction's format, e.g. `vadd [vd], [va], [vb]`."""
        if not self.fields:
            return self.mnemonic
        return f"{self.mnemonic} " + ", ".join(_field_placeholder(f) for f in self.fields)


def _field_placeholder(f: Field) -> str:
    if isinstance(f.kind, Mem) and not isinstance(f.kind, RegGroup):
        return f"[{f.name}]"
    return f.name


@dataclass(frozen=True)
class ISA:
    """The instruction table of one platform, with its register files and groups."""

    instructions: tuple[Instruction, ...]
    groups: tuple[Group, ...]
    register_files: tuple[RegisterFile, ...]
    _by_mnemonic: dict[str, Instruction] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table: dict[str, Instruction] = {}
        group_names = {g.name for g in self.groups}
        for ins in self.instructions:
            if ins.mnemonic in table:
                raise ValueError(f"instruction '{ins.mnemonic}' is defined twice")
            if ins.group not in group_names:
                raise ValueError(
                    f"instruction '{ins.mnemonic}' names unknown group '{ins.group}' "
                    f"(known: {', '.join(sorted(group_names))})"
                )
            table[ins.mnemonic] = ins
        object.__setattr__(self, "_by_mnemonic", table)

    def __getitem__(self, mnemonic: str) -> Instruction:
        return self._by_mnemonic[mnemonic]

    def get(self, mnemonic: str) -> Instruction | None:
        """The instruction with this mnemonic, or None."""
        return self._by_mnemonic.get(mnemonic)

    @property
    def mnemonics(self) -> list[str]:
        """Every mnemonic, in table order."""
        return [ins.mnemonic for ins in self.instructions]

    def in_group(self, group: str) -> list[Instruction]:
        """The instructions of one group, in table order."""
        return [ins for ins in self.instructions if ins.group == group]

    def register_file(self, name: str) -> RegisterFile:
        """The register file with this name."""
        for regfile in self.register_files:
            if regfile.name == name:
                return regfile
        raise KeyError(name)


def formula_names(formula: str) -> set[str]:
    """The names a shape or cost formula reads (validated by `gauntlet.expr`)."""
    return expr.names(formula)


def evaluate_formula(formula: str, env: Mapping[str, Any]) -> int:
    """Evaluate a shape or cost formula to an integer number of words or cycles."""
    value = expr.evaluate(formula, env)
    return int(math.ceil(value)) if isinstance(value, float) else int(value)


def formula_function(
    formula: str, env: Mapping[str, Any], args: tuple[str, ...]
) -> Callable[..., int]:
    """Compile a cost formula into a function of the named run-time values (`rows`, `cols`).

    Platform parameters and the functions of `gauntlet.expr` are bound from `env`. Formulas come
    from the ISA table, never from a program, and are validated by `gauntlet.expr` first.
    """
    unknown = formula_names(formula) - set(env) - set(args)
    if unknown:
        raise ValueError(f"formula '{formula}' uses unknown names {sorted(unknown)}")
    source = f"lambda {', '.join(args)}: _cycles({formula})"
    namespace = {"__builtins__": {}, "_cycles": _cycles, **env}
    function: Callable[..., int] = eval(  # noqa: S307 - validated formula from our own table
        compile(source, f"<formula {formula}>", "eval"), namespace
    )
    return function


def _cycles(value: float) -> int:
    return int(math.ceil(value))
