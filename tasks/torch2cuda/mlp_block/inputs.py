"""Input generator: activations x of (tokens, hidden), the norm weight, and the MLP's weights
w_gate, w_up of (ffn, hidden) and w_down of (hidden, ffn), scaled by 1 / sqrt(fan_in)."""

import torch

from gauntlet import taskkit


def _weight(shape: tuple[int, int], dtype: str, distribution: str, gen, device: str):
    return taskkit.draw(shape, dtype, distribution, gen, device, scale=shape[1] ** -0.5)


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, object]:
    gen = taskkit.generator(seed)
    tokens, hidden, ffn, dtype = config["tokens"], config["model_dim"], config["ffn"], config["dtype"]
    x = taskkit.draw((tokens, hidden), dtype, distribution, gen, device)
    norm_weight = taskkit.draw((hidden,), dtype, "normal", gen, device)
    return {
        "x": x,
        "norm_weight": norm_weight,
        "w_gate": _weight((ffn, hidden), dtype, distribution, gen, device),
        "w_up": _weight((ffn, hidden), dtype, distribution, gen, device),
        "w_down": _weight((hidden, ffn), dtype, distribution, gen, device),
        "eps": float(config.get("eps", 1e-6)),
    }
