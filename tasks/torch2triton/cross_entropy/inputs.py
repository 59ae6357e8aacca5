"""Input generator: logits of (rows, classes) and int64 targets of (rows,) in [0, classes)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    rows, classes = config["rows"], config["classes"]
    logits = taskkit.draw((rows, classes), config["dtype"], distribution, gen, device)
    targets = taskkit.draw_int((rows,), 0, classes, gen, device)
    return {"logits": logits, "targets": targets}
