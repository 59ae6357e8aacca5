"""The degeneracy gate, on synthetic references where the answer is known."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gauntlet.importers import degeneracy
from gauntlet.task import Config, Tolerance

CONFIG = Config(name="C1", params={"n": 256})
TOL = Tolerance(atol=1e-5, rtol=1e-5)


def _draw(distribution_sign: float = 1.0) -> Callable[[Config, int, str], dict[str, Any]]:
    def draw(config: Config, seed: int, distribution: str) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        n = int(config.params["n"])
        x = rng.standard_normal(n) if distribution == "normal" else rng.random(n)
        return {"x": x * distribution_sign, "w": rng.standard_normal(n)}

    return draw


def _kinds(reference: Callable[[dict[str, Any]], list[np.ndarray]], dist: str) -> set[str]:
    found = degeneracy.measure(_draw(), reference, CONFIG, dist, 5, TOL, 1e-5)
    return {f.kind for f in found}


def test_a_sound_reference_has_no_finding() -> None:
    assert _kinds(lambda i: [i["x"] * i["w"] + np.sin(i["x"])], "normal") == set()


@pytest.mark.parametrize(
    ("reference", "dist", "expected"),
    [
        # Zero whatever the input (KernelBench L2/83's min-then-clamp).
        (lambda i: [np.clip(np.minimum(i["x"], 0), 0, 1) * i["w"]], "normal", "zeros"),
        # ReLU of U[0, 1) inputs is the input itself.
        (lambda i: [np.maximum(i["x"], 0)], "uniform", "identity"),
        # A mean over many values concentrates: another seed's mean passes.
        (lambda i: [np.array(np.mean(i["x"] ** 2) + 1e5)], "normal", "constant"),
        (lambda i: [np.array(np.mean(i["x"] ** 2) + 1e5)], "normal", "insensitive"),
        # A weight that does not reach the output.
        (lambda i: [np.tanh(i["x"]) + 0 * i["w"]], "normal", "no_effect"),
        # A logarithm of normal inputs.
        (lambda i: [np.log(i["x"]) * i["w"]], "normal", "nonfinite"),
    ],
)
def test_each_degeneracy_is_found(
    reference: Callable[[dict[str, Any]], list[np.ndarray]], dist: str, expected: str
) -> None:
    with np.errstate(all="ignore"):
        assert expected in _kinds(reference, dist)


def test_no_effect_names_the_input() -> None:
    found = degeneracy.measure(
        _draw(), lambda i: [np.tanh(i["x"]) + 0 * i["w"]], CONFIG, "normal", 5, TOL, 1e-5
    )
    assert [f.input_name for f in found if f.kind == "no_effect"] == ["w"]


def test_the_same_problem_is_sound_under_another_distribution() -> None:
    # ReLU passes `return x` only where every input is positive: the gate decides per
    # distribution, and the importer drops only the distributions that are degenerate.
    reference = lambda i: [np.maximum(i["x"], 0) * 1.0]  # noqa: E731
    assert "identity" in _kinds(reference, "uniform")
    assert "identity" not in _kinds(reference, "normal")
