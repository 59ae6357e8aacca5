"""Reference: a GPT-style causal self-attention block with its pre-norm and residual connection.

h = layer_norm(x); q, k, v = split(h @ w_qkv^T + b_qkv) into heads; o = causal softmax attention;
out = x + merge_heads(o) @ w_out^T + b_out. Written as an eager PyTorch model runs it: in the
inputs' dtype (cuBLAS accumulates in float32; layer_norm and the softmax compute in float32).
With float64 inputs every step is float64 (the judge's ground truth).
"""

import torch


def reference(
    x: torch.Tensor,
    ln_weight: torch.Tensor,
    ln_bias: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_out: torch.Tensor,
    b_out: torch.Tensor,
    heads: int,
) -> torch.Tensor:
    batch, seq, hidden = x.shape
    head_dim = hidden // heads
    h = torch.nn.functional.layer_norm(x, (hidden,), ln_weight, ln_bias, 1e-5)
    qkv = torch.nn.functional.linear(h, w_qkv, b_qkv)
    qkv = qkv.view(batch, seq, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # (batch, heads, seq, head_dim)
    scores = (q @ k.transpose(-1, -2)) * head_dim**-0.5
    above = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
    scores = scores.masked_fill(above, float("-inf"))
    compute = torch.promote_types(scores.dtype, torch.float32)
    probs = torch.softmax(scores.to(compute), dim=-1).to(x.dtype)
    o = (probs @ v).transpose(1, 2).reshape(batch, seq, hidden)
    return x + torch.nn.functional.linear(o, w_out, b_out)
