import torch


def make_inputs(config: dict, seed: int, distribution: str, device: str) -> dict:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, config["dtype"])
    n = config["n"]
    if distribution == "uniform":
        x, y = (torch.rand(n, generator=gen) * 2 - 1 for _ in range(2))
    else:
        x, y = (torch.randn(n, generator=gen) for _ in range(2))
    return {"x": x.to(dtype).to(device), "y": y.to(dtype).to(device), "alpha": 1.5}
