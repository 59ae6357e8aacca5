"""Input generator: x and residual of (rows, cols), weight and bias of (cols,), eps."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    rows, cols, dtype = config["rows"], config["cols"], config["dtype"]
    x = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    residual = taskkit.draw((rows, cols), dtype, distribution, gen, device)
    # Weight and bias stay N(0, 1) under every distribution: neither may be ones or zeros, or a
    # kernel that skips them would pass.
    weight = taskkit.draw((cols,), dtype, "normal", gen, device)
    bias = taskkit.draw((cols,), dtype, "normal", gen, device)
    return {
        "x": x, "residual": residual, "weight": weight, "bias": bias,
        "eps": float(config.get("eps", 1e-5)),
    }
