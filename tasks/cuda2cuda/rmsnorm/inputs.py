"""Input generator: x of (rows, cols), a weight of (cols,) and eps."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    x = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    # The weight stays N(0, 1) under every distribution (never ones).
    weight = taskkit.draw((cols,), dtype, "normal", gen, device)
    return {"x": x, "weight": weight, "eps": float(config.get("eps", 1e-6))}
