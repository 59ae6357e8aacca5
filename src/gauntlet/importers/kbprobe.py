"""The KernelBench importer's probe: the child process that runs a problem's code.

`python -m gauntlet.importers.kbprobe analyze|check RESULT_FILE [CPU_LIMIT_S]` reads a request
(JSON) on stdin and writes its result (JSON) to RESULT_FILE; the importer starts it through
`gauntlet.process`, one problem at a time with a limit on its CPU time (set here, RLIMIT_CPU:
the probe's own seconds, which a loaded host does not use up) and a wall-clock guard, so a
problem's code never runs in the importer's own process and a crash or hang costs one problem.

- `analyze` (`AnalyzeRequest` -> `Analysis`): the problem at its shipped constants on the meta
  device (flops, bytes, shapes), reduced to the caps; the hidden domain and configs, each
  checked on the meta device; how every parameter is initialised; whether the model holds
  buffers or live dropout and is deterministic; the dtypes it runs in; the fitted roofline; and
  the degeneracy gate under KernelBench's own setup (U[0, 1) inputs, fixed weights, 1e-4).
- `check` (`CheckRequest` -> `CheckReport`): the generated task folder loaded as any task, its
  reference checks and degeneracy gate (`gauntlet.taskcheck`).
"""

from __future__ import annotations

import math
import random
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict

from gauntlet.importers import degeneracy, fit
from gauntlet.importers.kbinputs import ProblemFunction, Rule, build_on_meta, fan_in_of
from gauntlet.importers.kbsource import STRUCTURAL
from gauntlet.task import Config, Domain, Tolerance

#: Integer constants at least this large are sizes: reduced to the caps and varied by the domain.
SIZE_MIN = 8
#: The domain of a size runs from its C1 value / DOMAIN_SPREAD up to the C1 value.
DOMAIN_SPREAD = 4
#: Caps of the config the probe runs on this CPU (C1 where C1 is smaller).
CPU_BYTES = 8 << 20
CPU_FLOPS = 2e8
#: Seconds of CPU time between the probe's soft limit (SIGXCPU) and its hard one (SIGKILL).
CPU_GRACE_S = 5
#: Random configs drawn from the domain to check it on the meta device.
DOMAIN_SAMPLES = 24
#: KernelBench's own tolerances (atol = rtol) per precision.
KERNELBENCH_TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
#: Half-precision dtypes a task takes when its reference runs in them on the CPU.
HALF_DTYPES = ("bfloat16", "float16")
#: Modules whose training-mode randomness the importer switches off.
DROPOUT = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d,
           torch.nn.AlphaDropout, torch.nn.FeatureAlphaDropout)  # fmt: skip

Params = dict[str, Any]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnalyzeRequest(_Model):
    """What `analyze` needs: the problem's code as `_problem` and its shipped constants."""

    module_text: str
    constants: dict[str, int | float]
    forward_args: list[str]
    max_bytes: int
    """Cap on a config's compulsory bytes (inputs, parameters and outputs, in float32)."""
    max_flops: float
    """Cap on a config's flops."""
    configs: list[dict[str, int | float]] = []
    """The source's own configs (constants they set), each reduced to the caps, as the visible
    configs in float32 instead of C1..C3 (robust-kbench's cross product); empty: C1..C3."""


class ForwardInput(_Model):
    """One value `get_inputs` returns."""

    name: str
    kind: Literal["float", "integer", "scalar"]


class Parameter(_Model):
    """One parameter of the model and how it is drawn."""

    name: str
    """The model's name for it (`conv.weight`)."""
    rule: Rule


