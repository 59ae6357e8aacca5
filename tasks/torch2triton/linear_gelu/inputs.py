"""Input generator: activations x of (M, K), a Linear weight of (N, K) and bias of (N,)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    m, n, k, dtype = config["M"], config["N"], config["K"], config["dtype"]
    x = taskkit.draw((m, k), dtype, distribution, gen, device)
    # Weights scaled by 1 / sqrt(K), as initialized layers are, so the pre-activations are of
    # order one and GELU's curved part is exercised.
    weight = taskkit.draw((n, k), dtype, distribution, gen, device, scale=k**-0.5)
    bias = taskkit.draw((n,), dtype, "normal", gen, device)
    return {"x": x, "weight": weight, "bias": bias}
