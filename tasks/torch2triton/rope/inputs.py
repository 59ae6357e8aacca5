"""Input generator: q and k in (batch, seq, heads, head_dim) layout, and the cos/sin tables of
the rotary embedding for `seq` consecutive positions starting at a random offset."""

import torch

from gauntlet import taskkit


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict[str, torch.Tensor]:
    gen = taskkit.generator(seed)
    batch, seq, dim, dtype = config["batch"], config["seq"], config["head_dim"], config["dtype"]
    q = taskkit.draw((batch, seq, config["q_heads"], dim), dtype, distribution, gen, device)
    k = taskkit.draw((batch, seq, config["kv_heads"], dim), dtype, distribution, gen, device)
    # The tables of a model with base 10000, for positions start .. start + seq - 1 (a decode or
    # chunked-prefill position), computed in float64 and given in float32.
    start = int(torch.randint(0, 100_000, (), generator=gen))
    positions = torch.arange(start, start + seq, dtype=torch.float64)
    inv_freq = 10000.0 ** (-torch.arange(0, dim // 2, dtype=torch.float64) * 2 / dim)
    angles = positions[:, None] * inv_freq[None, :]
    cos = angles.cos().to(torch.float32).contiguous().to(device)
    sin = angles.sin().to(torch.float32).contiguous().to(device)
    return {"q": q, "k": k, "cos": cos, "sin": sin}
