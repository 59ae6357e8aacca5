"""Input generator: a weight of (rows, cols) scaled by 1 / sqrt(cols) and a vector of (cols,)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    weight = (taskkit.draw((rows, cols), "float32", distribution, gen) / cols**0.5).to(
        taskkit.dtype_of(dtype)).to(device)
    v = taskkit.draw((cols,), dtype, distribution, gen, device)
    return {"weight": weight, "v": v}
