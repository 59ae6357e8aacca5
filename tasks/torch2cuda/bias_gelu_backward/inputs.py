"""Input generator: x of (rows, cols) and a bias of (cols,)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    x = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    # The bias stays N(0, 1) under every distribution (never zeros).
    bias = taskkit.draw((cols,), dtype, "normal", gen, device)
    return {"x": x, "bias": bias}
