"""Binding a program to a machine: straight-line runs of instructions compiled into one function.

The simulator's hot loop is `pc = steps[pc]()`. `steps[pc]` runs the *block* that starts at `pc`:
the instructions from `pc` up to the next place control flow can enter (a label, a loop body,
the instruction after a loop), compiled on first use into one Python function. For data
instructions (those with `semantics`) the code is generated from the instruction's fields with
its operands bound: fetch the register and memory operands with their checks (alignment, bounds,
written-ness, DMA races), schedule the instruction on its unit's timeline, call the NumPy
semantics on views of the operands, write the results back and mark what was written. Every
decision that depends only on the instruction and its operands is taken here, once: register
numbers and offsets are literals, an address on the hardwired-zero register is checked at
compile time and its view built once, and the front end's clock `t` stays a local of the block.

Control and memory instructions bring their own `binder` (they act on the machine itself); a
block calls the bound step in place and goes on with the next instruction only if the step
returned it, so branches and loops leave the block through the same check.

A fault inside a block leaves the machine exactly as the instruction-by-instruction model would:
the simulator maps the faulting line back to its instruction (`BoundProgram.unwind`) and stores
the block's clock.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any

from gauntlet import syntax
from gauntlet.accel.isa import (
    Enum,
    Field,
    FImm,
    Imm,
    Instruction,
    Label,
    Mem,
    Reg,
    Step,
    evaluate_formula,
    formula_names,
)
from gauntlet.accel.machine import QUEUE_FULL, REGISTER_DEPENDENCY, Halt, Machine, formula_env
from gauntlet.accel.platform import Platform
from gauntlet.accel.semantics import Elementwise, same

if TYPE_CHECKING:
    from gauntlet.accel.assembler import Decoded, Program

#: The most instructions one block runs, so a run can stop exactly at its step limit.
MAX_BLOCK = 64

#: Compiled blocks kept per platform (the same program simulated again reuses its code).
_CACHE_BLOCKS = 4096

#: Semantics the generated code writes as an expression instead of a call; the result is the
#: same Python operation on the same values.
_INFIX: dict[Any, str] = {
    same: "{0}",
    operator.add: "{0} + {1}",
    operator.sub: "{0} - {1}",
    operator.mul: "{0} * {1}",
    operator.floordiv: "{0} // {1}",
    operator.mod: "{0} % {1}",
    operator.lshift: "{0} << {1}",
    operator.rshift: "{0} >> {1}",
}


@dataclass(frozen=True)
class _Line:
    """Where a line of a block belongs: its instruction and how to unwind a fault there."""

    offset: int
    """The instruction's position in the block."""
    clock: str | None
    """The local holding the front end's clock when this instruction started; None for bound
    steps, which keep the machine's clock themselves."""


@dataclass
class _Address:
    """A memory operand's address as computed in a block, reused until its register changes."""

    start: str
    """A literal or the local holding the first word."""
    stop: str
    """A literal or the local holding the word past the last."""
    register: tuple[str, int] | None = None
    """The base register it was computed from (None: the hardwired-zero register)."""
    written: bool = False
    """Whether every word is known to be written (checked or marked earlier in the block)."""
    views: dict[str, str] = field(default_factory=dict)
    """View expression -> the local holding it."""


@dataclass(frozen=True)
class _Compiled:
    factory: Callable[[Machine, tuple[Any, ...]], Step]
    code: CodeType
    lines: dict[int, _Line]
    length: int


