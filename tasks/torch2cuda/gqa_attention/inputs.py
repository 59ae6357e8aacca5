"""Input generator: q of (batch, kv_heads * group, seq, head_dim), k and v of
(batch, kv_heads, seq, head_dim), and the causal flag."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    batch, kv_heads, group = config["batch"], config["kv_heads"], config["group"]
    seq, dim, dtype = config["seq"], config["head_dim"], config["dtype"]
    q = taskkit.draw((batch, kv_heads * group, seq, dim), dtype, distribution, gen, device)
    k = taskkit.draw((batch, kv_heads, seq, dim), dtype, distribution, gen, device)
    v = taskkit.draw((batch, kv_heads, seq, dim), dtype, distribution, gen, device)
    return {"q": q, "k": k, "v": v, "causal": bool(config["causal"])}
