"""Binding a program to a machine: one closure per instruction, generated from the ISA table.

The simulator's hot loop is `pc = steps[pc]()`. For data instructions (those with `semantics`)
the step is generated here, once per instruction definition and platform, as Python source
derived from the instruction's fields: fetch the register and memory operands with their checks
(alignment, bounds, written-ness, DMA races), schedule the instruction on its unit's timeline,
call the NumPy semantics on views of the operands, write the results back and mark what was
written. Generating the source, rather than looping over the fields at run time, is what keeps a
tile or vector instruction within a few microseconds: every decision that depends only on the
instruction's definition is taken here, once.

Control and memory instructions bring their own `binder` (they act on the machine itself).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gauntlet.accel.isa import (
    Enum,
    Field,
    FImm,
    Imm,
    Instruction,
    Mem,
    Reg,
    Step,
    evaluate_formula,
    formula_names,
)
from gauntlet.accel.machine import QUEUE_FULL, REGISTER_DEPENDENCY, Machine, formula_env
from gauntlet.accel.platform import Platform

if TYPE_CHECKING:
    from gauntlet.accel.assembler import Decoded, Program

Factory = Callable[[Machine, Callable[..., Any], int, tuple[Any, ...]], Step]


def bind(machine: Machine, program: Program) -> list[Step]:
    """Build the step of every instruction of `program` on `machine`."""
    steps: list[Step] = []
    for decoded in program.instructions:
        steps.append(bind_one(machine, decoded))
    return steps


def bind_one(machine: Machine, decoded: Decoded) -> Step:
    """Build the step of one decoded instruction."""
    ins = decoded.instruction
    if ins.binder is not None:
        return ins.binder(machine, decoded)
    assert ins.semantics is not None  # guaranteed by Instruction.__post_init__
    factory = factory_for(machine.platform, ins)
    return factory(machine, ins.semantics, decoded.pc + 1, decoded.operands)


def factory_for(platform: Platform, ins: Instruction) -> Factory:
    """The compiled step factory of a data instruction on a platform (cached on the platform)."""
    key = f"step:{ins.mnemonic}"
    cached = platform.derived.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    source = generate(platform, ins)
    namespace: dict[str, Any] = {}
    code = compile(source, f"<accel step {platform.name}.{ins.mnemonic}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source, built from the ISA table
    factory: Factory = namespace["factory"]
    platform.derived[key] = factory
    return factory


class _Names(ast.NodeTransformer):
    """Rename a formula's names into the generated code's locals."""

    def __init__(self, params: set[str], fields: set[str], functions: set[str]) -> None:
        self.params = params
        self.fields = fields
        self.functions = functions

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802 - ast visitor protocol
        if node.id == "vl":
            return node
        if node.id in self.fields:
            return ast.copy_location(ast.Name(f"F_{node.id}", ast.Load()), node)
        if node.id in self.functions:
            return ast.copy_location(ast.Name(f"FN_{node.id}", ast.Load()), node)
        if node.id in self.params:
            return ast.copy_location(ast.Name(f"P_{node.id}", ast.Load()), node)
        raise ValueError(f"formula uses unknown name '{node.id}'")


def generate(platform: Platform, ins: Instruction) -> str:
    """The Python source of `factory(m, sem, nxt, ops) -> step` for a data instruction."""
    return _Generator(platform, ins).source()


class _Generator:
    def __init__(self, platform: Platform, ins: Instruction) -> None:
        self.platform = platform
        self.ins = ins
        self.unit = platform.unit_index(ins.unit)
        self.frontend = platform.units[self.unit].kind == "frontend"
        env = formula_env(platform.param_values())
        self.env = env
        self.functions = {k for k, v in env.items() if callable(v)}
        self.params = set(env) - self.functions
        self.imm_fields = {f.name for f in ins.fields if isinstance(f.kind, Imm)}
        self.prelude: list[str] = []
        self.body: list[str] = []
        self.pending: list[str] = []
        self.used: set[str] = set()
        self.uses_vl = False
        self.shared = _shared_resources(platform)
        self.scalar_writers = _scalar_writers(platform)

    # -- formulas -------------------------------------------------------------------------

    def formula(self, text: str) -> tuple[str, bool]:
        """Python code for a formula, and whether it is constant for the bound instruction."""
        names = formula_names(text)
        tree = ast.parse(text, mode="eval")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                self.used.add(node.func.id)
        for name in names:
            if name in self.params:
                self.used.add(f"P_{name}")
        renamed = _Names(self.params, self.imm_fields, self.functions).visit(tree)
        if "vl" in names:
            self.uses_vl = True
        return ast.unparse(renamed), "vl" not in names

    def constant(self, name: str, text: str) -> str:
        """Code for a formula's value.

        A literal when it depends only on parameters, a local bound once per instruction when
        it reads immediates, else computed in the step.
        """
        names = formula_names(text)
        if names <= self.params | self.functions:
            return repr(evaluate_formula(text, self.env))
        code, constant = self.formula(text)
        (self.prelude if constant else self.body).append(f"{name} = {code}")
        return name

    # -- source ---------------------------------------------------------------------------

    def source(self) -> str:
        ins = self.ins
        args: list[str] = []
        writeback: list[str] = []
        accesses: list[tuple[str, str, str, bool]] = []  # (resource id, lo, hi, writes)
        # Immediates first: shape formulas of earlier operands may read them.
        for i, f in enumerate(ins.fields):
            if isinstance(f.kind, Imm):
                self.prelude.append(f"F_{f.name} = ops[{i}]")
        for i, f in enumerate(ins.fields):
            args.extend(self.operand(i, f, writeback, accesses))
        scalar_out = [f for f in ins.fields if _is_scalar_reg(f) and f.access != "read"]
        if len(scalar_out) > 1:
            raise ValueError(f"'{ins.mnemonic}': at most one scalar register may be written")
        if self.pending:
            self.body.append("if m.pending:")
            self.body.extend(f"    {check}" for check in self.pending)
        if not self.frontend:
            self.timing(accesses)
            writeback = [line.replace("DONE", self.done_name) for line in writeback]
        call = f"sem({', '.join(args)})"
        self.body.append(f"res = {call}" if scalar_out else call)
        self.body.extend(writeback)
        self.body.append("m.t = t + 1")
        self.body.append("return nxt")
        return self.assemble()

    def operand(
        self,
        i: int,
        f: Field,
        writeback: list[str],
        accesses: list[tuple[str, str, str, bool]],
    ) -> list[str]:
        kind = f.kind
        reads = f.access in ("read", "readwrite")
        writes = f.access in ("write", "readwrite")
        if isinstance(kind, Imm):
            return [f"F_{f.name}"]
        if isinstance(kind, FImm | Enum):
            self.prelude.append(f"o{i} = ops[{i}]")
            return [f"o{i}"]
        if isinstance(kind, Mem):
            return [self.memory(i, f, kind, reads, writes, writeback, accesses)]
        if isinstance(kind, Reg):
            regfile = kind.file
            self.prelude.append(f"R_{regfile.name} = m.regs[{regfile.name!r}]")
            self.prelude.append(f"o{i} = ops[{i}]")
            if regfile.kind == "array":
                return [self.array_register(i, f, reads, writes, writeback, accesses)]
            return self.scalar_register(i, f, reads, writes, writeback)
        raise ValueError(f"'{self.ins.mnemonic}': operand kind {kind!r} has no data access")

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
        base = kind.base.name
        # Capacity, alignment and id of the space are constants of the platform.
        sid = [sp.name for sp in self.platform.spaces].index(space)
        spec = self.platform.spaces[sid]
        self.prelude.extend(
            [
                f"S_{space} = m.sram[{space!r}]",
                f"D_{space} = S_{space}.data",
                f"W_{space} = S_{space}.written",
                f"I_{space} = {sid}",
                f"R_{base} = m.regs[{base!r}]",
                f"o{i}r, o{i}o = ops[{i}]",
            ]
        )
        product = " * ".join(f"({d})" for d in f.shape) if len(f.shape) > 1 else f.shape[0]
        if product == "vl":
            self.uses_vl = True
            words = "vl"
        else:
            words = self.constant(f"N{i}", product)
        view = f"D_{space}[e{i}:e{i} + {words}]"
        if len(f.shape) > 1:
            dims = [self.constant(f"SH{i}_{k}", d) for k, d in enumerate(f.shape)]
            view += f".reshape({', '.join(dims)})"
        self.body.append(f"e{i} = R_{base}[o{i}r] + o{i}o")
        self.body.append(
            f"if e{i} % {spec.align} or e{i} < 0 or e{i} + {words} > {spec.words}: "
            f"m.bad_sram(I_{space}, e{i}, {words})"
        )
        if reads:
            self.body.append(
                f"if W_{space}.find(0, e{i}, e{i} + {words}) >= 0: "
                f"m.uninit_sram(I_{space}, e{i}, {words})"
            )
        self.pending.append(f"m.check_pending(I_{space}, e{i}, e{i} + {words}, {writes})")
        if writes:
            ones = "ONES_VL" if words == "vl" else f"ONES[:{words}]"
            if words.isdigit():
                self.prelude.append(f"ONES_{words} = ONES[:{words}]")
                ones = f"ONES_{words}"
            # Most kernels rewrite buffers: checking is cheaper than marking again.
            writeback.append(
                f"if W_{space}.find(0, e{i}, e{i} + {words}) >= 0: "
                f"W_{space}[e{i}:e{i} + {words}] = {ones}"
            )
        if space in self.shared:
            accesses.append((f"I_{space}", f"e{i}", f"e{i} + {words}", writes))
        return view

    def array_register(
        self,
        i: int,
        f: Field,
        reads: bool,
        writes: bool,
        writeback: list[str],
        accesses: list[tuple[str, str, str, bool]],
    ) -> str:
        assert isinstance(f.kind, Reg)
        regfile = f.kind.file
        view = f"R_{regfile.name}[o{i}]"
        if f.shape and tuple(f.shape) != tuple(regfile.shape):
            if len(f.shape) != 1:
                raise ValueError(f"'{self.ins.mnemonic}': register slices must be 1-D")
            view += f"[:{self.constant(f'N{i}', f.shape[0])}]"
        if regfile.tracked:
            self.prelude.append(f"RW_{regfile.name} = m.reg_written[{regfile.name!r}]")
            if reads:
                self.body.append(
                    f"if not RW_{regfile.name}[o{i}]: m.uninit_reg({regfile.name!r}, o{i})"
                )
            if writes:
                writeback.append(f"RW_{regfile.name}[o{i}] = True")
        if f"reg:{regfile.name}" in self.shared:
            # Array registers shared between units are scoreboarded like memory: resource ids
            # below zero name register files, and the register index is the address.
            rid = -1 - [r.name for r in self.platform.isa.register_files].index(regfile.name)
            accesses.append((str(rid), f"o{i}", f"o{i} + 1", writes))
        return view

    def scalar_register(
        self, i: int, f: Field, reads: bool, writes: bool, writeback: list[str]
    ) -> list[str]:
        assert isinstance(f.kind, Reg)
        regfile = f.kind.file
        name = regfile.name
        writers = self.scalar_writers.get(name, set())
        args: list[str] = []
        if reads:
            self.body.append(f"a{i} = R_{name}[o{i}]")
            if writers - {self.unit} and self.frontend:
                self.prelude.append(f"RDY_{name} = m.ready[{name!r}]")
                self.body.append(
                    f"if RDY_{name}[o{i}] > t: t = m.register_stall(RDY_{name}[o{i}], t)"
                )
            elif writers - {self.unit, self.frontend_index()}:
                self.prelude.append(f"RDY_{name} = m.ready[{name!r}]")
                self.body.append(f"dep_reg = max(dep_reg, RDY_{name}[o{i}])")
            args.append(f"a{i}")
        if writes:
            if regfile.zero is not None:
                # Writes to the hardwired-zero register land in a slot nobody reads.
                self.prelude.append(f"if o{i} == {regfile.zero}: o{i} = {regfile.count}")
            if regfile.kind == "float":
                writeback.append("v = FN_f32(res)")
                self.used.add("f32")
            else:
                lo, hi = regfile.value_range
                writeback.append("v = int(res)")
                writeback.append(f"if not {lo} <= v <= {hi}: v = FN_wrap_{name}(v)")
                self.prelude.append(f"FN_wrap_{name} = m.platform.isa.register_file({name!r}).wrap")
            writeback.append(f"R_{name}[o{i}] = v")
            if writers - {self.frontend_index()}:
                self.prelude.append(f"RDY_{name} = m.ready[{name!r}]")
                writeback.append(f"RDY_{name}[o{i}] = {'0' if self.frontend else 'DONE'}")
        return args

    def frontend_index(self) -> int:
        return next(i for i, u in enumerate(self.platform.units) if u.kind == "frontend")

    def timing(self, accesses: list[tuple[str, str, str, bool]]) -> None:
        cost = self.constant("COST", self.ins.cost)
        latency = self.constant("LAT", self.ins.latency)
        done = "end" if latency == "0" else "done"
        self.done_name = done
        others = [u for u in self.platform_compute_units() if u != self.unit]
        self.prelude.extend(
            [
                "free = m.free",
                "horizon = m.horizon",
                "busy = m.busy",
                "counts = m.counts",
                f"queue = m.queues[{self.unit}]",
                "QD = queue.maxlen",
                f"inflight = m.inflight[{self.unit}]",
                "stalls = m.stalls",
            ]
        )
        uses_dep_reg = any("dep_reg" in line for line in self.body)
        timing = [
            "if len(queue) == QD and queue[0] > t:",
            f"    stalls[{QUEUE_FULL}] += queue[0] - t",
            "    t = queue[0]",
            f"s = free[{self.unit}]",
            "if s < t: s = t",
        ]
        if uses_dep_reg:
            timing.append(
                f"if dep_reg > s: stalls[{REGISTER_DEPENDENCY}] += dep_reg - s; s = dep_reg"
            )
        if others and accesses:
            condition = " or ".join(f"horizon[{u}] > s" for u in others)
            listed = ", ".join(f"({r}, {lo}, {hi}, {w})" for r, lo, hi, w in accesses)
            timing.append(f"if {condition}: s = m.deps({self.unit}, s, ({listed},))")
        timing.extend(
            [
                f"end = s + {cost}",
                f"free[{self.unit}] = end",
                f"busy[{self.unit}] += {cost}",
                f"counts[{self.unit}] += 1",
                "queue.append(s)",
            ]
        )
        if done == "done":
            timing.append(f"done = end + {latency}")
        timing.append(f"horizon[{self.unit}] = {done}")
        if accesses:
            # One record per instruction: (done, then resource, lo, hi, writes per access).
            flat = ", ".join(f"{r}, {lo}, {hi}, {w}" for r, lo, hi, w in accesses)
            timing.append(f"inflight.append(({done}, {flat}))")
        if uses_dep_reg:
            self.body.insert(0, "dep_reg = 0")
        self.body.extend(timing)

    def platform_compute_units(self) -> list[int]:
        return [i for i, u in enumerate(self.platform.units) if u.kind == "compute"]

    def assemble(self) -> str:
        lines = ["def factory(m, sem, nxt, ops):", "    env = m.env", "    ONES = m.ones"]
        if "f32" in self.used:
            lines.append("    FN_f32 = _f32")
        for name in sorted(self.used):
            if name.startswith("P_"):
                lines.append(f"    {name} = env[{name[2:]!r}]")
            elif name in self.functions:
                lines.append(f"    FN_{name} = env[{name!r}]")
        seen: set[str] = set()
        for line in self.prelude:
            if line not in seen:
                seen.add(line)
                lines.append(f"    {line}")
        lines.append("    def step():")
        lines.append("        t = m.t")
        if self.uses_vl:
            lines.append("        vl = m.vl")
        if any("ONES_VL" in line for line in self.body):
            lines.append("        ONES_VL = m.ones_vl")
        lines.extend(f"        {line}" for line in self.body)
        lines.append("    return step")
        header = _HEADER
        return header + "\n".join(lines) + "\n"


#: Shared by every generated factory: rounding a Python float to fp32 (struct is the fast path;
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