class BoundProgram:
    """A program bound to a machine: `steps[pc]` runs the block starting at `pc`.

    Blocks are compiled on first use, so a run pays only for the code it reaches. `single`
    holds one-instruction blocks for the last steps before the step limit.
    """

    def __init__(self, machine: Machine, program: Program) -> None:
        self.machine = machine
        self.program = program
        size = len(program)
        derived = program.derived
        if "starts" not in derived:
            derived["starts"] = _block_starts(program)
            derived["wide"] = _wide_spaces(program)
        self.starts: set[int] = derived["starts"]
        self.wide: frozenset[str] = derived["wide"]
        # Copies left fresh by an earlier program on this machine may be stale by now.
        machine.forget_wide()
        # Tables of compiled blocks, filled on first use (`_Steps.__missing__`): no object per
        # instruction is made before it is reached (on an array of tiles, every tile binds).
        self.steps: dict[int, Step] = _Steps(self, MAX_BLOCK, size)
        self.single: dict[int, Step] = _Steps(self, 1, size)
        self._lines: dict[CodeType, dict[int, _Line]] = {}

    def compile(self, pc: int, limit: int) -> Step:
        """Build the block that starts at `pc` and runs at most `limit` instructions."""
        instructions = self.program.instructions
        end = pc + 1
        while end < len(instructions) and end - pc < limit and end not in self.starts:
            end += 1
        # The code depends only on the program, so the tiles of an array share one lookup.
        known: dict[tuple[int, int], _Compiled] = self.program.derived.setdefault("compiled", {})
        compiled = known.get((pc, limit))
        if compiled is None:
            block = instructions[pc:end]
            rounds = limit // len(block) if _repeats(block) else 1
            compiled = _compiled(self.machine.platform, block, end, self.wide, rounds)
            known[pc, limit] = compiled
        self._lines[compiled.code] = compiled.lines
        consts: list[Any] = []
        for decoded in instructions[pc:end]:
            ins = decoded.instruction
            if ins.binder is not None:
                consts.append(ins.binder(self.machine, decoded))
            else:
                consts.append(ins.semantics)
        return compiled.factory(self.machine, tuple(consts))

    def unwind(self, traceback: TracebackType | None) -> int:
        """After an exception from a step: the faulting instruction's offset in its block.

        Restores the machine's clock to the instruction's start, as if it had run alone.
        """
        while traceback is not None:
            lines = self._lines.get(traceback.tb_frame.f_code)
            line = lines.get(traceback.tb_lineno) if lines is not None else None
            if line is not None:
                if line.clock is not None:
                    self.machine.t = traceback.tb_frame.f_locals[line.clock]
                return line.offset
            traceback = traceback.tb_next
        return 0


class _Steps(dict[int, Step]):
    """pc -> the step that runs the block starting there, compiled when first looked up.

    Past the last instruction is the sentinel step that ends the run.
    """

    __slots__ = ("bound", "limit", "size")

    def __init__(self, bound: BoundProgram, limit: int, size: int) -> None:
        super().__init__()
        self.bound = bound
        self.limit = limit
        self.size = size

    def __missing__(self, pc: int) -> Step:
        step = _halt if pc == self.size else self.bound.compile(pc, self.limit)
        self[pc] = step
        return step


def _halt() -> int:
    raise Halt


def bind(machine: Machine, program: Program) -> BoundProgram:
    """Bind `program` to `machine`; its blocks compile when first reached."""
    return BoundProgram(machine, program)


def _block_starts(program: Program) -> set[int]:
    """Where control flow can enter other than by falling through: blocks end before them."""
    starts = {0, *program.labels.values()}
    for decoded in program.instructions:
        ins = decoded.instruction
        if ins.block == "open":
            starts.add(decoded.pc + 1)
        if ins.block is not None and decoded.partner is not None:
            starts.add(decoded.partner + 1)
        for f, value in zip(ins.fields, decoded.operands, strict=True):
            if isinstance(f.kind, Label):
                starts.add(int(value))
    return starts


def _repeats(block: tuple[Decoded, ...]) -> bool:
    """Whether the block is a loop on its own.

    Only its last instruction has a binder, and that one may go back to the block's start (the
    end of a loop whose body the block is, or a branch to a label there).
    """
    *body, last = block
    if last.instruction.binder is None or any(d.instruction.binder for d in body):
        return False
    start = block[0].pc
    if last.instruction.block == "close" and last.partner is not None:
        return last.partner + 1 == start
    return any(
        isinstance(f.kind, Label) and value == start
        for f, value in zip(last.instruction.fields, last.operands, strict=True)
    )


def _wide_spaces(program: Program) -> frozenset[str]:
    """The SRAMs the program reads wide: its writes to them must mark the float64 copy stale."""
    return frozenset(
        f.kind.space
        for decoded in program.instructions
        for f in decoded.instruction.fields
        if f.wide and isinstance(f.kind, Mem)
    )


def _compiled(
    platform: Platform, block: tuple[Decoded, ...], end: int, wide: frozenset[str], rounds: int
) -> _Compiled:
    """The compiled code of a block (cached on the platform)."""
    operands = tuple((d.pc, d.instruction.mnemonic, d.operands) for d in block)
    key = ("block", end, operands, wide, rounds)
    cache: dict[Any, _Compiled] = platform.derived.setdefault("blocks", {})
    cached = cache.get(key)
    if cached is not None:
        return cached
    source, lines = _BlockSource(platform, block, end, wide, rounds).source()
    namespace: dict[str, Any] = {}
    name = f"<accel block {platform.name} {block[0].pc}-{end}>"
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 - generated from the ISA table
    factory = namespace["factory"]
    code = factory.__code__.co_consts
    inner = next(c for c in code if isinstance(c, CodeType) and c.co_name == "block")
    compiled = _Compiled(factory, inner, lines, len(block))
    if len(cache) >= _CACHE_BLOCKS:
        cache.pop(next(iter(cache)))
    cache[key] = compiled
    return compiled


