"""Roofline expressions fitted to measured flops and bytes.

An importer measures a problem's flops (`FlopCounterMode`) and compulsory bytes at a few configs;
the task needs them as expressions of the config (`[roofline]`). Each measured quantity is
fitted as a sum of monomials `c * a**i * b**j` (one per tensor for bytes), the exponents read
from how the quantity moves when one parameter moves alone. The judge rejects a time below the
speed of light, so the fitted expression must never exceed what was measured: it is scaled
down to lie at or below every measured sample (`lower_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Params = Mapping[str, float]
Monomial = tuple[float, tuple[tuple[str, int], ...]]

#: Largest exponent a fit gives one parameter (a 3-D convolution's flops grow as size**4 in
#: no single parameter; anything steeper is a misfit).
MAX_EXPONENT = 4


def exponents(
    base: float, base_params: Params, moved: Mapping[str, tuple[float, float]]
) -> dict[str, int]:
    """Integer exponents of a monomial from one-parameter moves.

    Args:
        base: The quantity at `base_params`.
        base_params: The parameters of the base config.
        moved: Parameter -> (its moved value, the quantity with only it moved).
    """
    found: dict[str, int] = {}
    for name, (value, quantity) in moved.items():
        start = float(base_params[name])
        if base <= 0 or quantity <= 0 or value == start or value <= 0 or start <= 0:
            continue
        power = math.log(quantity / base) / math.log(value / start)
        rounded = max(0, min(MAX_EXPONENT, round(power)))
        if rounded:
            found[name] = rounded
    return found


def monomial(base: float, base_params: Params, powers: Mapping[str, int]) -> Monomial:
    """The monomial through the base point with these exponents."""
    denominator = math.prod(float(base_params[n]) ** e for n, e in powers.items())
    return base / denominator, tuple(sorted(powers.items()))


def evaluate(terms: Sequence[Monomial], params: Params) -> float:
    """A sum of monomials at some parameters."""
    return sum(c * math.prod(float(params[n]) ** e for n, e in powers) for c, powers in terms)


def lower_bound(terms: Sequence[Monomial], samples: Sequence[tuple[Params, float]]) -> float:
    """The factor (at most 1) that puts the sum at or below every measured sample."""
    factor = 1.0
    for params, measured in samples:
        fitted = evaluate(terms, params)
        if fitted > 0:
            factor = min(factor, measured / fitted)
    return max(factor, 0.0)


def expression(terms: Sequence[Monomial], factor: float = 1.0, times: str = "") -> str:
    """The sum as an expression for `[roofline]` (`0` when empty), each term times `times`."""
    merged: dict[tuple[tuple[str, int], ...], float] = {}
    for coefficient, powers in terms:
        merged[powers] = merged.get(powers, 0.0) + coefficient * factor
    parts = []
    for powers, coefficient in sorted(merged.items()):
        if coefficient <= 0:
            continue
        factors = [f"{coefficient:.6g}"] + [n if e == 1 else f"{n} ** {e}" for n, e in powers]
        if times:
            factors.append(times)
        parts.append(" * ".join(factors))
    return " + ".join(parts) or "0"
