"""Input generator: an NCHW batch x, per-channel weight and bias, the group count and eps."""

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    dtype, channels = config["dtype"], config["channels"]
    x = taskkit.draw(
        (config["batch"], channels, config["height"], config["width"]),
        dtype, distribution, gen, device,
    )
    # Weight and bias stay N(0, 1) under every distribution (never ones or zeros).
    weight = taskkit.draw((channels,), dtype, "normal", gen, device)
    bias = taskkit.draw((channels,), dtype, "normal", gen, device)
    return {
        "x": x, "weight": weight, "bias": bias,
        "groups": int(config["groups"]), "eps": float(config.get("eps", 1e-5)),
    }
