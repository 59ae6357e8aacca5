"""Input generator: x of (rows, cols)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    return {"x": taskkit.draw((config["rows"], config["cols"]), config["dtype"], distribution, gen, device)}
