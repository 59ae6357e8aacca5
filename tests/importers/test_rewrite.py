"""How the importer rewrites or refuses what the degeneracy gate finds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gauntlet.importers import kbprobe
from gauntlet.importers.degeneracy import Finding, Kind
from gauntlet.importers.kbinputs import HE_GAIN
from gauntlet.importers.kbsource import module_text, parse_problem
from gauntlet.importers.kbwrite import TaskPlan
from gauntlet.importers.kernelbench import _rewrite

ROOT = Path(__file__).parent / "kernelbench" / "KernelBench"


def _plan() -> TaskPlan:
    relative = "level2/2_Linear_BatchNorm_Shift.py"
    source = parse_problem((ROOT / relative).read_text(encoding="utf-8"), relative)
    analysis = kbprobe.analyze(
        kbprobe.AnalyzeRequest(
            module_text=module_text(source), constants=source.constants,
            forward_args=source.forward_args, max_bytes=1 << 20, max_flops=2e7,
        )
    )  # fmt: skip
    return TaskPlan(
        task_id="kb/l2/x", problem=relative, level=2, track="torch2cuda",
        source=source, analysis=analysis, distributions=["normal", "uniform"],
    )  # fmt: skip


def _finding(kind: Kind, config: str, dist: str, name: str | None = None) -> Finding:
    return Finding(kind=kind, config=config, distribution=dist, detail=kind, input_name=name)


def _report(findings: list[Finding], measured: int) -> Any:
    return kbprobe.CheckReport(failed_checks=[], findings=findings, measured=measured)


PAIRS = [(c, d) for c in ("C1", "C2", "C3") for d in ("normal", "uniform")]


def test_a_parameter_dead_everywhere_is_zeroed_and_half_dtypes_go_first() -> None:
    plan = _plan()
    assert [c["dtype"] for c in plan.analysis.visible] == ["float32", "bfloat16", "float16"]
    dead = [_finding("no_effect", c, d, "linear_bias") for c, d in PAIRS]
    half = [_finding("constant", "C2", "normal")]
    rewrites: list[str] = []
    assert _rewrite(plan, _report(dead + half, len(PAIRS)), rewrites) == "retry"
    assert rewrites == ["dtypes bfloat16 dropped: C2/normal: constant"]
    assert "bfloat16" not in plan.analysis.dtypes
    assert {c["dtype"] for c in plan.analysis.visible} == {"float32", "float16"}
    assert _rewrite(plan, _report(dead, len(PAIRS)), rewrites) == "retry"
    assert rewrites[-1].startswith("parameter 'linear.bias' fixed at zero")
    assert "linear_bias" not in plan.parameter_names()
    assert _rewrite(plan, _report([], len(PAIRS)), rewrites) is None


def test_a_distribution_is_dropped_and_the_last_one_is_refused() -> None:
    plan = _plan()
    rewrites: list[str] = []
    identity = [_finding("identity", "C1", "uniform")]
    assert _rewrite(plan, _report(identity, len(PAIRS)), rewrites) == "retry"
    assert plan.distributions == ["normal"]
    zeros = [_finding("zeros", "C1", "normal")]
    assert (_rewrite(plan, _report(zeros, 3), rewrites) or "").startswith("degenerate")


def test_an_input_dead_everywhere_scales_the_weights_then_refuses() -> None:
    plan = _plan()
    everywhere = [_finding("no_effect", c, d, "x") for c, d in PAIRS]
    rewrites: list[str] = []
    # First the layers' weights go to He's scale (a deep ReLU stack at PyTorch's default
    # scale keeps a sixth of its input's variance per layer); their biases do not.
    assert _rewrite(plan, _report(everywhere, len(PAIRS)), rewrites) == "retry"
    assert rewrites[0].startswith("weights drawn at He's scale")
    rules = {p.name: p.rule for p in plan.analysis.parameters}
    assert rules["linear.weight"].gain == HE_GAIN and rules["linear.bias"].gain == 1.0
    reason = _rewrite(plan, _report(everywhere, len(PAIRS)), rewrites)
    assert reason == "degenerate: input 'x' has no effect on the output"


def test_a_weight_dead_under_one_distribution_is_a_finding_of_it() -> None:
    plan = _plan()
    partly = [_finding("no_effect", "C1", "uniform", "norm_weight")]
    assert _rewrite(plan, _report(partly, len(PAIRS)), []) == "retry"
    assert plan.distributions == ["normal"] and not plan.zeroed


def test_sizes_tied_to_groups_are_halved_one_at_a_time() -> None:
    text = (
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, channels, groups):\n"
        "        super().__init__()\n"
        "        self.norm = nn.GroupNorm(groups, channels)\n"
        "    def forward(self, x):\n        return self.norm(x)\n"
        "batch_size = 256\nchannels = 32\ngroups = 16\nlength = 512\n"
        "def get_inputs():\n    return [torch.rand(batch_size, channels, length)]\n"
        "def get_init_inputs():\n    return [channels, groups]\n"
    )
    source = parse_problem(text, "p.py")
    problem = kbprobe._problem(module_text(source))
    sizes = kbprobe._sizes(source.constants)
    assert sizes == ["batch_size", "channels", "length"]  # `groups` names structure
    reduced, _ = kbprobe._reduce(problem, source.constants, sizes, 64 << 10, 1e9)
    # Halving everything would leave 8 channels for 16 groups; the rest shrank instead.
    assert reduced["channels"] % 16 == 0
    assert reduced["batch_size"] * reduced["channels"] * reduced["length"] * 4 * 2 <= 64 << 10


def test_every_size_of_the_domain_is_odd_in_some_fixed_config() -> None:
    # Sizes that top out below 10 get no odd top in H2 (`tasks check` asks one odd value of
    # every size whose domain admits odd ones): a fixed config sets them odd.
    text = (
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, features):\n"
        "        super().__init__()\n"
        "        self.linear = nn.Linear(features, features)\n"
        "    def forward(self, x):\n        return torch.relu(self.linear(x))\n"
        "batch_size = 8\nfeatures = 8\n"
        "def get_inputs():\n    return [torch.rand(batch_size, features)]\n"
        "def get_init_inputs():\n    return [features]\n"
    )
    source = parse_problem(text, "p.py")
    analysis = kbprobe.analyze(
        kbprobe.AnalyzeRequest(
            module_text=module_text(source), constants=source.constants,
            forward_args=source.forward_args, max_bytes=1 << 20, max_flops=1e8,
        )
    )  # fmt: skip
    assert set(analysis.domain) == {"batch_size", "features"}
    for name in analysis.domain:
        assert any(int(c[name]) % 2 for c in analysis.hidden), name
    names = [c["name"] for c in analysis.hidden]
    assert len(names) == len(set(names))