class Analysis(_Model):
    """What `analyze` measured; `refused` set when the problem cannot be a task."""

    refused: str | None = None
    rewrites: list[str] = []
    """How the task departs from the problem's meaning (live dropout switched off)."""
    notes: list[str] = []
    """What else the report should say (sizes reduced, training-mode batch norm)."""
    shipped_bytes: float = 0.0
    shipped_flops: float = 0.0
    visible: list[Params] = []
    hidden: list[Params] = []
    domain: dict[str, tuple[int, int]] = {}
    dtypes: list[str] = []
    forward: list[ForwardInput] = []
    parameters: list[Parameter] = []
    build_on_device: bool = False
    """Whether the reference builds the model on the inputs' device (it holds buffers or
    tensors of its own) rather than on the meta device."""
    dropout_off: bool = False
    flops: str = "0"
    bytes: str = "0"
    matrix: bool = False
    kernelbench_findings: list[str] = []
    """The degeneracy gate under KernelBench's own inputs, weights and tolerance."""


class CheckRequest(_Model):
    """What `check` needs: a generated task folder."""

    task_dir: str


class CheckReport(_Model):
    """The generated task's reference checks and degeneracy gate."""

    failed_checks: list[str]
    findings: list[degeneracy.Finding]
    measured: int
    """How many (config, distribution) pairs the gate measured."""


class _Refused(Exception):
    """The problem cannot be a task; the message says why."""


def _problem(module_text: str) -> ProblemFunction:
    namespace: dict[str, Any] = {"__name__": "_gauntlet_kernelbench_problem"}
    exec(compile(module_text, "<kernelbench problem>", "exec"), namespace)  # noqa: S102 - the probe's purpose
    problem: ProblemFunction = namespace["_problem"]
    return problem


class _Measured(_Model):
    flops: float
    float_elements: list[float]
    """Elements of each float tensor read or written (inputs, parameters, outputs)."""
    other_bytes: float
    outputs: int


