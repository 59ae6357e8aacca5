"""Which elements of a sampled timed call's outputs the judge checks.

A timed call's whole output crossing to the judge is a GPU-sized copy into fresh host pages
made while the judgment holds the GPU alone: 0.6-1.0 s a judgment of issue 22's search on an
H200, and 1.6 GB of the 2 GB of float64 references a KernelBench L1/1 judgment sent. So a
sampled call's check compares `ELEMENTS` elements of each output, not all of them:

- The judge's go-ahead after the call names a seed (secret until then, one per call). The
  candidate's worker gathers the elements at `positions(seed, ...)` on the device at once and
  sends them; the reference worker, trusted and told the seed in advance, sends the float64
  reference at the same positions and the baseline's error there.
- The positions are stratified: one uniformly random element in each of `ELEMENTS` equal
  slices of the flat output. An output wrong in a fraction f of its elements passes a check
  with probability at most (1 - f) ** ELEMENTS (at most that of independent draws, whatever
  the wrong elements' pattern): 4e-12 for f = 1e-4, and a config has three checks. A kernel
  that skips work when timed can so hide only a share of its work far below what timing
  resolves (1%).
- The bound is the baseline's error on the same elements times the task's margin, as a trial's
  is the baseline's on the same call: a handful of large elements then weighs alike on both.

Whole outputs still cross for tasks with a checker (it judges whole outputs) and wherever an
output holds at most `ELEMENTS` elements (`gather` returns it whole, flattened). The trials
stay full comparisons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

#: Elements checked per output of a sampled timed call: 2 MiB of float64 reference.
ELEMENTS = 1 << 18


def positions(
    seed: int, output: int, numel: int, count: int = ELEMENTS, device: str = "cpu"
) -> torch.Tensor | None:
    """Flat positions (int64, non-decreasing, on `device`) of output `output`; None: all.

    Slice k is [k, k + 1) x numel / count of the flat output read as a line, each element the
    unit interval it starts: every element is drawn with the same probability, count / numel.
    From a generator on `device` seeded by `seed` and `output` alone, so the workers of both
    roles, drawing on the judgment's device, find the same positions for the same seed and
    size. On the GPU being judged: on the host the draw took 5-6 ms a sampled call on an H200's
    host (8 ms on a busy 2-core machine), while the judgment held the GPU alone.
    """
    import torch

    if numel <= count:
        return None
    generator = torch.Generator(device=device).manual_seed((seed * 1_000_003 + output) % (1 << 63))
    drawn = torch.rand(count, generator=generator, dtype=torch.float64, device=device)
    drawn.add_(torch.arange(count, dtype=torch.float64, device=device)).mul_(numel / count)
    return drawn.long().clamp_(max=numel - 1)


def gather(
    tensor: torch.Tensor, seed: int, output: int, device: str, count: int = ELEMENTS
) -> torch.Tensor:
    """The elements of `tensor` that a check with `seed` compares, flat, where it lies.

    `device`: the judgment's (`protocol.WorkerRequest.device`), where the positions are drawn
    whatever device `tensor` is on.
    """
    flat = tensor.detach().reshape(-1)
    chosen = positions(seed, output, flat.numel(), count, device)
    return flat if chosen is None else flat[chosen.to(flat.device)]
