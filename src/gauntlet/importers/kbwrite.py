"""The files of an imported KernelBench task, written from the parsed problem and its analysis.

Plain, reviewable text: `reference.py` holds the problem's own code inside `_problem` plus the
functional reference (`torch.func.functional_call` over the parameters, given as inputs);
`inputs.py` calls `gauntlet.importers.kbinputs`; `template.py` is the agent's starting file;
`task.toml` the task. Nothing here runs the problem.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gauntlet.importers.kbprobe import DROPOUT, KERNELBENCH_TOL, Analysis
from gauntlet.importers.kbsource import ProblemRefused, ProblemSource, module_text

#: The submission's entry point.
ENTRY = "forward"
#: KernelBench's contract (`contract = "modelnew"`): the submission's file and class, and the
#: task's adapter file that builds it per config.
MODELNEW_FILE = "model_new.py"
MODELNEW_ENTRY = "ModelNew"
ADAPTER_FILE = "compat.py"
#: Names the generated reference uses itself; an input of such a name is renamed.
RESERVED = frozenset(
    {"torch", "nn", "F", "math", "model", "params", "Model", "get_init_inputs", "_problem",
     "reference", "module", "name", "dtype", "hidden"}
)  # fmt: skip
#: Keys a config holds besides the problem's constants.
CONFIG_KEYS = ("name", "dtype", "hidden")


@dataclass
class TaskPlan:
    """One problem as a task: what the importer decided."""

    task_id: str
    problem: str
    """The problem's path in the source (`level1/23_Softmax.py`)."""
    level: int
    track: str
    source: ProblemSource
    analysis: Analysis
    distributions: list[str]
    zeroed: set[str] = field(default_factory=set)
    """Parameters without effect on the output: fixed at zero in the reference, not inputs."""
    origin: str = "KernelBench"
    """The source benchmark, as headers and descriptions name it (`robust-kbench`)."""
    title: str = ""
    """The task's title (default: `KernelBench L<level> <name>`)."""
    backward: bool = False
    """A backward task: gradients of every float forward input and parameter are checked."""
    tolerances: dict[str, float] = field(default_factory=lambda: dict(KERNELBENCH_TOL))
    """atol = rtol per dtype."""
    contract: Literal["function", "modelnew"] = "function"
    """`function`: the submission is `forward(inputs, parameters, constants)`; `modelnew`: an
    unmodified KernelBench `ModelNew` file, built per config by the task's adapter."""

    def forward_names(self) -> list[str]:
        """Input names of the forward inputs."""
        taken = set(self.source.constants) | RESERVED
        return _unique([f.name for f in self.analysis.forward], taken)

    def parameter_names(self) -> dict[str, str]:
        """Input name -> the model's parameter name, for the parameters that are inputs."""
        taken = set(self.source.constants) | RESERVED | set(self.forward_names())
        kept = [p.name for p in self.analysis.parameters if p.name not in self.zeroed]
        names = _unique([p.replace(".", "_") for p in kept], taken)
        return dict(zip(names, kept, strict=True))

    def arguments(self) -> list[str]:
        """Every input, in call order: forward inputs, parameters, constants."""
        return [*self.forward_names(), *self.parameter_names(), *self.source.constants]

    def gradient_names(self) -> list[str]:
        """For a backward task, the inputs whose gradients are checked: float inputs, parameters."""
        floats = [
            n for n, f in zip(self.forward_names(), self.analysis.forward, strict=True)
            if f.kind == "float"
        ]  # fmt: skip
        return floats + list(self.parameter_names())


def _unique(names: list[str], taken: set[str]) -> list[str]:
    found: list[str] = []
    for name in names:
        while name in taken or name in found:
            name += "_"
        found.append(name)
    return found


