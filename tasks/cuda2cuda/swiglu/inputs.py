"""Input generator: x of (rows, 2 * ffn_dim), the gate and up projections side by side."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    shape = (config["rows"], 2 * config["ffn_dim"])
    return {"x": taskkit.draw(shape, config["dtype"], distribution, gen, device)}
