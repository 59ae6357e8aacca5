"""The strict assembler and the disassembler, both driven by the ISA table's operand fields.

Syntax, one statement per line::

    ; a comment (so is '#' to the end of the line)
    .equ TILE, MLEN * MLEN        ; a symbol, usable in every later immediate
    loop_top:                     ; a label; an instruction may follow on the same line
        vadd [r1], [r2 + TILE], [r3]
        blt  r4, r5, loop_top

Immediates are expressions over symbols: the platform's parameters in upper case (`MLEN`),
the memory contract's region names (their base addresses), the caller's symbols (a task's
configuration) and `.equ` definitions. Every problem is reported with its line, column, what was
found and what was expected; the assembler collects all of them before raising `AsmError`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gauntlet.accel.isa import Instruction, Label, OperandError, ParseContext, evaluate_int
from gauntlet.accel.platform import Platform

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One problem in an assembly source."""

    line: int
    column: int
    found: str
    expected: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return (
            f"line {self.line}, col {self.column}: {self.severity}: {self.message} "
            f"(found '{self.found}'; expected {self.expected})"
        )


class AsmError(ValueError):
    """The source does not assemble; `diagnostics` lists every error found."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        errors = [d for d in diagnostics if d.severity == "error"]
        shown = "\n".join(str(d) for d in errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} assembly error(s):\n{shown}{more}")


@dataclass(frozen=True)
class Decoded:
    """One assembled instruction: its definition and decoded operand values."""

    pc: int
    instruction: Instruction
    operands: tuple[Any, ...]
    line: int
    partner: int | None = None
    """For block instructions (hardware loops): the program counter of the matching one."""


@dataclass(frozen=True)
class Program:
    """An assembled program, ready to simulate on the platform it was assembled for."""

    platform: Platform
    instructions: tuple[Decoded, ...]
    labels: Mapping[str, int]
    """Label name -> program counter it marks (may equal the length: the end)."""
    source: str
    warnings: tuple[Diagnostic, ...] = ()
    _label_at: dict[int, str] = field(init=False, repr=False, compare=False)
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What the simulator derives from the program once for every machine it binds (a tile
    array binds it once per tile): where blocks start, which SRAMs are read wide."""

    def __post_init__(self) -> None:
        first: dict[int, str] = {}
        for name, pc in self.labels.items():
            first.setdefault(pc, name)
        object.__setattr__(self, "_label_at", first)

    def __len__(self) -> int:
        return len(self.instructions)

    def text(self, pc: int) -> str:
        """Instruction `pc` as the disassembler prints it."""
        return format_instruction(self.instructions[pc], self._label_at)


_LABEL = re.compile(r"\s*([A-Za-z_.][\w.]*)\s*:(?!:)")
_MNEMONIC = re.compile(r"\s*([A-Za-z_][\w.]*)")
_DIRECTIVE = re.compile(r"\s*(\.[A-Za-z_]\w*)")
_SYMBOL = re.compile(r"[A-Za-z_]\w*")


class _Report(Protocol):
    """Records one error diagnostic."""

    def __call__(
        self, line: int, column: int, found: str, expected: str, message: str = ""
    ) -> None: ...


@dataclass
class _Statement:
    line: int
    column: int
    mnemonic: str
    operands: list[tuple[str, int]]
    """(text, 1-based column) of each operand."""


def assemble(
    platform: Platform, source: str, symbols: Mapping[str, int | float] | None = None
) -> Program:
    """Assemble `source` for `platform`.

    Args:
        platform: The platform (its ISA and parameters).
        source: Assembly text.
        symbols: Extra symbols for immediates: a task's configuration and its memory contract's
            region base addresses (`MemoryContract.symbols()`).

    Raises:
        AsmError: with every error found (line, column, what was found, what was expected).
    """
    program, diagnostics = _assemble(platform, source, symbols or {})
    if program is None:
        raise AsmError(diagnostics)
    return program