class _BlockSource:
    """The Python source of `factory(m, consts) -> block` for a run of instructions."""

    def __init__(
        self,
        platform: Platform,
        block: tuple[Decoded, ...],
        end: int,
        wide: frozenset[str],
        rounds: int = 1,
    ) -> None:
        self.platform = platform
        self.block = block
        self.end = end
        self.wide = wide
        """SRAMs the program reads wide (writes to them mark the float64 copy stale)."""
        self.rounds = rounds
        """Up to how many times one call runs the block while its last step goes back to its
        start (a loop body): 1 for a plain block."""
        self.shared: dict[str, str] = {}
        """Names bound once per block from the machine, in order: name -> expression."""
        self.info = _platform_info(platform)
        self.addresses: dict[tuple[str, str, int, int, str], _Address] = {}
        """Memory operands computed so far, valid until their base register is written or a
        bound step runs (which may change anything, VL included)."""

    def source(self) -> tuple[str, dict[int, _Line]]:
        locals_used: set[str] = set()
        chunks: list[tuple[list[str], _Line | None]] = []
        count = len(self.block)
        for k, decoded in enumerate(self.block):
            ins = decoded.instruction
            if ins.binder is not None:
                self.addresses.clear()
                call = ["m.t = t", f"p = C{k}()"]
                if k + 1 == count and self.rounds > 1:
                    # Back to the start: run the block again without leaving, as the run loop
                    # would, at most `rounds` times per call (so a run stops at its step limit).
                    # `m.executed` counts every round, so a fault unwinds within the last one.
                    call += [
                        f"m.executed += {count}",
                        f"if p != {self.block[0].pc} or rounds == 1:",
                        "    return p",
                        "rounds -= 1",
                        "t = m.t",
                        "RELOAD",
                    ]
                elif k + 1 == count:
                    # The block ends here whatever the step returns.
                    call += [f"m.executed += {count}", "return p"]
                else:
                    call += [
                        f"if p != {decoded.pc + 1}:",
                        f"    m.executed += {k + 1}",
                        "    return p",
                        "t = m.t",
                        "RELOAD",
                    ]
                chunks.append((call, _Line(k, None)))
                continue
            body, uses, clock = _Instance(self, decoded, k).lines()
            locals_used |= uses
            chunks.append((body, _Line(k, clock)))
        reload = []
        if "vl" in locals_used:
            reload.append("vl = m.vl")
        if "ONES_VL" in locals_used:
            reload.append("ONES_VL = m.ones_vl")
        if "PD" in locals_used:
            reload.append("PD = m.pending")
        lines = ["def factory(m, consts):"]
        lines.append(f"    ({', '.join(f'C{k}' for k in range(count))},) = consts")
        for name, expression in self.shared.items():
            lines.append(f"    {name} = {expression}")
        lines.append("    def block():")
        where: dict[int, _Line] = {}
        for line in ["t = m.t", *reload]:
            lines.append(f"        {line}")
        indent = "        "
        if self.rounds > 1:
            lines.append(f"        rounds = {self.rounds}")
            lines.append("        while True:")
            indent += "    "
        for body, line_info in chunks:
            for text in body:
                if text == "RELOAD":
                    for item in reload:
                        lines.append(f"{indent}{item}")
                        if line_info is not None:
                            where[len(lines)] = line_info
                    continue
                lines.append(f"{indent}{text}")
                if line_info is not None:
                    where[len(lines)] = line_info
        if self.block[-1].instruction.binder is None:
            lines.append("        m.t = t")
            lines.append(f"        m.executed += {count}")
            lines.append(f"        return {self.end}")
        lines.append("    return block")
        return _HEADER + "\n".join(lines) + "\n", {n + _HEADER_LINES: w for n, w in where.items()}

    def share(self, name: str, expression: str) -> str:
        """Bind `name` once per block (the first binding of a name wins; names are unique)."""
        self.shared.setdefault(name, expression)
        return name


@dataclass(frozen=True)
class _PlatformInfo:
    env: dict[str, Any]
    functions: set[str]
    params: set[str]
    frontend: int
    compute: tuple[int, ...]
    shared: set[str]
    """SRAMs and array register files used by more than one non-frontend unit."""
    scalar_writers: dict[str, set[int]]
    """For each scalar register file, the units whose instructions write it."""


