"""Reading KernelBench problem files as text: constants, rewritten code, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet.importers.kbsource import ProblemRefused, module_text, parse_problem

FIXTURES = Path(__file__).parent / "kernelbench" / "KernelBench"


def _read(relative: str) -> str:
    return (FIXTURES / relative).read_text(encoding="utf-8")


def _run(text: str, **constants: object) -> tuple[type, object, object]:
    source = parse_problem(text, "p.py")
    namespace: dict[str, object] = {}
    exec(compile(module_text(source), "p.py", "exec"), namespace)
    problem = namespace["_problem"]
    return problem(**{**source.constants, **constants})  # type: ignore[operator,no-any-return]


def test_constants_of_every_literal_form() -> None:
    text = (
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n    def forward(self, x, y):\n        return x\n"
        "a = 16\nb = 1024 * 2\nc, d = 3, 4\nh = w = 8\nlow = -1.5\nflag = True\n"
        "shape = (32, 7)\nsizes = [400, 800]\nderived = a * 2\ngroups = a\nlayers = [64] * 3\n"
        "def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"
    )
    source = parse_problem(text, "p.py")
    assert source.constants == {
        "a": 16, "b": 2048, "c": 3, "d": 4, "h": 8, "w": 8, "low": -1.5,
        "shape_0": 32, "shape_1": 7, "sizes_0": 400, "sizes_1": 800, "layers_0": 64,
    }  # fmt: skip
    assert source.forward_args == ["x", "y"]
    # Booleans, derived values and ties stay in the code, recomputed from the constants.
    assert "flag = True" in source.body
    assert "derived = a * 2" in source.body
    assert "shape = (shape_0, shape_1,)" in source.body
    assert "sizes = [sizes_0, sizes_1,]" in source.body
    assert "layers = [layers_0,] * 3" in source.body


def test_a_name_assigned_twice_is_not_a_constant() -> None:
    text = (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
        "n = 4\nn = 8\ndef get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"
    )
    source = parse_problem(text, "p.py")
    assert source.constants == {}
    assert source.body[1:3] == ["n = 4", "n = 8"]


def test_constants_are_rebound_everywhere_module_globals_included() -> None:
    model, get_inputs, get_init_inputs = _run(
        _read("level2/2_Linear_BatchNorm_Shift.py"), batch_size=5, feature_shape_0=7, shift=3.0
    )
    (x,) = get_inputs()  # type: ignore[operator]
    assert tuple(x.shape) == (5, 7)  # the tuple constant follows its element
    assert get_init_inputs() == [7, 24]  # type: ignore[operator]
    m = model(*get_init_inputs())  # type: ignore[operator]
    m.norm.weight.data.zero_()  # the normalised part gone, the output is the global `shift`
    assert bool((m(x) == 3.0).all())


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (_read("level1/3_Uses_Missing_Module.py"), "imports gauntlet_fixture_not_installed"),
        ("def get_inputs():\n    return []\n", "defines no Model, get_init_inputs"),
        ("def f(:\n", "not valid Python"),
    ],
)
def test_refusals_name_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ProblemRefused, match=reason):
        parse_problem(text, "p.py")


def test_refuses_global_statements_and_varargs_forward() -> None:
    base = "import torch\ndef get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"
    with pytest.raises(ProblemRefused, match="global"):
        parse_problem(
            base + "class Model(torch.nn.Module):\n    def forward(self, x):\n"
            "        global n\n        return x\n",
            "p.py",
        )
    with pytest.raises(ProblemRefused, match=r"\*args"):
        parse_problem(
            base
            + "class Model(torch.nn.Module):\n    def forward(self, *xs):\n        return xs\n",
            "p.py",
        )


def test_size_literals_of_layer_calls_become_constants_tied_by_value() -> None:
    text = (
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 16, kernel_size=9, stride=2, padding=4)\n"
        "        self.norm = nn.GroupNorm(8, 16)\n"
        "        self.fc = nn.Linear(in_features=16 * Block.area, out_features=10)\n"
        "        self.block = Block(16, stride=16)\n"
        "    def forward(self, x):\n"
        "        return self.fc(self.norm(self.conv(x)).flatten(1))\n"
        "class Block(nn.Module):\n"
        "    area = 16\n"
        "    def __init__(self, width, stride):\n"
        "        super().__init__()\n"
        "        self.width, self.stride = width, stride\n"
        "        self.in_channels = 16\n"
        "        self.stride_size = 16\n"
        "        num_features = 24\n"
        "        self.features = num_features\n"
        "batch_size = 2\n"
        "def get_inputs():\n    return [torch.rand(batch_size, 3, 8, 8)]\n"
        "def get_init_inputs():\n    return [12]\n"
    )
    source = parse_problem(text, "p.py")
    # The conv's 16 output channels, the norm's and the linear layer's 16 * 4 * 4 are one
    # constant; kernel, stride, padding, the group count and small literals stay as written.
    # So are a local width named as one, and the constructor arguments get_init_inputs returns.
    assert source.hoisted == ["size_16", "size_10", "size_24", "size_8", "size_12"]
    assert source.constants == {
        "size_16": 16, "size_10": 10, "size_24": 24, "size_8": 8, "size_12": 12, "batch_size": 2
    }  # fmt: skip
    model_class, get_inputs, _ = _run(text, size_16=8)
    model = model_class()
    assert model.conv.out_channels == 8 and model.fc.in_features == 8 * 4 * 4
    assert model.norm.num_groups == 8 and model.conv.kernel_size == (9, 9)
    # The problem's own blocks take sizes too; their structural keywords stay.
    assert (model.block.width, model.block.stride) == (8, 16)
    # A width held in an attribute named as a size follows; a structural one stays.
    assert (model.block.in_channels, model.block.stride_size) == (8, 16)
    assert get_inputs()[0].shape == (2, 3, 8, 8)  # type: ignore[operator]


def test_nested_layer_helpers_and_int_width_multipliers_get_size_constants() -> None:
    # MobileNet's form: helpers defined inside __init__ build the layers, called with widths
    # rounded by int() from a multiplier; a nested helper that builds no layer keeps its numbers.
    text = (
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, alpha):\n"
        "        super().__init__()\n"
        "        def conv_bn(inp, oup, stride):\n"
        "            return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1), nn.BatchNorm2d(oup))\n"
        "        def divisible(v, divisor):\n"
        "            return max(divisor, v // divisor * divisor)\n"
        "        self.body = conv_bn(3, int(32 * alpha), 2)\n"
        "        self.head = nn.Linear(int(32 * alpha), divisible(20, 8))\n"
        "    def forward(self, x):\n"
        "        return self.head(self.body(x).mean((2, 3)))\n"
        "batch_size = 2\n"
        "alpha = 0.5\n"
        "def get_inputs():\n    return [torch.rand(batch_size, 3, 5, 5)]\n"
        "def get_init_inputs():\n    return [alpha]\n"
    )
    source = parse_problem(text, "p.py")
    assert source.hoisted == ["size_32"]
    model_class, _, get_init_inputs = _run(text, size_32=16)
    model = model_class(*get_init_inputs())  # type: ignore[operator]
    assert model.body[0].out_channels == 8 and model.head.in_features == 8  # int(16 * 0.5)
    assert model.head.out_features == 16  # divisible(20, 8): its 8 is no size


def test_a_shape_of_names_and_literals_gets_constants_for_its_sizes() -> None:
    text = (
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x\n"
        "batch_size = 2\ninput_shape = (batch_size, 3, 224, 224)\n"
        "def get_inputs():\n    return [torch.rand(input_shape)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    source = parse_problem(text, "p.py")
    assert source.constants == {"size_224": 224, "batch_size": 2}
    assert "input_shape = (batch_size, 3, size_224, size_224)" in source.body