def check_syntax(
    platform: Platform, source: str, symbols: Mapping[str, int | float] | None = None
) -> str:
    """The assembler's verdict on `source` as text for an agent.

    Returns `All checks passed. 0 error(s), 0 warning(s)` for a clean source; otherwise one line
    per diagnostic followed by the counts.
    """
    _, diagnostics = _assemble(platform, source, symbols or {})
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = len(diagnostics) - errors
    lines = [str(d) for d in diagnostics]
    verdict = "All checks passed." if errors == 0 else "Found problems."
    lines.append(f"{verdict} {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines)


def _assemble(
    platform: Platform, source: str, extra: Mapping[str, int | float]
) -> tuple[Program | None, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    symbols: dict[str, int | float] = {**platform.symbols(), **extra}
    labels: dict[str, int] = {}
    label_lines: dict[str, tuple[int, int]] = {}
    statements: list[_Statement] = []

    def error(line: int, column: int, found: str, expected: str, message: str = "") -> None:
        diagnostics.append(
            Diagnostic(line, column, found, expected, message or f"expected {expected}")
        )

    for number, raw in enumerate(source.splitlines(), start=1):
        text = _strip_comment(raw)
        position = 0
        while match := _LABEL.match(text, position):
            name = match.group(1)
            column = match.start(1) + 1
            if name in labels:
                first_line = label_lines[name][0]
                error(
                    number,
                    column,
                    name,
                    "a new label name",
                    f"label '{name}' is already defined on line {first_line}",
                )
            else:
                labels[name] = len(statements)
                label_lines[name] = (number, column)
            position = match.end()
        rest = text[position:]
        if not rest.strip():
            continue
        match = _MNEMONIC.match(rest)
        if not match:
            match = _DIRECTIVE.match(rest)
        if not match:
            column = position + len(rest) - len(rest.lstrip()) + 1
            error(number, column, rest.strip().split()[0], "an instruction, a label or .equ")
            continue
        word = match.group(1)
        column = position + match.start(1) + 1
        operands_text = rest[match.end() :]
        start = position + match.end()
        if rest.lstrip().startswith("."):
            _directive(word, operands_text, start, number, column, symbols, error)
            continue
        if operands_text and not operands_text[0].isspace():
            error(number, column, word + operands_text.split()[0], "a mnemonic and its operands")
            continue
        operands = _split_operands(operands_text, start, number, error)
        if operands is not None:
            statements.append(_Statement(number, column, word, operands))

    context = ParseContext(symbols=symbols, labels=labels)
    decoded: list[Decoded] = []
    for pc, st in enumerate(statements):
        ins = platform.isa.get(st.mnemonic.lower())
        if ins is None:
            close = difflib.get_close_matches(st.mnemonic.lower(), platform.isa.mnemonics, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            error(
                st.line,
                st.column,
                st.mnemonic,
                f"an instruction mnemonic of {platform.name}",
                f"unknown instruction '{st.mnemonic}'{hint}",
            )
            continue
        if len(st.operands) != len(ins.fields):
            column = (
                st.operands[len(ins.fields)][1]
                if len(st.operands) > len(ins.fields)
                else (st.column)
            )
            error(
                st.line,
                column,
                f"{len(st.operands)} operand(s)",
                f"{len(ins.fields)} operand(s): {ins.format_line}",
                f"'{ins.mnemonic}' takes {len(ins.fields)} operand(s), found {len(st.operands)}",
            )
            continue
        values: list[Any] = []
        ok = True
        for f, (text, column) in zip(ins.fields, st.operands, strict=True):
            try:
                values.append(f.kind.parse(text, context))
            except OperandError as err:
                ok = False
                error(st.line, column + err.offset, err.found, err.expected, err.message)
        if ok:
            decoded.append(Decoded(pc, ins, tuple(values), st.line))
    if any(d.severity == "error" for d in diagnostics):
        return None, diagnostics

    decoded = _pair_blocks(platform, decoded, statements, error)
    _check_branch_scopes(decoded, statements, error)
    used = {
        text.strip()
        for d in decoded
        for f, (text, _) in zip(d.instruction.fields, statements[d.pc].operands, strict=True)
        if isinstance(f.kind, Label)
    }
    for name in labels:
        if name not in used:
            line, column = label_lines[name]
            diagnostics.append(
                Diagnostic(
                    line,
                    column,
                    name,
                    "a label some branch uses",
                    f"label '{name}' is never used",
                    "warning",
                )
            )
    if any(d.severity == "error" for d in diagnostics):
        return None, diagnostics
    warnings = tuple(d for d in diagnostics if d.severity == "warning")
    return Program(platform, tuple(decoded), dict(labels), source, warnings), diagnostics


def _strip_comment(line: str) -> str:
    cut = len(line)
    for marker in (";", "#"):
        at = line.find(marker)
        if at >= 0:
            cut = min(cut, at)
    return line[:cut]


def _directive(
    word: str,
    operands_text: str,
    start: int,
    line: int,
    column: int,
    symbols: dict[str, int | float],
    error: _Report,
) -> None:
    if word.lower() != ".equ":
        error(
            line, column, word, "a directive: .equ NAME, expression", f"unknown directive '{word}'"
        )
        return
    operands = _split_operands(operands_text, start, line, error)
    if operands is None:
        return
    if len(operands) != 2:
        error(line, column, f"{len(operands)} operand(s)", "2 operands: .equ NAME, expression")
        return
    (name, name_column), (value_text, value_column) = operands
    name = name.strip()
    if not _SYMBOL.fullmatch(name) or re.fullmatch(r"[A-Za-z]+\d+", name):
        error(
            line,
            name_column,
            name,
            "a symbol name (letters, digits, _; not a register name)",
        )
        return
    if name in symbols:
        error(line, name_column, name, "a new symbol name", f"symbol '{name}' is already defined")
        return
    try:
        symbols[name] = evaluate_int(value_text, symbols, "an integer expression")
    except OperandError as err:
        error(line, value_column + err.offset, err.found, err.expected, err.message)


def _split_operands(
    text: str, start: int, line: int, error: _Report
) -> list[tuple[str, int]] | None:
    """Split at commas outside brackets and parentheses, keeping each operand's column."""
    if not text.strip():
        return []
    parts: list[tuple[str, int]] = []
    depth = 0
    begin = 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append((text[begin:i], begin))
            begin = i + 1
    parts.append((text[begin:], begin))
    result: list[tuple[str, int]] = []
    for part, offset in parts:
        stripped = part.strip()
        column = start + offset + (len(part) - len(part.lstrip())) + 1
        if not stripped:
            error(line, column, "nothing", "an operand", "empty operand (a stray comma?)")
            return None
        result.append((stripped, column))
    if depth != 0:
        error(line, start + 1, text.strip(), "balanced brackets and parentheses")
        return None
    return result


def _pair_blocks(
    platform: Platform, decoded: list[Decoded], statements: list[_Statement], error: _Report
) -> list[Decoded]:
    """Match block openers (`loop`) with closers (`endloop`) and check the nesting depth."""
    limit = int(platform.param_values().get("loop_depth", 0))
    partners: dict[int, int] = {}
    stack: list[int] = []
    for d in decoded:
        st = statements[d.pc]
        if d.instruction.block == "open":
            stack.append(d.pc)
            if len(stack) > limit:
                error(
                    st.line,
                    st.column,
                    f"nesting depth {len(stack)}",
                    f"at most {limit} nested hardware loops",
                    f"hardware loops nest at most {limit} deep",
                )
        elif d.instruction.block == "close":
            if not stack:
                error(
                    st.line,
                    st.column,
                    st.mnemonic,
                    "a loop opened before it",
                    "unmatched end of loop",
                )
                continue
            opener = stack.pop()
            partners[opener] = d.pc
            partners[d.pc] = opener
    for opener in stack:
        st = statements[opener]
        error(st.line, st.column, st.mnemonic, "a matching endloop", "loop is never closed")
    return [Decoded(d.pc, d.instruction, d.operands, d.line, partners.get(d.pc)) for d in decoded]


def _check_branch_scopes(
    decoded: list[Decoded], statements: list[_Statement], error: _Report
) -> None:
    """Branches may not enter or leave a hardware loop's body (the loop counter would leak)."""
    scope: list[int] = []
    current = -1
    stack: list[int] = []
    for d in decoded:
        if d.instruction.block == "close" and stack:
            stack.pop()
            current = stack[-1] if stack else -1
        scope.append(current)
        if d.instruction.block == "open":
            stack.append(d.pc)
            current = d.pc
    scope.append(-1)  # the end of the program is outside every loop
    for d in decoded:
        for f, value in zip(d.instruction.fields, d.operands, strict=True):
            if isinstance(f.kind, Label) and scope[value] != scope[d.pc]:
                st = statements[d.pc]
                error(
                    st.line,
                    st.column,
                    f"a branch to pc {value}",
                    "a target inside the same hardware loop body",
                    "branch crosses a hardware loop boundary (use the loop count, or branch "
                    "within the body)",
                )


def format_instruction(decoded: Decoded, labels: Mapping[int, str]) -> str:
    """One instruction as text, printed from the same fields the assembler parsed."""
    ins = decoded.instruction
    operands = [f.kind.format(v, labels) for f, v in zip(ins.fields, decoded.operands, strict=True)]
    return f"{ins.mnemonic} {', '.join(operands)}" if operands else ins.mnemonic


def disassemble(program: Program) -> str:
    """The program as assembly text; assembling it gives back the same instructions."""
    label_at: dict[int, list[str]] = {}
    for name, pc in program.labels.items():
        label_at.setdefault(pc, []).append(name)
    first = {pc: names[0] for pc, names in label_at.items()}
    lines: list[str] = []
    depth = 0
    for d in program.instructions:
        lines.extend(f"{name}:" for name in label_at.get(d.pc, []))
        if d.instruction.block == "close":
            depth -= 1
        lines.append("    " * (depth + 1) + format_instruction(d, first))
        if d.instruction.block == "open":
            depth += 1
    lines.extend(f"{name}:" for name in label_at.get(len(program.instructions), []))
    return "\n".join(lines) + "\n"
