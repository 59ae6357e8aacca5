"""Input generator: x and z of (rows, cols), a per-column scale a and shift b of (cols,)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    x = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    # Scale and shift stay N(0, 1): the distribution is about the data, and neither may be ones
    # or zeros, or a kernel that skips them would pass.
    a = taskkit.draw((cols,), dtype, "normal", gen, device)
    b = taskkit.draw((cols,), dtype, "normal", gen, device)
    z = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    return {"x": x, "a": a, "b": b, "z": z}
