"""Roofline expressions fitted to measured flops and bytes."""

from __future__ import annotations

from gauntlet import expr
from gauntlet.importers import fit


def test_a_matrix_product_fits_exactly() -> None:
    base = {"M": 64, "N": 32, "K": 16}

    def flops(p: dict[str, float]) -> float:
        return 2.0 * p["M"] * p["N"] * p["K"]

    moved = {n: (base[n] / 2, flops({**base, n: base[n] / 2})) for n in base}
    powers = fit.exponents(flops(base), base, moved)
    assert powers == {"M": 1, "N": 1, "K": 1}
    terms = [fit.monomial(flops(base), base, powers)]
    text = fit.expression(terms)
    assert expr.evaluate(text, {"M": 100, "N": 7, "K": 3}) == 2 * 100 * 7 * 3


def test_an_inexact_fit_is_scaled_under_every_sample() -> None:
    # A valid convolution's output: (H - 2) * (W - 2) is no monomial; the fit is scaled down so
    # the roofline never claims more work than was measured.
    base = {"H": 32, "W": 32}

    def out(p: dict[str, float]) -> float:
        return (p["H"] - 2) * (p["W"] - 2)

    moved = {n: (base[n] / 2, out({**base, n: base[n] / 2})) for n in base}
    terms = [fit.monomial(out(base), base, fit.exponents(out(base), base, moved))]
    samples = [({"H": h, "W": w}, out({"H": h, "W": w})) for h in (8, 16, 32) for w in (8, 32)]
    factor = fit.lower_bound(terms, samples)
    assert factor < 1
    for params, measured in samples:
        assert fit.evaluate(terms, params) * factor <= measured * (1 + 1e-9)


def test_expression_merges_terms_and_writes_zero_for_none() -> None:
    terms = [(2.0, (("n", 1),)), (3.0, (("n", 1),)), (1.0, ())]
    assert fit.expression(terms, times="itemsize") == "1 * itemsize + 5 * n * itemsize"
    assert fit.expression([]) == "0"
