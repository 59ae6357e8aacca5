"""Input generator: gate and up projections of (rows, ffn_dim)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    shape = (config["rows"], config["ffn_dim"])
    gate = taskkit.draw(shape, config["dtype"], distribution, gen, device)
    up = taskkit.draw(shape, config["dtype"], distribution, gen, device)
    return {"gate": gate, "up": up}
