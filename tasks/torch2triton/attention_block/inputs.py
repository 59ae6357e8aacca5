"""Input generator: x of (batch, seq, hidden), LayerNorm weight and bias, the fused QKV
projection (3 * hidden, hidden) with its bias, the output projection (hidden, hidden) with its
bias, and the head count. Projections are scaled by 1 / sqrt(hidden)."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    batch, seq, heads, dtype = config["batch"], config["seq"], config["heads"], config["dtype"]
    hidden = heads * config["head_dim"]
    x = taskkit.draw((batch, seq, hidden), dtype, distribution, gen, device)

    def weight(rows: int, cols: int):
        return taskkit.draw((rows, cols), dtype, distribution, gen, device, scale=cols**-0.5)

    return {
        "x": x,
        "ln_weight": taskkit.draw((hidden,), dtype, "normal", gen, device),
        "ln_bias": taskkit.draw((hidden,), dtype, "normal", gen, device),
        "w_qkv": weight(3 * hidden, hidden),
        "b_qkv": taskkit.draw((3 * hidden,), dtype, "normal", gen, device),
        "w_out": weight(hidden, hidden),
        "b_out": taskkit.draw((hidden,), dtype, "normal", gen, device),
        "heads": int(heads),
    }
