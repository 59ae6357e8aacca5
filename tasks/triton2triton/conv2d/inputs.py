"""Input generator: an NHWC image batch and a (cout, kernel, kernel, cin) filter bank."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    dtype, k = config["dtype"], config["kernel"]
    x = taskkit.draw(
        (config["batch"], config["height"], config["width"], config["cin"]),
        dtype, distribution, gen, device,
    )
    weight = taskkit.draw((config["cout"], k, k, config["cin"]), dtype, distribution, gen, device)
    return {"x": x, "weight": weight}
