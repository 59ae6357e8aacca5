"""Input generator: x of (rows, cols), weight and bias of (cols,), eps."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    x = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    # Weight and bias stay N(0, 1) under every distribution (never ones or zeros).
    weight = taskkit.draw((cols,), dtype, "normal", gen, device)
    bias = taskkit.draw((cols,), dtype, "normal", gen, device)
    return {"x": x, "weight": weight, "bias": bias, "eps": float(config.get("eps", 1e-5))}