def _platform_info(platform: Platform) -> _PlatformInfo:
    cached = platform.derived.get("codegen")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    env = formula_env(platform.param_values())
    functions = {k for k, v in env.items() if callable(v)}
    info = _PlatformInfo(
        env=env,
        functions=functions,
        params=set(env) - functions,
        frontend=next(i for i, u in enumerate(platform.units) if u.kind == "frontend"),
        compute=tuple(i for i, u in enumerate(platform.units) if u.kind == "compute"),
        shared=_shared_resources(platform),
        scalar_writers=_scalar_writers(platform),
    )
    platform.derived["codegen"] = info
    return info


class _Names(ast.NodeTransformer):
    """Bind a formula's names: immediates and parameters become literals, `vl` stays."""

    def __init__(self, values: dict[str, Any], functions: set[str]) -> None:
        self.values = values
        self.functions = functions

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802 - ast visitor protocol
        if node.id == "vl":
            return node
        if node.id in self.functions:
            return ast.copy_location(ast.Name(f"FN_{node.id}", ast.Load()), node)
        if node.id in self.values:
            return ast.copy_location(ast.Constant(self.values[node.id]), node)
        raise ValueError(f"formula uses unknown name '{node.id}'")

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802 - ast visitor protocol
        # cdiv(a, b) written out as `gauntlet.expr` defines it, -(-a // b): the cost of nearly
        # every vector instruction, computed without a call.
        if isinstance(node.func, ast.Name) and node.func.id == "cdiv" and len(node.args) == 2:
            a, b = (self.visit(arg) for arg in node.args)
            negated = ast.BinOp(ast.UnaryOp(ast.USub(), a), ast.FloorDiv(), b)
            return ast.copy_location(ast.UnaryOp(ast.USub(), negated), node)
        return self.generic_visit(node)


