"""Input generator: x of (batch, dim, seqlen), a depthwise filter of (dim, width), a bias."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    dtype, dim = config["dtype"], config["dim"]
    x = taskkit.draw((config["batch"], dim, config["seqlen"]), dtype, distribution, gen, device)
    # Filter and bias stay N(0, 1) under every distribution (never ones or zeros).
    weight = taskkit.draw((dim, config["width"]), dtype, "normal", gen, device)
    bias = taskkit.draw((dim,), dtype, "normal", gen, device)
    return {"x": x, "weight": weight, "bias": bias}
