"""KernelBench's `ModelNew` contract for imported tasks: what their generated `modelnew.py` calls.

Trusted task code, run in the candidate's process by the judge's worker (the task's
`[submission] adapter`), outside the watched calls. Per config it builds the submission's
`ModelNew(*get_init_inputs())` at the config's constants on the judged device, moved to the
config's dtype as KernelBench moves it, and loads the problem `Model`'s state into it with
`load_state_dict(strict=True)`: a `ModelNew` whose parameters and buffers differ in name or shape
from `Model`'s fails (`strict=False` let a solution keep weights of its own). Each call then runs
`ModelNew.forward` on the call's forward inputs with the call's parameters swapped in
(`torch.func.functional_call`, strict: every parameter and buffer given, no copy), and buffers
fresh from the model's own, as the reference's fresh model per call has them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from gauntlet import taskkit
from gauntlet.importers.kbinputs import ProblemFunction
from gauntlet.importers.kbprobe import DROPOUT


def bind(
    problem: ProblemFunction,
    model_new: Any,
    config: dict[str, Any],
    device: str,
    *,
    forward: Sequence[str],
    parameters: dict[str, str],
    constants: Sequence[str],
    zeroed: Sequence[str] = (),
    dropout_off: bool = False,
) -> Callable[..., Any]:
    """The submission's `ModelNew` built for this config, as a function of the task's inputs.

    Args:
        problem: The problem's code (`kbinputs.load_problem`).
        model_new: The submission's entry: KernelBench's `ModelNew` class (a function is
            returned as it is).
        config: The config's parameters (the problem's constants and `dtype`).
        device: Where the judge runs the call (`cpu`, `cuda`).
        forward: Names of the forward inputs, in call order.
        parameters: Input name -> the model's parameter name, in call order.
        constants: Names of the constants passed after the parameters.
        zeroed: Parameters the task fixes at zero (no effect on the output), not inputs.
        dropout_off: Whether the task switched dropout off (then `ModelNew`'s dropout too).
    """
    if not isinstance(model_new, type):
        # A function already takes the task's inputs: the task's own baseline (the reference
        # bound to the entry's name) is judged through the same contract.
        function: Callable[..., Any] = model_new
        return function
    if not issubclass(model_new, torch.nn.Module):
        raise TypeError(f"the submission's ModelNew is no nn.Module ({model_new.__mro__})")
    values = {name: config[name] for name in constants}
    dtype = taskkit.dtype_of(str(config["dtype"]))
    model_class, _, get_init_inputs = problem(**values)
    with torch.device(device):
        model = model_new(*get_init_inputs()).to(dtype=dtype)
        own = model_class(*get_init_inputs()).to(dtype=dtype)
    model.load_state_dict(own.state_dict(), strict=True)
    if dropout_off:
        for module in model.modules():
            if isinstance(module, DROPOUT):
                module.eval()
    buffers = {name: value.detach().clone() for name, value in own.named_buffers()}
    zero_shapes = {name: tuple(own.get_parameter(name).shape) for name in zeroed}
    del own
    names = [*forward, *parameters, *constants]

    def call(*args: Any) -> Any:
        named = dict(zip(names, args, strict=True))
        state: dict[str, torch.Tensor] = {param: named[n] for n, param in parameters.items()}
        like = next(iter(state.values()), None)
        for param, shape in zero_shapes.items():
            state[param] = torch.zeros(
                shape, dtype=dtype, device=like.device if like is not None else device
            )
        state.update({name: value.clone() for name, value in buffers.items()})
        inputs = tuple(named[n] for n in forward)
        return torch.func.functional_call(model, state, inputs, strict=True)

    return call