class _Instance:
    """The lines of one data instruction with its operands bound, inside a block."""

    def __init__(self, block: _BlockSource, decoded: Decoded, k: int) -> None:
        self.block = block
        self.platform = block.platform
        self.info = block.info
        self.ins: Instruction = decoded.instruction
        self.operands = decoded.operands
        self.k = k
        self.unit = self.platform.unit_index(self.ins.unit)
        self.frontend = self.unit == self.info.frontend
        self.values: dict[str, Any] = {
            **{n: self.info.env[n] for n in self.info.params},
            **{
                f.name: v
                for f, v in zip(self.ins.fields, self.operands, strict=True)
                if isinstance(f.kind, Imm)
            },
        }
        self.body: list[str] = []
        self.pending: list[str] = []
        self.uses: set[str] = set()
        self.marks: list[_Address] = []
        """Operands this instruction marks written (known written once it has run)."""
        self.clobbers: list[tuple[str, int]] = []
        """Scalar registers this instruction writes."""
        self.may_fault = False

    # -- formulas -------------------------------------------------------------------------

    def formula(self, text: str) -> str:
        """Code for a formula: a literal unless it reads `vl`."""
        names = formula_names(text)
        if "vl" not in names:
            return repr(evaluate_formula(text, {**self.info.env, **self.values}))
        self.uses.add("vl")
        tree = syntax.parse(text, mode="eval")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id != "cdiv":
                    self.block.share(f"FN_{node.func.id}", f"m.env[{node.func.id!r}]")
        return ast.unparse(_Names(self.values, self.info.functions).visit(tree))

    # -- source ---------------------------------------------------------------------------

    def lines(self) -> tuple[list[str], set[str], str]:
        """The instruction's lines, the block locals it reads, and its clock's local name."""
        ins = self.ins
        args: list[str] = []
        writeback: list[str] = []
        accesses: list[tuple[str, str, str, bool]] = []
        scalar_out = [f for f in ins.fields if _is_scalar_reg(f) and f.access != "read"]
        if len(scalar_out) > 1:
            raise ValueError(f"'{ins.mnemonic}': at most one scalar register may be written")
        for i, f in enumerate(ins.fields):
            args.extend(self.operand(i, f, writeback, accesses))
        # A front-end instruction may stall on a register and then fault: its start time is
        # what the machine must show, so it is kept aside.
        clock = f"t{self.k}" if self.frontend and self.may_fault else "t"
        if self.pending:
            self.uses.add("PD")
            self.body.append("if PD:")
            self.body.extend(f"    {check}" for check in self.pending)
        done = "t"
        if not self.frontend:
            done = self.timing(accesses)
        writeback = [line.replace("DONE", done) for line in writeback]
        self.call(args, bool(scalar_out))
        self.body.extend(writeback)
        self.body.append("t += 1")
        for entry in self.marks:
            entry.written = True
        known = self.block.addresses
        for key in [key for key, entry in known.items() if entry.register in self.clobbers]:
            del known[key]
        if clock != "t":
            self.body.insert(0, f"{clock} = t")
        return self.body, self.uses, clock

    def call(self, args: list[str], returns: bool) -> None:
        semantics = self.ins.semantics
        for index, work in enumerate(self.ins.work):
            dims = [self.formula(d) for d in work]
            if not all(d.isdigit() for d in dims):
                raise ValueError(f"'{self.ins.mnemonic}': work shape {work} uses vl")
            name = f"WORK_{'_'.join(dims)}_{index}"
            args = [*args, self.block.share(name, f"m.work(({', '.join(dims)},), {index})")]
        template = _INFIX.get(semantics)
        if template is not None and template.count("{") == len(args):
            expression = template.format(*args)
        elif isinstance(semantics, Elementwise):
            # The same NumPy call as the semantics makes, without its Python frame.
            ufunc = self.block.share(f"U{self.k}", f"C{self.k}.ufunc")
            expression = f"{ufunc}({args[1]}, {args[2]}, out={args[0]})"
        else:
            expression = f"C{self.k}({', '.join(args)})"
        self.body.append(f"res = {expression}" if returns else expression)

    def operand(
        self,
        i: int,
        f: Field,
        writeback: list[str],
        accesses: list[tuple[str, str, str, bool]],
    ) -> list[str]:
        kind = f.kind
        value = self.operands[i]
        reads = f.access in ("read", "readwrite")
        writes = f.access in ("write", "readwrite")
        if isinstance(kind, Imm):
            return [repr(int(value))]
        if isinstance(kind, FImm | Enum):
            return [self.constant(f"O{self.k}_{i}", value)]
        if isinstance(kind, Mem):
            return [self.memory(i, f, kind, reads, writes, writeback, accesses)]
        if isinstance(kind, Reg):
            regfile = kind.file
            self.block.share(f"R_{regfile.name}", f"m.regs[{regfile.name!r}]")
            if regfile.kind == "array":
                return [self.array_register(i, f, int(value), reads, writes, writeback, accesses)]
            return self.scalar_register(i, f, int(value), reads, writes, writeback)
        raise ValueError(f"'{self.ins.mnemonic}': operand kind {kind!r} has no data access")

    def constant(self, name: str, value: Any) -> str:
        """A literal for plain values, else a name bound once per block."""
        if isinstance(value, bool | int | str) or (
            isinstance(value, float) and math.isfinite(value)
        ):
            return repr(value)
        return self.block.share(name, repr(value) if value is None else f"float({str(value)!r})")

    def memory(
        self,
        i: int,
        f: Field,
        kind: Mem,
        reads: bool,
        writes: bool,
        writeback: list[str],
        accesses: list[tuple[str, str, str, bool]],
    ) -> str:
        space = kind.space
        sid = [sp.name for sp in self.platform.spaces].index(space)
        spec = self.platform.spaces[sid]
        data = self.block.share(f"D_{space}", f"m.sram[{space!r}].data")
        written = self.block.share(f"W_{space}", f"m.sram[{space!r}].written")
        register, offset = self.operands[i]
        product = " * ".join(f"({d})" for d in f.shape) if len(f.shape) > 1 else f.shape[0]
        if product == "vl":
            self.uses.add("vl")
            words = "vl"
        else:
            words = self.formula(product)
        static = kind.base.zero == register
        fixed = static and words.isdigit()
        if fixed and (offset % spec.align or offset < 0 or offset + int(words) > spec.words):
            fixed = False  # faults when reached; no view to build
        key = (space, kind.base.name, register, offset, words)
        entry = self.block.addresses.get(key)
        if entry is None:
            entry = self.address(i, kind, sid, register, offset, words)
            self.block.addresses[key] = entry
        address, stop = entry.start, entry.stop
        unwritten = (
            f"if {written}.find(0, {address}, {stop}) >= 0: "
            f"m.uninit_sram({sid}, {address}, {words})"
        )
        wide = f.wide and reads and not writes
        if wide:
            # The float64 copy, brought up to date where a write made it stale. Fresh words
            # were written (a wide read checked them before widening them), so written-ness
            # needs checking only where the copy is stale.
            self.may_fault = True
            fresh = self.block.share(f"FR_{space}", f"m.sram[{space!r}].fresh")
            self.body.append(f"if {fresh}.find(0, {address}, {stop}) >= 0:")
            if not entry.written:
                self.body.append(f"    {unwritten}")
            self.body.append(f"    m.widen({sid}, {address}, {stop})")
            entry.written = True
            data = self.block.share(f"WD_{space}", f"m.sram[{space!r}].wide")
        elif reads and not entry.written:
            self.may_fault = True
            self.body.append(unwritten)
            # Words once written stay written: later reads of the range need no check.
            entry.written = True
        self.may_fault = True
        # A write's check covers a later read of the same words (it faults on every pending
        # transfer a read would fault on), so that read needs none.
        # Only accesses that meet the span of the pending transfers' words can conflict.
        span = self.block.share("SPAN", "m.span")
        check = (
            f"if {address} < {span}[1] and {span}[0] < {stop}: "
            f"m.check_pending({sid}, {address}, {stop}, {{}})"
        )
        if check.format(True) not in self.pending and check.format(writes) not in self.pending:
            self.pending.append(check.format(writes))
        if writes and not entry.written:
            if words == "vl":
                self.uses.add("ONES_VL")
                ones = "ONES_VL"
            else:
                ones = self.block.share(f"ONES_{words}", f"m.ones[:{words}]")
            # Most kernels rewrite buffers: checking is cheaper than marking again.
            writeback.append(
                f"if {written}.find(0, {address}, {stop}) >= 0: "
                f"{written}[{address}:{stop}] = {ones}"
            )
            self.marks.append(entry)
        if writes and space in self.block.wide:
            fresh = self.block.share(f"FR_{space}", f"m.sram[{space!r}].fresh")
            zeros = self.block.share("ZEROS", "m.zeros")
            writeback.append(f"{fresh}[{address}:{stop}] = {zeros}[:{words}]")
        if space in self.info.shared and (str(sid), address, stop, True) not in accesses:
            # As for the pending checks, a write of the same words stands for a read of them
            # in the scoreboard: whatever a read conflicts with, the write does too.
            accesses.append((str(sid), address, stop, writes))
        view = self.view(f, spec.align, spec.words, data, address, stop, fixed, static)
        if view.isidentifier():
            return view
        name = entry.views.get(view)
        if name is None:
            # Instructions of the block that access the same operand share one view.
            name = entry.views[view] = f"v{self.k}_{i}"
            if static or not all(self.formula(d).isdigit() for d in f.shape):
                self.body.append(f"{name} = {view}")
            else:
                # A tile at a register address: its view, kept per address, costs a dict
                # lookup instead of building a NumPy view every time.
                cache = self.block.share(f"VC{self.k}_{i}", "{}")
                self.body.append(f"{name} = {cache}.get({address})")
                self.body.append(f"if {name} is None: {name} = {cache}[{address}] = {view}")
        return name

    def address(
        self, i: int, kind: Mem, sid: int, register: int, offset: int, words: str
    ) -> _Address:
        """Compute an operand's address and check its alignment and bounds (once per block)."""
        spec = self.platform.spaces[sid]
        if kind.base.zero == register:
            if words.isdigit():
                if offset % spec.align or offset < 0 or offset + int(words) > spec.words:
                    self.may_fault = True
                    self.body.append(f"m.bad_sram({sid}, {offset}, {words})")
                return _Address(repr(offset), repr(offset + int(words)))
            self.may_fault = True
            stop = f"x{self.k}_{i}"
            self.body.append(f"{stop} = {offset} + {words}")
            bad = offset % spec.align or offset < 0
            test = "True" if bad else f"{stop} > {spec.words}"
            self.body.append(f"if {test}: m.bad_sram({sid}, {offset}, {words})")
            return _Address(repr(offset), stop)
        base = self.block.share(f"R_{kind.base.name}", f"m.regs[{kind.base.name!r}]")
        start, stop = f"e{self.k}_{i}", f"x{self.k}_{i}"
        self.body.append(f"{start} = {base}[{register}]" + (f" + {offset}" if offset else ""))
        self.body.append(f"{stop} = {start} + {words}")
        self.may_fault = True
        misaligned = f"{start} % {spec.align} or " if spec.align > 1 else ""
        self.body.append(
            f"if {misaligned}{start} < 0 or {stop} > {spec.words}: "
            f"m.bad_sram({sid}, {start}, {words})"
        )
        return _Address(start, stop, register=(kind.base.name, register))

    def view(
        self,
        f: Field,
        align: int,
        capacity: int,
        data: str,
        address: str,
        stop: str,
        fixed: bool,
        static: bool,
    ) -> str:
        """The NumPy view the semantics receives: built once when the address is static."""
        dims = [self.formula(d) for d in f.shape]
        flat = f"{data}[{address}:{stop}]"
        if len(dims) == 1:
            expression = flat
        elif len(dims) == 2 and dims[1].isdigit() and align % int(dims[1]) == 0:
            # Rows of an aligned tile: a slice of the SRAM seen as rows, no reshape per call.
            cols = int(dims[1])
            rows = self.block.share(f"{data}_{cols}", f"{data}.reshape(-1, {cols})")
            if capacity % cols:
                expression = f"{flat}.reshape({', '.join(dims)})"
            else:
                first = f"{address} // {cols}"
                if static:
                    first = repr(int(address) // cols)
                expression = f"{rows}[{first}:{first} + {dims[0]}]"
        else:
            expression = f"{flat}.reshape({', '.join(dims)})"
        if fixed and all(d.isdigit() for d in dims):
            return self.block.share(f"V{self.k}_{len(self.block.shared)}", expression)
        return expression

    def array_register(
        self,
        i: int,
        f: Field,
        index: int,
        reads: bool,
        writes: bool,
        writeback: list[str],
        accesses: list[tuple[str, str, str, bool]],
    ) -> str:
        assert isinstance(f.kind, Reg)
        regfile = f.kind.file
        view = f"m.regs[{regfile.name!r}][{index}]"
        if f.shape and tuple(f.shape) != tuple(regfile.shape):
            if len(f.shape) != 1:
                raise ValueError(f"'{self.ins.mnemonic}': register slices must be 1-D")
            length = self.formula(f.shape[0])
            view += f"[:{length}]"
            if not length.isdigit():
                name = self.block.share(
                    f"A_{regfile.name}{index}", f"m.regs[{regfile.name!r}][{index}]"
                )
                view = f"{name}[:{length}]"
        if view.startswith("m."):
            view = self.block.share(f"A{self.k}_{i}", view)
        if regfile.tracked:
            flags = self.block.share(f"RW_{regfile.name}", f"m.reg_written[{regfile.name!r}]")
            if reads:
                self.may_fault = True
                self.body.append(
                    f"if not {flags}[{index}]: m.uninit_reg({regfile.name!r}, {index})"
                )
            if writes:
                writeback.append(f"{flags}[{index}] = True")
        if f"reg:{regfile.name}" in self.info.shared:
            # Array registers shared between units are scoreboarded like memory: resource ids
            # below zero name register files, and the register index is the address.
            rid = -1 - [r.name for r in self.platform.isa.register_files].index(regfile.name)
            accesses.append((str(rid), str(index), str(index + 1), writes))
        return view

    def scalar_register(
        self, i: int, f: Field, index: int, reads: bool, writes: bool, writeback: list[str]
    ) -> list[str]:
        assert isinstance(f.kind, Reg)
        regfile = f.kind.file
        name = regfile.name
        regs = f"R_{name}"
        writers = self.info.scalar_writers.get(name, set())
        args: list[str] = []
        if reads:
            args.append(f"a{i}")
            self.body.append(f"a{i} = {regs}[{index}]")
            ready = f"RDY_{name}"
            if writers - {self.unit} and self.frontend:
                self.block.share(ready, f"m.ready[{name!r}]")
                self.block.share("stalls", "m.stalls")
                self.body += [
                    f"if {ready}[{index}] > t:",
                    f"    stalls[{REGISTER_DEPENDENCY}] += {ready}[{index}] - t",
                    f"    t = {ready}[{index}]",
                ]
            elif writers - {self.unit, self.info.frontend}:
                self.block.share(ready, f"m.ready[{name!r}]")
                self.body.append(f"dep_reg = max(dep_reg, {ready}[{index}])")
        if writes:
            self.clobbers.append((name, index))
            if regfile.zero is not None and index == regfile.zero:
                # Writes to the hardwired-zero register land in a slot nobody reads.
                index = regfile.count
            if regfile.kind == "float":
                writeback.append("v = _f32(res)")
            else:
                lo, hi = regfile.value_range
                inline_int = self.ins.semantics in _INFIX and self._int_operands()
                writeback.append("v = res" if inline_int else "v = int(res)")
                wrap = self.block.share(
                    f"WRAP_{name}", f"m.platform.isa.register_file({name!r}).wrap"
                )
                writeback.append(f"if not {lo} <= v <= {hi}: v = {wrap}(v)")
            writeback.append(f"{regs}[{index}] = v")
            if writers - {self.info.frontend}:
                ready = self.block.share(f"RDY_{name}", f"m.ready[{name!r}]")
                writeback.append(f"{ready}[{index}] = {'0' if self.frontend else 'DONE'}")
        return args

    def _int_operands(self) -> bool:
        """Whether every operand read is an integer register or immediate (results stay int)."""
        for f in self.ins.fields:
            if f.access == "write":
                continue
            kind = f.kind
            if isinstance(kind, Reg) and kind.file.kind in ("int", "address"):
                continue
            if isinstance(kind, Imm):
                continue
            return False
        return True

    def timing(self, accesses: list[tuple[str, str, str, bool]]) -> str:
        """Schedule the instruction on its unit; returns the local of its result's ready time."""
        unit = self.unit
        cost = self.formula(self.ins.cost)
        latency = self.formula(self.ins.latency)
        done = "end" if latency == "0" else "done"
        others = [u for u in self.info.compute if u != unit]
        share = self.block.share
        share("free", "m.free")
        share("horizon", "m.horizon")
        share("busy", "m.busy")
        share("counts", "m.counts")
        share("stalls", "m.stalls")
        queue = share(f"QUEUE_{unit}", f"m.queues[{unit}]")
        inflight = share(f"INFLIGHT_{unit}", f"m.inflight[{unit}]")
        uses_dep_reg = any("dep_reg" in line for line in self.body)
        if not cost.isdigit():
            self.body.append(f"cost = {cost}")
            cost = "cost"
        # The queue starts full of zeros, so its head is the start of the instruction
        # queue_depth places back (or 0, which never stalls).
        timing = [
            f"if {queue}[0] > t:",
            f"    stalls[{QUEUE_FULL}] += {queue}[0] - t",
            f"    t = {queue}[0]",
            f"s = free[{unit}]",
            "if s < t: s = t",
        ]
        if uses_dep_reg:
            timing.append(
                f"if dep_reg > s: stalls[{REGISTER_DEPENDENCY}] += dep_reg - s; s = dep_reg"
            )
        if others and accesses:
            condition = " or ".join(f"horizon[{u}] > s" for u in others)
            listed = ", ".join(f"({r}, {lo}, {hi}, {w})" for r, lo, hi, w in accesses)
            timing.append(f"if {condition}: s = m.deps({unit}, s, ({listed},))")
        timing.extend(
            [
                f"end = s + {cost}",
                f"free[{unit}] = end",
                f"busy[{unit}] += {cost}",
                f"counts[{unit}] += 1",
                f"{queue}.append(s)",
            ]
        )
        if done == "done":
            timing.append(f"done = end + {latency}")
        timing.append(f"horizon[{unit}] = {done}")
        if accesses:
            # One record per instruction: (done, then resource, lo, hi, writes per access).
            flat = ", ".join(f"{r}, {lo}, {hi}, {w}" for r, lo, hi, w in accesses)
            timing.append(f"{inflight}.append(({done}, {flat}))")
        if uses_dep_reg:
            self.body.insert(0, "dep_reg = 0")
        self.body.extend(timing)
        return done


#: Shared by every generated block: rounding a Python float to fp32 (struct is the fast path;
#: it refuses values that round past the largest fp32, which NumPy turns into infinities).
_HEADER = """\
import struct as _struct
import numpy as _np

_pack = _struct.Struct("<f")


def _f32(v):
    try:
        return _pack.unpack(_pack.pack(v))[0]
    except OverflowError:
        return float(_np.float32(v))

"""
_HEADER_LINES = _HEADER.count("\n")


def _is_scalar_reg(f: Field) -> bool:
    return isinstance(f.kind, Reg) and f.kind.file.kind != "array"


def _shared_resources(platform: Platform) -> set[str]:
    """SRAMs and array register files used by more than one non-frontend unit."""
    users: dict[str, set[str]] = {}
    for ins in platform.isa.instructions:
        if platform.units[platform.unit_index(ins.unit)].kind == "frontend":
            continue
        for f in ins.fields:
            if isinstance(f.kind, Mem):
                users.setdefault(f.kind.space, set()).add(ins.unit)
            elif isinstance(f.kind, Reg) and f.kind.file.kind == "array":
                users.setdefault(f"reg:{f.kind.file.name}", set()).add(ins.unit)
    return {name for name, units in users.items() if len(units) > 1}


def _scalar_writers(platform: Platform) -> dict[str, set[int]]:
    """For each scalar register file, the units whose instructions write it."""
    writers: dict[str, set[int]] = {}
    for ins in platform.isa.instructions:
        for f in ins.fields:
            if _is_scalar_reg(f) and f.access in ("write", "readwrite"):
                assert isinstance(f.kind, Reg)
                writers.setdefault(f.kind.file.name, set()).add(platform.unit_index(ins.unit))
    return writers