def _meta(problem: ProblemFunction, constants: Params) -> _Measured:
    """The model's forward at these constants on the meta device: flops and compulsory bytes."""
    from torch.utils.flop_counter import FlopCounterMode

    model_class, get_inputs, get_init_inputs = problem(**constants)
    model = build_on_meta(model_class, get_init_inputs)
    with torch.device("meta"):
        inputs = list(get_inputs())
        counter = FlopCounterMode(display=False)
        with counter:
            out = model(*inputs)
    outs = list(out) if isinstance(out, tuple | list) else [out]
    tensors = [*inputs, *model.parameters(), *outs]
    floats = [
        float(t.numel()) for t in tensors if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
    other = sum(
        float(t.numel() * t.element_size())
        for t in tensors
        if isinstance(t, torch.Tensor) and not t.is_floating_point()
    )
    return _Measured(flops=float(counter.get_total_flops()), float_elements=floats,
                     other_bytes=other, outputs=len(outs))  # fmt: skip


def _bytes32(measured: _Measured) -> float:
    return 4 * sum(measured.float_elements) + measured.other_bytes


def _valid(problem: ProblemFunction, constants: Params) -> _Measured | None:
    try:
        return _meta(problem, constants)
    except Exception:  # noqa: BLE001 - any error of the problem's code means "not this config"
        return None


def _sizes(constants: dict[str, int | float]) -> list[str]:
    return [
        n for n, v in constants.items()
        if isinstance(v, int) and v >= SIZE_MIN and not STRUCTURAL.search(n.lower())
    ]  # fmt: skip


def _reduce(
    problem: ProblemFunction,
    shipped: dict[str, int | float],
    sizes: list[str],
    max_bytes: float,
    max_flops: float,
) -> tuple[Params, int]:
    """The shipped constants, sizes halved until the config fits the caps; and the halvings.

    Every size is halved at once while the model still runs; where that breaks it (a channel
    count no longer divisible by its groups), one size at a time, the largest first.
    """
    constants: Params = dict(shipped)
    halvings = 0
    while True:
        measured = _valid(problem, constants)
        if measured is None:
            break
        if _bytes32(measured) <= max_bytes and measured.flops <= max_flops:
            return constants, halvings
        movable = [n for n in sizes if int(constants[n]) > min(int(shipped[n]), SIZE_MIN)]
        steps = [movable] + [[n] for n in sorted(movable, key=lambda n: -int(constants[n]))]
        for step in steps:
            moved = {
                **constants,
                **{n: max(math.ceil(int(constants[n]) / 2), SIZE_MIN) for n in step},
            }
            if step and _valid(problem, moved) is not None:
                constants, halvings = moved, halvings + 1
                break
        else:
            break
    raise _Refused(
        f"does not fit {max_bytes / 2**20:.3g} MiB and {max_flops:.3g} flops at any reduction "
        "of its size constants that still runs"
    )


def _domain(problem: ProblemFunction, c1: Params, sizes: list[str]) -> dict[str, tuple[int, int]]:
    """Per size, [C1/4 or C1/2 where valid, C1]; then the sizes that break joint draws dropped."""
    domain: dict[str, tuple[int, int]] = {}
    for name in sizes:
        top = int(c1[name])
        for low in (math.ceil(top / DOMAIN_SPREAD), math.ceil(top / 2)):
            if low < top and all(
                _valid(problem, {**c1, name: v}) for v in (low, _odd_below(top, low))
            ):
                domain[name] = (low, top)
                break
    rng = random.Random(0)
    while domain:
        failing = {n: 0 for n in domain}
        for _ in range(DOMAIN_SAMPLES):
            drawn = {n: Domain(min=lo, max=hi).draw(rng) for n, (lo, hi) in domain.items()}
            if _valid(problem, {**c1, **drawn}) is None:
                for name in drawn:
                    failing[name] += drawn[name] != c1[name]
        if not any(failing.values()):
            break
        del domain[max(failing, key=lambda n: failing[n])]
    return domain


def _odd_below(top: int, low: int) -> int:
    """An odd, unaligned size at the top of a range: top when odd, else top - 1."""
    return max(low, top if top % 2 else top - 1)


def _configs(
    problem: ProblemFunction,
    c1: Params,
    sizes: list[str],
    domain: dict[str, tuple[int, int]],
    dtypes: list[str],
) -> tuple[list[Params], list[Params]]:
    """Visible C1..C3 and fixed hidden H1..H4, each checked on the meta device.

    H4 halves every size together, which keeps sizes tied to each other (a batch that must
    equal a feature size) tied, where the domain had to leave them out.
    """
    halves = [d for d in dtypes if d != "float32"] or ["float32"]
    visible = [{"name": "C1", **c1, "dtype": "float32"}]
    odd = {n: max(lo, min(hi, round(hi * 0.75) | 1)) for n, (lo, hi) in domain.items()}
    middle = {n: max(lo, round(math.sqrt(lo * hi))) for n, (lo, hi) in domain.items()}
    visible.append({"name": "C2", **c1, **odd, "dtype": halves[0]})
    visible.append({"name": "C3", **c1, **middle, "dtype": halves[-1]})
    lows = {n: lo for n, (lo, _) in domain.items()}
    tops = {
        n: _odd_below(hi, lo) if hi - lo >= 2 and hi >= 10 else hi for n, (lo, hi) in domain.items()
    }
    # Each hidden config with its fallbacks: odd sizes near the top can break a tie that the
    # sizes at the top (C1's, valid) keep, and a fixed config must reach each maximum.
    middle_dtype = dtypes[len(dtypes) // 2]
    hidden = [
        [{"name": "H1", **c1, **lows, "dtype": dtypes[0]}],
        [{"name": "H2", **c1, **tops, "dtype": middle_dtype},
         {"name": "H2", **c1, "dtype": middle_dtype}],
        [{"name": "H3", **c1, **lows, **{n: hi for n, (_, hi) in list(domain.items())[:1]},
          "dtype": dtypes[-1]}],
        [{"name": "H4", **c1, **{n: max(1, int(c1[n]) // 2) for n in sizes}, "dtype": dtypes[-1]}],
    ]  # fmt: skip
    fixed = _distinct_valid(problem, hidden)
    return _distinct_valid(problem, [[c] for c in visible]), fixed + _odd_fixed(
        problem, c1, domain, fixed, dtypes[0]
    )


def _odd_fixed(
    problem: ProblemFunction,
    c1: Params,
    domain: dict[str, tuple[int, int]],
    fixed: list[Params],
    dtype: str,
) -> list[Params]:
    """Fixed configs that set each size of the domain still even everywhere to an odd value.

    `tasks check` asks every size whose domain admits odd values to be odd in some fixed config
    (a kernel that assumes even sizes must fail one); H2's odd tops are left out below 10 and
    where they break a tie. All such sizes odd at once where the model runs so, else each
    alone: the domain kept only sizes that run alone at their odd top (`_domain`).
    """
    even = [n for n in domain if not any(int(c[n]) % 2 for c in fixed)]
    if not even:
        return []
    odd = {n: _odd_below(domain[n][1], domain[n][0]) for n in even}
    slots = [[{"name": "H5", **c1, **odd, "dtype": dtype}]]
    together = _distinct_valid(problem, slots)
    if together:
        return together
    alone = [[{"name": f"H{5 + i}", **c1, n: odd[n], "dtype": dtype}] for i, n in enumerate(even)]
    return _distinct_valid(problem, alone)


def _distinct_valid(problem: ProblemFunction, slots: list[list[Params]]) -> list[Params]:
    """Per slot, the first config that runs on the meta device and repeats none kept."""
    kept: list[Params] = []
    seen: set[tuple[Any, ...]] = set()
    for slot in slots:
        for params in slot:
            key = tuple(sorted((k, v) for k, v in params.items() if k != "name"))
            constants = {k: v for k, v in params.items() if k not in ("name", "dtype")}
            if key not in seen and _valid(problem, constants) is not None:
                seen.add(key)
                kept.append(params)
                break
    return kept


def _given(
    problem: ProblemFunction, request: AnalyzeRequest, sizes: list[str], notes: list[str]
) -> list[Params]:
    """The source's own configs as visible configs in float32, each reduced to the caps."""
    kept: list[Params] = []
    for config in request.configs:
        shipped = {**request.constants, **config}
        reduced, halvings = _reduce(problem, shipped, sizes, request.max_bytes, request.max_flops)
        params = {"name": f"C{len(kept) + 1}", **reduced, "dtype": "float32"}
        if any({**k, "name": ""} == {**params, "name": ""} for k in kept):
            continue
        if halvings:
            notes.append(f"config {config} halved {halvings} times to fit the caps")
        kept.append(params)
    return kept


def _classify(name: str, value: torch.Tensor, model: torch.nn.Module) -> Rule:
    """How a parameter was initialised: fan-in uniform, a constant, or measured normal."""
    flat = value.detach().double().reshape(-1)
    if flat.numel() and bool((flat == flat[0]).all()):
        return Rule(kind="constant", value=float(flat[0]))
    owner, _, local = name.rpartition(".")
    module = model.get_submodule(owner) if owner else model
    weight = getattr(module, "weight", None)
    scale_of = name if value.dim() >= 2 else ""
    if local == "bias" and isinstance(weight, torch.Tensor) and weight.dim() >= 2:
        scale_of = f"{owner}.weight" if owner else "weight"
    if scale_of:
        shape = tuple(model.get_parameter(scale_of).shape)
        bound = fan_in_of(shape) ** -0.5
        top = float(flat.abs().max())
        if top <= bound * (1 + 1e-6) and (flat.numel() < 16 or top >= 0.5 * bound):
            return Rule(kind="fan_in", of=scale_of)
    std = float(flat.std()) if flat.numel() > 1 else 1.0
    return Rule(kind="normal", value=float(flat.mean()), std=std if std > 0 else 1.0)


def _eager(
    problem: ProblemFunction, constants: Params, seed: int, dropout_off: bool
) -> tuple[torch.nn.Module, list[Any]]:
    """The model as KernelBench builds it (seeded default init) and its own inputs, on the CPU."""
    model_class, get_inputs, get_init_inputs = problem(**constants)
    torch.manual_seed(seed)
    model = model_class(*get_init_inputs())
    if dropout_off:
        for module in model.modules():
            if isinstance(module, DROPOUT):
                module.eval()
    torch.manual_seed(seed + 1)
    return model, list(get_inputs())


def _outputs(value: Any) -> list[torch.Tensor]:
    values = list(value) if isinstance(value, tuple | list) else [value]
    if not all(isinstance(v, torch.Tensor) for v in values):
        raise _Refused("forward returns something other than tensors")
    return values


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and torch.equal(x.nan_to_num(), y.nan_to_num())
        for x, y in zip(a, b, strict=True)
    )


def _behaviour(problem: ProblemFunction, c1: Params, analysis: dict[str, Any]) -> None:
    """Determinism, dropout, buffers, the parameters' rules and whether meta building works."""
    notes: list[str] = analysis["notes"]
    model, inputs = _eager(problem, c1, 42, False)
    with torch.no_grad():
        first = _outputs(model(*inputs))
        second = _outputs(model(*inputs))
    live = [m for m in model.modules() if isinstance(m, DROPOUT) and m.p > 0]
    dropout_off = False
    if not _same(first, second):
        if not live:
            raise _Refused("forward is not deterministic (two calls on the same inputs differ)")
        dropout_off = True
        model, inputs = _eager(problem, c1, 42, True)
        with torch.no_grad():
            first, second = _outputs(model(*inputs)), _outputs(model(*inputs))
        if not _same(first, second):
            raise _Refused("forward is not deterministic even with its dropout switched off")
        analysis["rewrites"] = [
            f"live dropout switched off (p={live[0].p}): no kernel could match it"
        ]
    analysis["dropout_off"] = dropout_off
    if any(
        m.training for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
    ):
        notes.append(
            "training-mode batch norm kept: batch statistics; running buffers of a fresh model "
            "per call"
        )
    analysis["parameters"] = [
        Parameter(name=n, rule=_classify(n, p, model)) for n, p in model.named_parameters()
    ]
    buffers = list(model.named_buffers())
    own_tensors = [
        n for m in model.modules() for n, v in vars(m).items()
        if isinstance(v, torch.Tensor) and not n.startswith("_")
    ]  # fmt: skip
    on_device = bool(buffers or own_tensors)
    if not on_device:
        from torch.func import functional_call

        params: dict[str, torch.Tensor] = dict(model.named_parameters())
        skeleton_class, _, get_init_inputs = problem(**c1)
        try:
            # Strictly on meta, as the reference builds it (a model whose construction reads
            # a tensor's value, `build_on_meta`'s fallback, is built where the inputs are).
            with torch.device("meta"):
                skeleton = skeleton_class(*get_init_inputs())
            with torch.no_grad():
                again = _outputs(functional_call(skeleton, params, tuple(inputs)))
            on_device = not _same(first, again)
        except Exception:  # noqa: BLE001 - the model does not run built on meta: build on device
            on_device = True
    analysis["build_on_device"] = on_device


def _forward(inputs: list[Any], names: list[str]) -> list[ForwardInput]:
    if len(names) != len(inputs):
        names = [f"input{i}" for i in range(len(inputs))]
    found = []
    for name, value in zip(names, inputs, strict=True):
        if isinstance(value, torch.Tensor):
            kind: Literal["float", "integer", "scalar"] = (
                "float" if value.is_floating_point() else "integer"
            )
        elif isinstance(value, int | float) and not isinstance(value, bool):
            kind = "scalar"
        else:
            raise _Refused(f"get_inputs returns a {type(value).__name__} ('{name}')")
        found.append(ForwardInput(name=name, kind=kind))
    return found


def _dtypes(problem: ProblemFunction, c1: Params, dropout_off: bool) -> list[str]:
    """float32, and each half precision the model runs in on the CPU with finite outputs."""
    found = ["float32"]
    for name in HALF_DTYPES:
        dtype = getattr(torch, name)
        try:
            model, inputs = _eager(problem, c1, 42, dropout_off)
            model = model.to(dtype)
            cast = [
                v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                for v in inputs
            ]
            with torch.no_grad():
                outs = _outputs(model(*cast))
        except Exception:  # noqa: BLE001 - an op without this dtype on the CPU: leave the dtype out
            continue
        if all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point()):
            found.append(name)
    return found


def _roofline(
    problem: ProblemFunction,
    c1: Params,
    domain: dict[str, tuple[int, int]],
    samples: list[Params],
    analysis: dict[str, Any],
) -> None:
    base = _meta(problem, c1)
    moved: dict[str, tuple[Params, _Measured]] = {}
    for name, (low, high) in domain.items():
        value = max(low, high // 2)
        measured = _valid(problem, {**c1, name: value})
        if measured is not None and value != high:
            moved[name] = ({**c1, name: value}, measured)
    points = [(c1, base)] + [
        m for m in ((s, _valid(problem, s)) for s in samples) if m[1] is not None
    ]

    def terms(quantity: Callable[[_Measured], list[float]]) -> list[fit.Monomial]:
        found = []
        for index, amount in enumerate(quantity(base)):
            shifts = {
                n: (float(p[n]), quantity(m)[index]) for n, (p, m) in moved.items()
                if len(quantity(m)) == len(quantity(base))
            }  # fmt: skip
            found.append(fit.monomial(amount, c1, fit.exponents(amount, c1, shifts)))
        return found

    flops = terms(lambda m: [m.flops] if m.flops > 0 else [])
    elements = terms(lambda m: m.float_elements)
    other = terms(lambda m: [m.other_bytes] if m.other_bytes > 0 else [])
    flop_points = [(p, m.flops) for p, m in points]  # type: ignore[union-attr]
    analysis["flops"] = fit.expression(flops, fit.lower_bound(flops, flop_points))
    float_points = [(p, sum(m.float_elements)) for p, m in points]  # type: ignore[union-attr]
    other_points = [(p, m.other_bytes) for p, m in points]  # type: ignore[union-attr]
    float_expr = fit.expression(elements, fit.lower_bound(elements, float_points), "itemsize")
    other_expr = fit.expression(other, fit.lower_bound(other, other_points))
    analysis["bytes"] = float_expr if other_expr == "0" else f"{float_expr} + {other_expr}"
    analysis["matrix"] = base.flops > 0


def _host(value: Any) -> Any:
    """A tensor as NumPy, floats widened to float64 (the gate's ground truth); others as is."""
    if not isinstance(value, torch.Tensor):
        return value
    value = value.detach()  # robust-kbench's backward inputs require grad
    return (value.double() if value.is_floating_point() else value).numpy()


def _kernelbench_gate(problem: ProblemFunction, c1: Params, dropout_off: bool) -> list[str]:
    """The degeneracy gate under KernelBench's own setup: its inputs, weights of seed 42, 1e-4."""
    config = Config(name="C1", params={k: v for k, v in c1.items()})

    def draw(_: Config, seed: int, __: str) -> dict[str, Any]:
        get_inputs = problem(**c1)[1]
        torch.manual_seed(seed)
        values = list(get_inputs())
        return {f"input{i}": _host(v) for i, v in enumerate(values)}

    model, _ = _eager(problem, c1, 42, dropout_off)
    model = model.double()

    def reference(inputs: dict[str, Any]) -> list[np.ndarray]:
        args = [torch.from_numpy(v) if isinstance(v, np.ndarray) else v for v in inputs.values()]
        with torch.no_grad():
            return [o.detach().double().numpy() for o in _outputs(model(*args))]

    tol = KERNELBENCH_TOL["float32"]
    # allclose has no L2 bound; a redraw must still move the output by more than 5x the tolerance.
    findings = degeneracy.measure(
        draw, reference, config, "kernelbench", 0, Tolerance(atol=tol, rtol=tol), math.inf, tol
    )
    return [f.detail for f in findings if f.kind in degeneracy.TRIVIAL]


def analyze(request: AnalyzeRequest) -> Analysis:
    """Everything the importer needs to write the task, measured; or why it cannot be one."""
    try:
        return _analyze(request)
    except _Refused as err:
        return Analysis(refused=str(err))


def _analyze(request: AnalyzeRequest) -> Analysis:
    torch.set_num_threads(1)
    problem = _problem(request.module_text)
    shipped = _valid(problem, dict(request.constants))
    if shipped is None:
        try:
            _meta(problem, dict(request.constants))
        except Exception as err:  # noqa: BLE001 - reported as the reason
            raise _Refused(f"does not run on the meta device: {type(err).__name__}: {err}") from err
    assert shipped is not None
    notes: list[str] = []
    sizes = _sizes(request.constants)
    c1, halvings = _reduce(problem, request.constants, sizes, request.max_bytes, request.max_flops)
    if halvings:
        notes.append(f"sizes halved {halvings} times to fit the caps ({', '.join(sizes)})")
    # What runs on this CPU (initialisation, determinism, dtypes, KernelBench's gate) runs at
    # C1 or smaller: GPU-sized C1 would take minutes of float64 on the host.
    try:
        small, _ = _reduce(problem, c1, sizes, min(request.max_bytes, CPU_BYTES), CPU_FLOPS)
    except _Refused:
        # C1 itself, slower: the caps the user chose are met, only this host's are not.
        small = c1
    analysis: dict[str, Any] = {
        "notes": notes,
        "shipped_bytes": _bytes32(shipped),
        "shipped_flops": shipped.flops,
    }
    _behaviour(problem, small, analysis)
    dropout_off = analysis["dropout_off"]
    _, inputs = _eager(problem, small, 42, dropout_off)
    analysis["forward"] = _forward(inputs, request.forward_args)
    dtypes = _dtypes(problem, small, dropout_off)
    domain = _domain(problem, c1, sizes)
    visible, hidden = _configs(problem, c1, sizes, domain, dtypes)
    if request.configs:
        visible = _given(problem, request, sizes, notes)
    constants_of = [
        {k: v for k, v in p.items() if k not in ("name", "dtype")} for p in visible + hidden
    ]
    _roofline(problem, c1, domain, constants_of, analysis)
    return Analysis(
        **analysis,
        visible=visible,
        hidden=hidden,
        domain=domain,
        dtypes=dtypes,
        kernelbench_findings=_kernelbench_gate(problem, small, dropout_off),
    )


def check(request: CheckRequest) -> CheckReport:
    """The generated task's reference checks and degeneracy gate, as `tasks check` runs them."""
    from gauntlet.task import load_task
    from gauntlet.taskcheck import degeneracy_gate, domain_reach, reference_checks, references

    torch.set_num_threads(1)
    task = load_task(Path(request.task_dir))
    pair = references(task)  # the gate reuses the reference checks' forwards
    results = [domain_reach(task), *reference_checks(task, pair)]
    failed = [f"{r.name}: {r.detail}" for r in results if not r.ok]
    gate = degeneracy_gate(task, pair)
    measured = len(gate.configs) * len(task.spec.inputs.distributions)
    return CheckReport(failed_checks=failed, findings=gate.findings, measured=measured)


def main(argv: list[str]) -> int:
    """Run one command: read its request on stdin, write its result to the file named.

    With a third argument, the process's CPU time is limited to that many seconds: past it the
    kernel sends SIGXCPU (which ends the process), and SIGKILL `CPU_GRACE_S` later.
    """
    command, result_file, *limit = argv
    if limit:
        cpu_s = math.ceil(float(limit[0]))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + CPU_GRACE_S))
    text = sys.stdin.read()
    result: BaseModel
    if command == "analyze":
        result = analyze(AnalyzeRequest.model_validate_json(text))
    else:
        result = check(CheckRequest.model_validate_json(text))
    Path(result_file).write_text(result.model_dump_json(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
