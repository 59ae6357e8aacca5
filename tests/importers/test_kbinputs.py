"""Inputs of imported KernelBench tasks: redrawn floats, kept structure, fresh weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from gauntlet.importers import kbinputs
from gauntlet.importers.kbinputs import Rule
from gauntlet.importers.kbsource import module_text, parse_problem

FIXTURES = Path(__file__).parent / "kernelbench" / "KernelBench"


def _problem(relative: str) -> tuple[kbinputs.ProblemFunction, dict[str, Any]]:
    source = parse_problem((FIXTURES / relative).read_text(encoding="utf-8"), relative)
    namespace: dict[str, Any] = {}
    exec(compile(module_text(source), relative, "exec"), namespace)
    return namespace["_problem"], dict(source.constants)


def test_floats_come_from_the_distribution_and_structure_stays() -> None:
    problem, constants = _problem("level2/3_Triu_Matmul.py")
    a, b = kbinputs.forward_inputs(problem, constants, 7, "normal", "cpu", torch.float32)
    # KernelBench's torch.rand is never negative; the task's normal draw is, but the problem's
    # own triu still zeroes the lower triangle.
    assert bool((a < 0).any())
    assert bool((torch.tril(a, diagonal=-1) == 0).all())
    again = kbinputs.forward_inputs(problem, constants, 7, "normal", "cpu", torch.float32)
    assert torch.equal(a, again[0]) and torch.equal(b, again[1])
    other = kbinputs.forward_inputs(problem, constants, 8, "normal", "cpu", torch.float32)
    assert not torch.equal(a, other[0])


def test_integer_draws_keep_their_range_and_casts_follow_the_dtype() -> None:
    text = (
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x, t):\n        return x\n"
        "n = 50\nclasses = 3\n"
        "def get_inputs():\n"
        "    return [torch.rand(n, classes), torch.randint(0, classes, (n,)), torch.randn(n)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    source = parse_problem(text, "p.py")
    namespace: dict[str, Any] = {}
    exec(compile(module_text(source), "p.py", "exec"), namespace)
    x, t, y = kbinputs.forward_inputs(
        namespace["_problem"], dict(source.constants), 1, "uniform", "cpu", torch.bfloat16
    )
    assert x.dtype == torch.bfloat16 and y.dtype == torch.bfloat16
    assert t.dtype == torch.int64 and 0 <= int(t.min()) and int(t.max()) < 3


def test_parameters_are_drawn_by_rule_at_the_configs_sizes() -> None:
    gen = torch.Generator().manual_seed(0)
    shapes = {"w": (64, 400)}
    weight = kbinputs.draw_parameter(
        Rule(kind="fan_in", of="w"), shapes, (64, 400), torch.float32, gen, "cpu"
    )
    bias = kbinputs.draw_parameter(
        Rule(kind="fan_in", of="w"), shapes, (64,), torch.float32, gen, "cpu"
    )
    bound = 400**-0.5
    assert float(weight.abs().max()) <= bound and float(weight.abs().max()) > 0.9 * bound
    assert float(bias.abs().max()) <= bound
    affine = kbinputs.draw_parameter(
        Rule(kind="constant", value=1.0), shapes, (4096,), torch.float32, gen, "cpu"
    )
    # Away from the identity a kernel could skip, at the scale of the jitter.
    assert abs(float(affine.mean()) - 1.0) < 0.01 and 0.08 < float(affine.std()) < 0.12
    scaled = kbinputs.draw_parameter(
        Rule(kind="normal", value=0.0, std=1.0), shapes, (4096,), torch.float32, gen, "cpu"
    )
    assert 0.9 < float(scaled.std()) < 1.1


def test_make_inputs_orders_forward_parameters_constants() -> None:
    problem, constants = _problem("level1/1_Linear_Scale.py")
    config = {**constants, "in_features": 20, "dtype": "float16"}
    rules = {
        "linear_weight": ("linear.weight", Rule(kind="fan_in", of="linear.weight")),
        "linear_bias": ("linear.bias", Rule(kind="fan_in", of="linear.weight")),
    }
    inputs = kbinputs.make_inputs(
        problem, config, 3, "normal", "cpu",
        forward=["x"], parameters=rules, constants=list(constants),
    )  # fmt: skip
    assert list(inputs) == ["x", "linear_weight", "linear_bias", *constants]
    assert tuple(inputs["x"].shape) == (64, 20)
    assert tuple(inputs["linear_weight"].shape) == (32, 20)
    assert inputs["linear_weight"].dtype == torch.float16
    assert inputs["in_features"] == 20 and inputs["scale"] == 2.0
    again = kbinputs.make_inputs(
        problem, config, 4, "normal", "cpu",
        forward=["x"], parameters=rules, constants=list(constants),
    )  # fmt: skip
    # Fresh weights for every seed: no answer can be keyed to them.
    assert not torch.equal(inputs["linear_weight"], again["linear_weight"])


def test_build_on_meta_falls_back_to_the_cpu_for_a_value_read_in_init() -> None:
    class ReadsAValue(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rate = torch.linspace(0, 1, 3)[1].item()
            self.linear = torch.nn.Linear(4, 3)

    state = torch.random.get_rng_state()
    model = kbinputs.build_on_meta(ReadsAValue, list)
    assert model.linear.weight.is_meta and model.rate == 0.5
    assert torch.equal(torch.random.get_rng_state(), state)  # the global random state untouched

    class Broken(torch.nn.Module):
        def __init__(self) -> None:
            raise RuntimeError("not about meta tensors")

    with pytest.raises(RuntimeError, match="not about meta"):
        kbinputs.build_on_meta(Broken, list)
