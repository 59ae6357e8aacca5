"""Input generator: one (rows, cols) matrix of logits."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    shape = (config["rows"], config["cols"])
    return {"x": taskkit.draw(shape, config["dtype"], distribution, gen, device)}
