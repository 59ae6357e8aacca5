"""Trusted helpers for task input generators (`make_inputs`).

Tasks draw their inputs through these functions so that every task means the same thing by a
distribution name (`gauntlet.task.DRAWN_DISTRIBUTIONS`) and every draw is reproducible from the
seed.
Values are drawn in float32 (float64 for a float64 target), then cast to the target dtype, on
the device they are for: a task's `make_inputs` passes one CPU generator to every draw, and a
draw for a GPU seeds a generator there from the CPU one's stream. Inputs are therefore
reproducible from the seed on the CPU (bit-identical on every CPU) and on a GPU of the same
model with the same PyTorch (Philox draws depend on the launch shape); a CPU and a GPU draw of
one seed hold different numbers from the same distribution. Drawing GPU-sized inputs on the
host took most of a judgment: 48 s of 67 s for the reference of `cuda2cuda/matmul` on an H100,
with the worker's one CPU thread.

A `make_inputs` usually reads::

    gen = taskkit.generator(seed)
    x = taskkit.draw((rows, cols), config["dtype"], distribution, gen, device)
    w = taskkit.draw((cols,), config["dtype"], "normal", gen, device)

This module runs only in trusted worker processes, so it imports torch at the top.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import accumulate

import torch

Shape = int | Sequence[int]

#: `scaled`: N(0, 1) * SCALE + OFFSET. Large magnitude and a common offset (catastrophic
#: cancellation in a naive variance, peaked softmax rows) while float16 stays finite: reaching
#: its largest value (65504) would take a draw 650 standard deviations out.
SCALE = 100.0
OFFSET = 50.0

#: `heavy_tailed` values are clipped to +-HEAVY_TAIL_LIMIT, so float16 stays finite even after a
#: few multiplications by values of order one, and squares stay finite in float32.
HEAVY_TAIL_LIMIT = 1000.0

#: `integers` draws from [-INTEGER_LIMIT, INTEGER_LIMIT]: exact in every float dtype (bfloat16
#: holds integers exactly up to 256), and so are their sums and products over small tiles.
INTEGER_LIMIT = 4

#: `special`: share of elements of each kind; the rest stay N(0, 1).
SPECIAL_SHARES = {"zero": 0.10, "tie": 0.10, "large": 0.05, "tiny": 0.05}
#: Share of non-finite elements (NaN, +Inf, -Inf in equal parts) when the task allows them.
NONFINITE_SHARE = 0.02
#: `special` large values have magnitude 10**U(2, 3); tiny values 10**U(-6, -4) (subnormal in
#: float16, so kernels that flush subnormals to zero are seen).
LARGE_EXPONENTS = (2.0, 3.0)
TINY_EXPONENTS = (-6.0, -4.0)

_DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


def dtype_of(name: str | torch.dtype) -> torch.dtype:
    """The torch dtype a config names (`"float16"` -> `torch.float16`).

    Args:
        name: A dtype name as task configs write it, or a torch dtype (returned unchanged).

    Returns:
        The torch dtype.

    Raises:
        ValueError: The name is not a known dtype.
    """
    if isinstance(name, torch.dtype):
        return name
    try:
        return _DTYPES[name]
    except KeyError:
        known = ", ".join(_DTYPES)
        raise ValueError(f"unknown dtype '{name}' (known: {known})") from None


def generator(seed: int) -> torch.Generator:
    """A CPU random generator seeded with `seed`; pass it to every draw of one input set.

    Args:
        seed: Any integer; it is reduced to the 64 bits torch's generator takes.

    Returns:
        A fresh `torch.Generator` on the CPU.
    """
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed % (1 << 64))
    return gen


def draw(
    shape: Shape,
    dtype: str | torch.dtype,
    distribution: str,
    gen: torch.Generator,
    device: str | torch.device = "cpu",
    *,
    nonfinite: bool = False,
    scale: float = 1.0,
) -> torch.Tensor:
    """Draw a contiguous tensor from one of the named distributions.

    Args:
        shape: The tensor's shape.
        dtype: The target float dtype (name or torch dtype); values are drawn in float32
            (float64 for a float64 target) and then cast, so they are exact in the target.
        distribution: One of `gauntlet.task.DRAWN_DISTRIBUTIONS`:
            `normal` N(0, 1); `uniform` U(-1, 1); `scaled` N(0, 1) * 100 + 50;
            `heavy_tailed` Student's t with 2 degrees of freedom, clipped to +-1000;
            `special` N(0, 1) with zeros (both signs), exact ties, large and tiny values
            mixed in; `ones`; `integers` uniform in [-4, 4].
        gen: The generator from `generator(seed)`; draws advance it.
        device: Where the tensor goes once drawn.
        nonfinite: For `special` only: also mix in NaN, +Inf and -Inf. Set it only where the
            operation defines a result for them.
        scale: A factor applied in the working precision before the cast (a layer's weights
            take 1 / sqrt(fan_in), as initialized layers do).

    Returns:
        A tensor of `shape` and `dtype` on `device`.

    Raises:
        ValueError: Unknown distribution or dtype, a non-float dtype, or `nonfinite` asked of a
            distribution other than `special`.
    """
    target = dtype_of(dtype)
    if not target.is_floating_point:
        raise ValueError(f"draw() makes float tensors, not '{target}'; use draw_int()")
    if distribution not in _DRAWERS:
        known = ", ".join(_DRAWERS)
        raise ValueError(f"unknown distribution '{distribution}' (known: {known})")
    if nonfinite and distribution != "special":
        raise ValueError(f"'nonfinite' applies to 'special' only, not '{distribution}'")
    size = (shape,) if isinstance(shape, int) else tuple(shape)
    work = torch.float64 if target == torch.float64 else torch.float32
    where = _generator_on(device, gen)
    values = _DRAWERS[distribution](size, work, where)
    if nonfinite:
        values = _mix_nonfinite(values, where)
    if scale != 1.0:
        values = values * scale
    return values.to(target).contiguous().to(device)


def draw_int(
    shape: Shape,
    low: int,
    high: int,
    gen: torch.Generator,
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = torch.int64,
) -> torch.Tensor:
    """Draw integers uniformly from [low, high) (class targets, indices).

    Args:
        shape: The tensor's shape.
        low: Smallest value drawn.
        high: One past the largest value drawn; above `low`.
        gen: The generator from `generator(seed)`.
        device: Where the tensor goes once drawn.
        dtype: An integer dtype.

    Returns:
        A tensor of `shape` and `dtype` on `device`.

    Raises:
        ValueError: An empty range or a non-integer dtype.
    """
    target = dtype_of(dtype)
    if target.is_floating_point or target == torch.bool:
        raise ValueError(f"draw_int() makes integer tensors, not '{target}'")
    if high <= low:
        raise ValueError(f"empty range [{low}, {high})")
    size = (shape,) if isinstance(shape, int) else tuple(shape)
    where = _generator_on(device, gen)
    values = torch.randint(low, high, size, generator=where, dtype=torch.int64, device=where.device)
    return values.to(target).to(device)


def _generator_on(device: str | torch.device, gen: torch.Generator) -> torch.Generator:
    """The generator to draw with for `device`.

    `gen` itself on the CPU; on a GPU, one seeded there from `gen`'s stream, so `gen` advances
    once per draw whatever the device.
    """
    target = torch.device(device)
    if target.type == "cpu":
        return gen
    # On the generator's device, named: a `torch.device` context (a KernelBench problem's
    # `get_inputs` runs in one) would otherwise put the draw on the GPU.
    seed = int(torch.randint(0, 1 << 62, (), generator=gen, device=gen.device))
    return torch.Generator(device=target).manual_seed(seed)


def _normal(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(size, generator=gen, dtype=work, device=gen.device)


def _uniform(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.rand(size, generator=gen, dtype=work, device=gen.device) * 2 - 1


def _scaled(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(size, generator=gen, dtype=work, device=gen.device) * SCALE + OFFSET


def _heavy_tailed(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    # Student's t with 2 degrees of freedom: Z / sqrt(V / 2) with V ~ chi2(2) = -2 log U.
    # Its variance is infinite, so a few elements per thousand dwarf the rest.
    z = torch.randn(size, generator=gen, dtype=work, device=gen.device)
    u = torch.rand(size, generator=gen, dtype=work, device=gen.device).clamp_min(
        torch.finfo(work).tiny
    )
    t = z / torch.sqrt(-torch.log(u))
    return t.clamp(-HEAVY_TAIL_LIMIT, HEAVY_TAIL_LIMIT)


def _special(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    values = torch.randn(size, generator=gen, dtype=work, device=gen.device)
    # One category per element, drawn independently, so every row of a large enough tensor
    # holds each kind and no kind sits at a fixed position a kernel could special-case.
    pick = torch.rand(size, generator=gen, dtype=work, device=gen.device)
    sign = torch.where(
        torch.rand(size, generator=gen, dtype=work, device=gen.device) < 0.5, -1.0, 1.0
    ).to(work)
    magnitude = torch.rand(size, generator=gen, dtype=work, device=gen.device)
    edges = list(accumulate(SPECIAL_SHARES.values()))
    zero = pick < edges[0]
    tie = (pick >= edges[0]) & (pick < edges[1])
    large = (pick >= edges[1]) & (pick < edges[2])
    tiny = (pick >= edges[2]) & (pick < edges[3])
    # One tie value for the whole tensor, an integer plus a half: exact in every float dtype,
    # so about a tenth of each row holds exactly equal elements (sorting, max and argmax).
    tie_value = float(torch.randint(-2, 3, (), generator=gen, device=gen.device)) + 0.5
    values = torch.where(zero, sign * 0.0, values)
    values = torch.where(tie, torch.full_like(values, tie_value), values)
    values = torch.where(large, sign * _log_uniform(magnitude, LARGE_EXPONENTS), values)
    return torch.where(tiny, sign * _log_uniform(magnitude, TINY_EXPONENTS), values)


def _log_uniform(u: torch.Tensor, exponents: tuple[float, float]) -> torch.Tensor:
    low, high = exponents
    return torch.pow(10.0, low + (high - low) * u)


def _mix_nonfinite(values: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    pick = torch.rand(values.shape, generator=gen, dtype=values.dtype, device=gen.device)
    third = NONFINITE_SHARE / 3
    values = torch.where(pick < third, math.nan, values)
    values = torch.where((pick >= third) & (pick < 2 * third), math.inf, values)
    return torch.where((pick >= 2 * third) & (pick < NONFINITE_SHARE), -math.inf, values)


def _ones(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.ones(size, dtype=work, device=gen.device)


def _integers(size: tuple[int, ...], work: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.randint(
        -INTEGER_LIMIT, INTEGER_LIMIT + 1, size, generator=gen, device=gen.device
    ).to(work)


_DRAWERS: dict[str, Callable[[tuple[int, ...], torch.dtype, torch.Generator], torch.Tensor]] = {
    "normal": _normal,
    "uniform": _uniform,
    "scaled": _scaled,
    "heavy_tailed": _heavy_tailed,
    "special": _special,
    "ones": _ones,
    "integers": _integers,
}
