"""Inputs of imported KernelBench tasks: what their generated `inputs.py` calls.

Trusted task code: it runs where a task's input generator runs (the judge's workers, `tasks
check`, the importer's probe), never in the judge's own process. It runs the problem's own
`get_inputs()` with `torch.rand`, `torch.randn` and their `_like` forms drawing from the task's
distribution (`gauntlet.taskkit`), so the structure of the inputs (`triu`, masks, softmax'd
targets) and their integer ranges (`randint(0, num_classes)`) are the problem's own and only
the float values are redrawn. Then it draws fresh weights for every parameter of the model at
their natural scale (`Rule`), so no answer can be keyed to fixed weights, and norm affines are
away from the identity.
"""

from __future__ import annotations

import importlib.util
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

from gauntlet import taskkit

#: Spread of a parameter initialised to a constant c: c + JITTER * max(1, |c|) * N(0, 1), so a
#: norm's affine (ones, zeros) is no longer the identity a kernel could skip.
JITTER = 0.1


class Rule(BaseModel):
    """How one parameter is drawn, measured on the model's own initialisation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fan_in", "constant", "normal"]
    """`fan_in`: U(-1, 1) / sqrt(fan_in of `of`), PyTorch's default for linear and convolution
    layers, at the config's own sizes; `constant`: `value` plus a jitter; `normal`:
    N(`value`, `std`), as measured."""
    of: str = ""
    """For `fan_in`: the parameter whose fan-in sets the scale (a bias takes its weight's)."""
    gain: float = 1.0
    """For `fan_in`: a factor on the bound (`HE_GAIN`: He's scale, where the default scale
    leaves the input without effect through a deep stack of layers)."""
    value: float = 0.0
    std: float = 1.0


#: He's uniform bound over PyTorch's default: sqrt(6 / fan_in) against 1 / sqrt(fan_in). A
#: ReLU layer then keeps its input's variance; at the default bound it keeps a sixth, so after
#: sixteen layers the output is the last biases' and the input has no effect.
HE_GAIN = 6**0.5


ProblemFunction = Callable[..., tuple[type, Callable[[], Any], Callable[[], Any]]]


def load_problem(reference_file: Path) -> ProblemFunction:
    """The `_problem` function of a generated reference.py (the problem's code)."""
    spec = importlib.util.spec_from_file_location("_gauntlet_kernelbench_problem", reference_file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {reference_file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problem: ProblemFunction = module._problem
    return problem


class _Sampler:
    """`torch` as the problem's `get_inputs` sees it: random draws from the task's generator."""

    def __init__(self, gen: torch.Generator, distribution: str, device: str) -> None:
        self._gen = gen
        self._distribution = distribution
        self._device = device

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    def _float(self, size: Sequence[Any], dtype: torch.dtype | None) -> torch.Tensor:
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        target = dtype if dtype is not None and dtype.is_floating_point else torch.float32
        return taskkit.draw(
            tuple(int(s) for s in shape), target, self._distribution, self._gen, self._device
        )

    def rand(self, *size: Any, dtype: torch.dtype | None = None, **_: Any) -> torch.Tensor:
        """U[0, 1) in KernelBench; here the task's distribution."""
        return self._float(size, dtype)

    def randn(self, *size: Any, dtype: torch.dtype | None = None, **_: Any) -> torch.Tensor:
        """N(0, 1) in KernelBench; here the task's distribution."""
        return self._float(size, dtype)

    def rand_like(self, like: torch.Tensor, **_: Any) -> torch.Tensor:
        """The task's distribution in the shape of `like`."""
        return self._float(tuple(like.shape), like.dtype).to(like.device)

    def randn_like(self, like: torch.Tensor, **_: Any) -> torch.Tensor:
        """The task's distribution in the shape of `like`."""
        return self._float(tuple(like.shape), like.dtype).to(like.device)

    def randint(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """The problem's own integer range, from the task's generator (on the host, then moved)."""
        kwargs.pop("device", None)
        kwargs.pop("generator", None)
        values = torch.randint(*args, generator=self._gen, device="cpu", **kwargs)
        return values.to(self._device)

    def randperm(self, n: int, **kwargs: Any) -> torch.Tensor:
        """A permutation from the task's generator."""
        kwargs.pop("device", None)
        kwargs.pop("generator", None)
        return torch.randperm(n, generator=self._gen, device="cpu", **kwargs).to(self._device)


def forward_inputs(
    problem: ProblemFunction,
    constants: dict[str, Any],
    seed: int,
    distribution: str,
    device: str,
    dtype: torch.dtype | None,
) -> list[Any]:
    """The problem's `get_inputs()` at these constants, float values redrawn.

    Other draws of the global generator (`torch.empty(n).uniform_()`) are seeded from `seed`
    and leave the caller's generator as it was. Float tensors are cast to `dtype` (None: kept),
    as KernelBench casts them to its precision.
    """
    gen = taskkit.generator(seed)
    globals_ = {**problem.__globals__, "torch": _Sampler(gen, distribution, device)}
    proxied = types.FunctionType(problem.__code__, globals_, problem.__name__)
    _, get_inputs, _ = proxied(**constants)
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed % (1 << 63))
        values = list(get_inputs())
    return [
        v.to(dtype).contiguous() if isinstance(v, torch.Tensor) and v.is_floating_point() and dtype
        else v
        for v in values
    ]  # fmt: skip


def skeleton(problem: ProblemFunction, constants: dict[str, Any]) -> torch.nn.Module:
    """The model at these constants on the meta device: parameter names and shapes, no values."""
    model_class, _, get_init_inputs = problem(**constants)
    return build_on_meta(model_class, get_init_inputs)


def build_on_meta(
    model_class: Callable[..., torch.nn.Module], get_init_inputs: Callable[[], Sequence[Any]]
) -> torch.nn.Module:
    """The model with its parameters and buffers on the meta device.

    Built there; where its construction reads a tensor's value, which a meta tensor does not
    hold (`Tensor.item()`: Swin's stochastic-depth rates taken from a `torch.linspace`), built on
    the CPU (the global random state left as it was) and moved. Any other error is the model's.
    """
    try:
        with torch.device("meta"):
            return model_class(*get_init_inputs())
    except (RuntimeError, NotImplementedError) as err:
        if "meta" not in str(err).lower():
            raise
    with torch.random.fork_rng(devices=[]):
        return model_class(*get_init_inputs()).to("meta")


def draw_parameter(
    rule: Rule,
    shapes: dict[str, tuple[int, ...]],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    gen: torch.Generator,
    device: str,
) -> torch.Tensor:
    """One parameter drawn by its rule at the config's shapes."""
    if rule.kind == "fan_in":
        fan_in = fan_in_of(shapes[rule.of])
        return taskkit.draw(shape, dtype, "uniform", gen, device, scale=rule.gain * fan_in**-0.5)
    noise = taskkit.draw(shape, torch.float32, "normal", gen, device)
    if rule.kind == "constant":
        spread = JITTER * max(1.0, abs(rule.value))
        return (rule.value + spread * noise).to(dtype)
    return (rule.value + rule.std * noise).to(dtype)


def fan_in_of(shape: tuple[int, ...]) -> int:
    """PyTorch's fan-in of a weight: input features times the receptive field."""
    receptive = 1
    for size in shape[2:]:
        receptive *= size
    return max(1, (shape[1] if len(shape) > 1 else shape[0]) * receptive)


def make_inputs(
    problem: ProblemFunction,
    config: dict[str, Any],
    seed: int,
    distribution: str,
    device: str,
    *,
    forward: Sequence[str],
    parameters: dict[str, tuple[str, Rule]],
    constants: Sequence[str],
) -> dict[str, Any]:
    """An imported task's inputs: the forward inputs, then the parameters, then the constants.

    Args:
        problem: The problem's code (`load_problem`).
        config: The config's parameters: the problem's constants and `dtype`.
        seed: The trial's seed.
        distribution: The task distribution float inputs are drawn from.
        device: Where the inputs go.
        forward: Names of the forward inputs, in call order.
        parameters: Input name -> (the model's parameter name, its rule), in call order.
        constants: Names of the constants passed after the parameters.
    """
    dtype = taskkit.dtype_of(str(config["dtype"]))
    values = {name: config[name] for name in constants}
    named: dict[str, Any] = dict(
        zip(
            forward, forward_inputs(problem, values, seed, distribution, device, dtype), strict=True
        )
    )
    model = skeleton(problem, values)
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    # Weights come from a generator of their own, so the forward inputs stay those of the
    # seed whatever the model holds.
    gen = taskkit.generator(seed ^ 0x5EED)
    for input_name, (param, rule) in parameters.items():
        named[input_name] = draw_parameter(rule, shapes, shapes[param], dtype, gen, device)
    named.update(values)
    return named
