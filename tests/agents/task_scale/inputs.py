import torch


def make_inputs(config: dict, seed: int, distribution: str, device: str = "cpu") -> dict:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(int(config["n"]), generator=gen, dtype=torch.float32)
    return {"x": x.to(device)}
