"""Input generator: expert_out of (tokens * topk, dim), a permutation index of (tokens, topk),
router weights of (tokens, topk)."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    tokens, topk, dim, dtype = config["tokens"], config["topk"], config["dim"], config["dtype"]
    expert_out = taskkit.draw((tokens * topk, dim), dtype, distribution, gen, device)
    # Every row of expert_out belongs to exactly one (token, choice): a random permutation.
    index = torch.randperm(tokens * topk, generator=gen).view(tokens, topk).to(device)
    # Router weights stay N(0, 1) under every distribution (never all ones).
    weights = taskkit.draw((tokens, topk), dtype, "normal", gen, device)
    return {"expert_out": expert_out, "index": index, "weights": weights}
