"""Input generator: q, k, v of (batch, heads, seq, head_dim) and the causal flag."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    shape = (config["batch"], config["heads"], config["seq"], config["head_dim"])
    dtype = config["dtype"]
    q = taskkit.draw(shape, dtype, distribution, gen, device)
    k = taskkit.draw(shape, dtype, distribution, gen, device)
    v = taskkit.draw(shape, dtype, distribution, gen, device)
    return {"q": q, "k": k, "v": v, "causal": bool(config["causal"])}
