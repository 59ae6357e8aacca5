"""Input generator: A of (M, K) and B of (K, N)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    m, n, k, dtype = config["M"], config["N"], config["K"], config["dtype"]
    a = taskkit.draw((m, k), dtype, distribution, gen, device)
    b = taskkit.draw((k, n), dtype, distribution, gen, device)
    return {"a": a, "b": b}