def write_task(plan: TaskPlan, folder: Path) -> None:
    """Write the task folder (replacing its generated files)."""
    clash = (set(plan.source.constants) & RESERVED) | (
        set(plan.source.constants) & set(CONFIG_KEYS)
    )
    if clash:
        raise ProblemRefused(f"a module constant is named {sorted(clash)[0]!r}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference_text(plan), encoding="utf-8")
    (folder / "inputs.py").write_text(inputs_text(plan), encoding="utf-8")
    if plan.contract == "modelnew":
        (folder / "template.py").write_text(modelnew_template(plan), encoding="utf-8")
        (folder / ADAPTER_FILE).write_text(adapter_text(plan), encoding="utf-8")
    else:
        (folder / "template.py").write_text(template_text(plan), encoding="utf-8")
        (folder / ADAPTER_FILE).unlink(missing_ok=True)
    (folder / "task.toml").write_text(task_toml(plan), encoding="utf-8")


def _header(plan: TaskPlan, what: str) -> str:
    return (
        f'"""{what} of {plan.origin} problem {Path(plan.problem).stem} ({plan.problem}).\n\n'
        f"Generated by `gauntlet import {plan.origin.lower()}` (docs/importers.md); the problem's "
        "code is\nits authors'. Regenerate rather than edit.\n"
    )


def reference_text(plan: TaskPlan) -> str:
    """reference.py: the problem's code in `_problem`, then the functional reference."""
    source, analysis = plan.source, plan.analysis
    imports = "" if any(i.startswith("import torch") for i in source.imports) else "import torch\n"
    args = plan.arguments()
    tensors = plan.forward_names() + list(plan.parameter_names())
    floats = [
        n for n, f in zip(plan.forward_names(), analysis.forward, strict=True) if f.kind == "float"
    ] + list(plan.parameter_names())
    anchor = floats[0] if floats else (tensors[0] if tensors else None)
    if anchor is None:
        raise ProblemRefused("takes no tensor input and has no parameter")
    call = ", ".join(source.constants)
    lines = [
        f"def reference({', '.join(args)}):",
        '    """Model.forward with its parameters given: a fresh model per call, no state kept."""',
        f"    Model, _, get_init_inputs = _problem({call})",
    ]
    where = f"{anchor}.device" if analysis.build_on_device else '"meta"'
    lines += [f"    with torch.device({where}):", "        model = Model(*get_init_inputs())"]
    if analysis.build_on_device and floats:
        lines.append(f"    model = model.to(dtype={floats[0]}.dtype)")
    if analysis.dropout_off:
        classes = ", ".join(f"torch.nn.{c.__name__}" for c in DROPOUT)
        lines += [
            "    # Live dropout switched off by the importer: no kernel could match its draws.",
            "    for module in model.modules():",
            f"        if isinstance(module, ({classes})):",
            "            module.eval()",
        ]
    pairs = ", ".join(f'"{p}": {n}' for n, p in plan.parameter_names().items())
    lines.append(f"    params = {{{pairs}}}")
    for name in sorted(plan.zeroed):
        like = floats[0] if floats else anchor
        lines += [
            f"    # '{name}' has no effect on the output (measured): fixed at zero, not an input.",
            f'    params["{name}"] = torch.zeros(model.get_parameter("{name}").shape, '
            f"dtype={like}.dtype, device={like}.device)",
        ]
    forward = ", ".join(plan.forward_names())
    lines.append(f"    return torch.func.functional_call(model, params, ({forward},))")
    header = _header(plan, "Reference") + (
        "\n`_problem` is the problem file with its module constants as parameters, so a config\n"
        "rebinds them all; `reference` builds the model and calls its forward with the given\n"
        'parameters (weights are inputs, drawn per trial).\n"""\n\n'
    )
    return header + imports + module_text(source) + "\n\n" + "\n".join(lines) + "\n"


def inputs_text(plan: TaskPlan) -> str:
    """inputs.py: the problem's get_inputs redrawn, fresh parameters, the constants."""
    rules = {p.name: p.rule for p in plan.analysis.parameters}
    entries = "".join(
        f'    "{n}": ("{p}", Rule.model_validate({json.dumps(rules[p].model_dump())})),\n'
        for n, p in plan.parameter_names().items()
    )
    return (
        _header(plan, "Inputs")
        + '"""\n\n'
        + "from pathlib import Path\n\n"
        + "from gauntlet.importers.kbinputs import Rule, load_problem\n"
        + "from gauntlet.importers.kbinputs import make_inputs as _make_inputs\n\n"
        + f"FORWARD = {json.dumps(plan.forward_names())}\n"
        + f"PARAMETERS = {{\n{entries}}}\n"
        + f"CONSTANTS = {json.dumps(list(plan.source.constants))}\n\n"
        + '_PROBLEM = load_problem(Path(__file__).with_name("reference.py"))\n\n\n'
        + "def make_inputs(config, seed, distribution, device):\n"
        + "    return _make_inputs(\n"
        + "        _PROBLEM, config, seed, distribution, device,\n"
        + "        forward=FORWARD, parameters=PARAMETERS, constants=CONSTANTS,\n"
        + "    )\n"
    )


def _contract(plan: TaskPlan) -> str:
    kinds = {f.name: f.kind for f in plan.analysis.forward}
    lines = []
    for name, original in zip(
        plan.forward_names(), [f.name for f in plan.analysis.forward], strict=True
    ):
        kind = {"float": "float tensor of the config's dtype", "integer": "integer tensor",
                "scalar": "Python number"}[kinds[original]]  # fmt: skip
        lines.append(f"    {name}: forward input ({kind})")
    for name, param in plan.parameter_names().items():
        lines.append(f"    {name}: the parameter '{param}' (float tensor of the config's dtype)")
    for name in plan.source.constants:
        lines.append(f"    {name}: the module constant '{name}' (Python number)")
    return "\n".join(lines)


def template_text(plan: TaskPlan) -> str:
    """template.py: the signature and the contract, for the agent to complete."""
    language = "CUDA (load_inline or CuPy raw kernels)" if plan.track == "torch2cuda" else "Triton"
    imports = "import torch\n" + (
        "from torch.utils.cpp_extension import load_inline\n" if plan.track == "torch2cuda"
        else "import triton\nimport triton.language as tl\n"
    )  # fmt: skip
    return (
        f'"""{plan.origin} problem {Path(plan.problem).stem} ({plan.problem}) in {language}: '
        "your submission.\n\n"
        f"Contract (the judge calls `{ENTRY}({', '.join(plan.arguments())})`):\n"
        f"{_contract(plan)}\n"
        "returns what reference.py's `reference` returns, of the same dtypes and shapes.\n"
        + (
            "Backward: the judge calls backward on the output; the gradients of "
            f"{', '.join(plan.gradient_names())} must match\nautograd's of the reference "
            "(a torch.autograd.Function whose backward runs your kernels).\n"
            if plan.backward
            else ""
        )
        + "The work must be done by your own kernels; inputs must not be modified.\n"
        '"""\n\n'
        f"{imports}\n\n"
        f"def {ENTRY}({', '.join(plan.arguments())}):\n"
        '    raise NotImplementedError("write the kernel(s) and launch them here")\n'
    )


def adapter_text(plan: TaskPlan) -> str:
    """compat.py: the task's adapter that builds the submission's ModelNew per config."""
    return (
        _header(plan, "KernelBench's ModelNew contract")
        + "\nThe judge's worker calls `adapt(ModelNew, config, device)` once per config, outside "
        "the\nwatched calls (`gauntlet.importers.kbcompat`).\n"
        + '"""\n\n'
        + "from pathlib import Path\n\n"
        + "from gauntlet.importers.kbcompat import bind\n"
        + "from gauntlet.importers.kbinputs import load_problem\n\n"
        + f"FORWARD = {json.dumps(plan.forward_names())}\n"
        + f"PARAMETERS = {json.dumps(plan.parameter_names())}\n"
        + f"CONSTANTS = {json.dumps(list(plan.source.constants))}\n"
        + f"ZEROED = {json.dumps(sorted(plan.zeroed))}\n\n"
        + '_PROBLEM = load_problem(Path(__file__).with_name("reference.py"))\n\n\n'
        + "def adapt(entry, config, device):\n"
        + "    return bind(\n"
        + "        _PROBLEM, entry, config, device,\n"
        + "        forward=FORWARD, parameters=PARAMETERS, constants=CONSTANTS, zeroed=ZEROED,\n"
        + f"        dropout_off={plan.analysis.dropout_off},\n"
        + "    )\n"
    )


def modelnew_template(plan: TaskPlan) -> str:
    """template.py under KernelBench's contract: a ModelNew to complete."""
    language = "CUDA (load_inline at module level)" if plan.track == "torch2cuda" else "Triton"
    imports = "import torch\nimport torch.nn as nn\n" + (
        "from torch.utils.cpp_extension import load_inline\n" if plan.track == "torch2cuda"
        else "import triton\nimport triton.language as tl\n"
    )  # fmt: skip
    forward = ", ".join(plan.forward_names())
    return (
        f'"""{plan.origin} problem {Path(plan.problem).stem} ({plan.problem}) in {language}: '
        "your submission,\nunder KernelBench's contract: an unmodified KernelBench ModelNew "
        "file.\n\n"
        "The judge builds `ModelNew(*get_init_inputs())` at each config's constants, moves it to "
        "the\nconfig's dtype, loads the problem Model's state into it with "
        "load_state_dict(strict=True)\n(the same parameter and buffer names and shapes as "
        "Model), then calls\n"
        f"`forward({forward})` with fresh weights swapped in on every call: keep none of them.\n"
        "The work must be done by your own kernels; inputs must not be modified.\n"
        '"""\n\n'
        f"{imports}\n\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, *init_inputs):\n"
        "        super().__init__()\n"
        '        raise NotImplementedError("the layers of Model, with the same names")\n\n'
        f"    def forward(self, {forward}):\n"
        '        raise NotImplementedError("write the kernel(s) and launch them here")\n'
    )


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {type(value).__name__}")


def task_toml(plan: TaskPlan) -> str:
    """task.toml."""
    analysis = plan.analysis
    language = "cuda" if plan.track == "torch2cuda" else "triton"
    name = Path(plan.problem).stem
    sizes = ", ".join(f"{k} in [{lo}, {hi}]" for k, (lo, hi) in analysis.domain.items())
    description = (
        f"Write {'CUDA' if language == 'cuda' else 'Triton'} kernels for the "
        + ("forward and backward passes" if plan.backward else "forward pass")
        + f" of {plan.origin} level {plan.level} problem {name}. reference.py gives the exact "
        "definition: the problem's own Model, called with its parameters given as inputs "
        f"(`{ENTRY}({', '.join(plan.arguments())})`); it is also the baseline your speed is "
        "measured against. Float inputs are drawn from the distributions "
        f"{', '.join(plan.distributions)} and the weights afresh on every trial, so no answer "
        "can be precomputed. Return what the reference returns (same dtypes and shapes); do not "
        "modify the inputs; the work must be done by your own kernels, not by PyTorch "
        "operations. "
        + (
            f"The gradients of {', '.join(plan.gradient_names())} are checked against autograd "
            "of the reference, and the forward plus the backward are timed. "
            if plan.backward
            else ""
        )
        + (
            f"Submit KernelBench's own format: {MODELNEW_FILE} defining class ModelNew with "
            "Model's constructor and the same parameter and buffer names and shapes; it is built "
            "per config with the init inputs, its state loaded with "
            "load_state_dict(strict=True), and forward called with each trial's weights "
            "swapped in (template.py). "
            if plan.contract == "modelnew"
            else ""
        )
        + "Unseen configurations will be tested"
        + (f" ({sizes}; dtypes {', '.join(analysis.dtypes)})" if sizes else "")
        + ", so do not specialise on the ones you are shown."
    )
    out = [
        f'id = "{plan.task_id}"',
        f'track = "{plan.track}"',
        f"title = {_toml(plan.title or f'KernelBench L{plan.level} {name}')}",
        f"level = {min(plan.level, 3)}",
        f"description = {_toml(description)}",
        "",
        "[reference]",
        'file = "reference.py"',
        'entry = "reference"',
        "",
        "[inputs]",
        'file = "inputs.py"',
        f"distributions = {_toml(plan.distributions)}",
        "",
        "[submission]",
        f"files = {_toml([MODELNEW_FILE if plan.contract == 'modelnew' else 'kernel.py'])}",
        f'entry = "{MODELNEW_ENTRY if plan.contract == "modelnew" else ENTRY}"',
        f'language = "{language}"',
        'template = "template.py"',
    ]
    if plan.contract == "modelnew":
        out.append(f'adapter = {{ file = "{ADAPTER_FILE}", entry = "adapt" }}')
    for params in analysis.visible:
        out += ["", "[[configs.visible]]"] + [f"{k} = {_toml(v)}" for k, v in params.items()]
    out += ["", "[configs.hidden]", "fixed = ["]
    out += [f"    {_toml(p)}," for p in analysis.hidden]
    out += ["]", f"count = {2 if analysis.domain else 0}"]
    if analysis.domain:
        out += ["", "[configs.hidden.domain]"]
        out += [f"{k} = {{ min = {lo}, max = {hi} }}" for k, (lo, hi) in analysis.domain.items()]
        out.append(f"dtype = {{ values = {_toml(analysis.dtypes)} }}")
    out += ["", "[tolerance]", "margin = 8"]
    for dtype in analysis.dtypes:
        tol = plan.tolerances[dtype]
        out += ["", f"[tolerance.{dtype}]", f"atol = {tol!r}", f"rtol = {tol!r}"]
    out += [
        "",
        "[roofline]",
        "# Fitted to flops (FlopCounterMode) and compulsory bytes measured on the meta device,",
        "# scaled to lie at or below every measured config.",
        f"flops = {_toml(analysis.flops)}",
        f"bytes = {_toml(analysis.bytes)}",
        f"matrix = {_toml(analysis.matrix)}",
    ]
    if plan.backward:
        out += ["", "[backward]", f"wrt = {_toml(plan.gradient_names())}"]
    return "\n".join(out) + "\n"
