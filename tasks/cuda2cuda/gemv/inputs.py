"""Input generator: a weight of (rows, cols) and a vector of (cols,).

The weight is scaled by 1 / sqrt(cols), as an initialized layer's is; under `scaled` (values
around 50) by 1 / cols, else the products' common offset would sum past float16's range.
"""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    scale = 1 / cols if distribution == "scaled" else cols**-0.5
    weight = taskkit.draw((rows, cols), dtype, distribution, gen, device, scale=scale)
    v = taskkit.draw((cols,), dtype, distribution, gen, device)
    return {"weight": weight, "v": v}
