from __future__ import annotations

import pytest
import torch

from gauntlet import taskkit
from gauntlet.task import DRAWN_DISTRIBUTIONS

FLOATS = ["float64", "float32", "float16", "bfloat16"]
SHAPE = (64, 257)


def _draw(distribution: str, dtype: str = "float32", seed: int = 0, **kw: bool) -> torch.Tensor:
    return taskkit.draw(SHAPE, dtype, distribution, taskkit.generator(seed), **kw)


def test_every_named_distribution_is_implemented() -> None:
    assert set(taskkit._DRAWERS) == set(DRAWN_DISTRIBUTIONS)


@pytest.mark.parametrize("distribution", DRAWN_DISTRIBUTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_shape_dtype_device_and_finite(distribution: str, dtype: str) -> None:
    x = _draw(distribution, dtype)
    assert x.shape == SHAPE
    assert x.dtype == taskkit.dtype_of(dtype)
    assert x.device.type == "cpu"
    assert x.is_contiguous()
    assert torch.isfinite(x).all()


@pytest.mark.parametrize("distribution", DRAWN_DISTRIBUTIONS)
def test_same_seed_same_values_other_seed_other_values(distribution: str) -> None:
    a, b = _draw(distribution, seed=7), _draw(distribution, seed=7)
    assert torch.equal(a, b)
    if distribution != "ones":
        assert not torch.equal(a, _draw(distribution, seed=8))


def test_successive_draws_from_one_generator_differ() -> None:
    gen = taskkit.generator(3)
    assert not torch.equal(
        taskkit.draw(SHAPE, "float32", "normal", gen),
        taskkit.draw(SHAPE, "float32", "normal", gen),
    )


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_low_precision_is_the_float32_draw_cast(dtype: str) -> None:
    # Values are drawn in float32 and cast: the same seed gives the same numbers, rounded.
    wide = _draw("normal", "float32", seed=5)
    narrow = _draw("normal", dtype, seed=5)
    assert torch.equal(narrow, wide.to(narrow.dtype))


def test_scale_applies_in_float32_before_the_cast() -> None:
    plain = taskkit.draw((64, 64), "float32", "normal", taskkit.generator(5))
    scaled = taskkit.draw((64, 64), "bfloat16", "normal", taskkit.generator(5), scale=64**-0.5)
    assert scaled.dtype == torch.bfloat16
    assert torch.equal(scaled, (plain * 64**-0.5).to(torch.bfloat16))


def test_normal_and_uniform_moments() -> None:
    normal = _draw("normal", "float64")
    assert abs(normal.mean().item()) < 0.05 and abs(normal.std().item() - 1) < 0.05
    uniform = _draw("uniform", "float64")
    assert uniform.min() >= -1 and uniform.max() <= 1
    assert abs(uniform.mean().item()) < 0.05 and uniform.min() < -0.99 and uniform.max() > 0.99


def test_scaled_is_large_offset_and_float16_finite() -> None:
    x = _draw("scaled", "float64")
    assert abs(x.mean().item() - taskkit.OFFSET) < 5
    assert abs(x.std().item() - taskkit.SCALE) < 5
    assert torch.isfinite(_draw("scaled", "float16")).all()


def test_heavy_tailed_has_outliers_within_the_limit() -> None:
    x = _draw("heavy_tailed", "float64")
    assert x.abs().max() <= taskkit.HEAVY_TAIL_LIMIT
    # Far more mass beyond 10 than a normal distribution has (about 1e-23).
    assert (x.abs() > 10).float().mean() > 1e-3
    assert x.abs().median() < 2


def test_special_mixes_zeros_ties_large_and_tiny() -> None:
    x = _draw("special", "float32")
    n = x.numel()
    zeros = x == 0
    assert zeros.sum() > 0.05 * n
    assert zeros.logical_and(x.signbit()).any(), "negative zeros too"
    _, counts = torch.unique(x, return_counts=True)
    assert counts.max() > 0.05 * n, "one value repeated exactly"
    assert (x.abs() >= 100).sum() > 0.02 * n
    tiny = (x != 0) & (x.abs() <= 1e-4)
    assert tiny.sum() > 0.02 * n
    assert torch.isfinite(x).all()
    # Every row holds each kind, so a kernel sees them wherever it looks.
    assert (zeros.any(dim=1) & ((x.abs() >= 100).any(dim=1))).all()


def test_special_float16_keeps_tiny_values_as_subnormals() -> None:
    x = _draw("special", "float16")
    subnormal = (x != 0) & (x.abs() < torch.finfo(torch.float16).tiny)
    assert subnormal.any()
    assert torch.isfinite(x).all()


def test_nonfinite_only_on_request() -> None:
    x = _draw("special", nonfinite=True)
    assert x.isnan().any()
    assert (x == float("inf")).any() and (x == float("-inf")).any()
    assert torch.isfinite(_draw("special")).all()
    with pytest.raises(ValueError, match="'special' only"):
        _draw("normal", nonfinite=True)


def test_ones_and_integers_are_exact() -> None:
    assert (_draw("ones", "bfloat16") == 1).all()
    for dtype in FLOATS:
        x = _draw("integers", dtype).double()
        assert torch.equal(x, x.round())
        assert x.abs().max() <= taskkit.INTEGER_LIMIT
        assert len(torch.unique(x)) == 2 * taskkit.INTEGER_LIMIT + 1


def test_draw_int_range_dtype_and_determinism() -> None:
    a = taskkit.draw_int((1000,), 0, 10, taskkit.generator(1))
    assert a.dtype == torch.int64 and a.min() == 0 and a.max() == 9
    assert torch.equal(a, taskkit.draw_int((1000,), 0, 10, taskkit.generator(1)))
    b = taskkit.draw_int(5, -3, -2, taskkit.generator(1), dtype="int32")
    assert b.dtype == torch.int32 and (b == -3).all()
    with pytest.raises(ValueError, match="empty range"):
        taskkit.draw_int(5, 2, 2, taskkit.generator(1))
    with pytest.raises(ValueError, match="integer tensors"):
        taskkit.draw_int(5, 0, 2, taskkit.generator(1), dtype="float32")


def test_bad_names_are_reported_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown distribution 'gauss'.*normal"):
        _draw("gauss")
    with pytest.raises(ValueError, match="unknown dtype 'half'.*float16"):
        taskkit.dtype_of("half")
    with pytest.raises(ValueError, match="float tensors"):
        taskkit.draw(4, "int32", "normal", taskkit.generator(0))


def test_huge_seeds_and_int_shapes() -> None:
    x = taskkit.draw(5, torch.float16, "normal", taskkit.generator(2**70 + 3))
    assert x.shape == (5,) and x.dtype == torch.float16


def test_a_cpu_draw_uses_the_tasks_generator_itself() -> None:
    gen = taskkit.generator(5)
    assert taskkit._generator_on("cpu", gen) is gen
    state = gen.get_state()
    x = taskkit.draw(SHAPE, "float32", "normal", gen)
    assert torch.equal(x, torch.randn(SHAPE, generator=torch.Generator().set_state(state)))


@pytest.mark.gpu
@pytest.mark.parametrize("distribution", DRAWN_DISTRIBUTIONS)
def test_gpu_draws_happen_on_the_gpu_reproducibly(distribution: str) -> None:
    def draw(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = taskkit.generator(seed)
        first = taskkit.draw(SHAPE, "bfloat16", distribution, gen, "cuda", nonfinite=False)
        return first, taskkit.draw(SHAPE, "float32", distribution, gen, "cuda")

    a, b = draw(11)
    assert a.device.type == "cuda" and a.dtype == torch.bfloat16 and torch.isfinite(a).all()
    again = draw(11)
    assert torch.equal(a, again[0]) and torch.equal(b, again[1])
    if distribution != "ones":
        assert not torch.equal(b, draw(12)[1])


@pytest.mark.gpu
def test_gpu_draws_inside_a_device_context() -> None:
    # KernelBench's `get_inputs` runs under `with torch.device(...)` when imported.
    outside = taskkit.draw(SHAPE, "float32", "normal", taskkit.generator(5), "cuda")
    with torch.device("cuda"):
        inside = taskkit.draw(SHAPE, "float32", "normal", taskkit.generator(5), "cuda")
    assert torch.equal(outside, inside)
