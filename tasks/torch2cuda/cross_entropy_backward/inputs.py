"""Input generator: logits of (rows, vocab) and int64 targets of (rows,) in [0, vocab)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    rows, vocab = config["rows"], config["vocab"]
    logits = taskkit.draw((rows, vocab), config["dtype"], distribution, gen, device)
    targets = taskkit.draw_int((rows,), 0, vocab, gen, device)
    return {"logits": logits, "targets": targets}
