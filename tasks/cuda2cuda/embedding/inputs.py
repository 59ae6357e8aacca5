"""Input generator: a (vocab, dim) table and (tokens,) int64 row indices into it."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    vocab, dim, tokens = config["vocab"], config["dim"], config["tokens"]
    table = taskkit.draw((vocab, dim), config["dtype"], distribution, gen, device)
    # Uniform over the whole table, repeats included (as token ids repeat in a batch): rows are
    # read in no order a kernel could rely on, and the last row is as likely as the first.
    index = taskkit.draw_int((tokens,), 0, vocab, gen, device)
    return {"table": table, "index": index}
