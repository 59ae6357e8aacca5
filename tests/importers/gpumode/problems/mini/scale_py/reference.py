import torch
from task import input_t, output_t
from utils import DeterministicContext as Deterministic
from utils import make_match_reference


def ref_kernel(data: input_t) -> output_t:
    with Deterministic():
        x, scale, out = data
        out[...] = x * scale
        return out


def generate_input(size: int, seed: int) -> input_t:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(size, device=device, generator=gen).contiguous()
    # Made empty, then filled: an input, not a buffer to fill.
    scale = torch.empty(size, device=device)
    scale.uniform_(0.5, 2.0, generator=gen)
    out = torch.empty(size, device=device).contiguous()
    return x, scale, out


check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-6)
