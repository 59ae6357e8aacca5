"""Reference: the SwiGLU activation of a gated MLP, y = silu(gate) * up."""

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    # x holds [gate | up] side by side in its last dimension (the fused gate/up projection).
    compute = torch.promote_types(x.dtype, torch.float32)
    gate, up = x.to(compute).chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate) * up).to(x.dtype)
