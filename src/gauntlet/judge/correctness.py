"""Comparing a candidate's outputs with the float64 reference, in the trusted orchestrator."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gauntlet.judge import protocol
from gauntlet.judge.overflow import rounds_to_infinity
from gauntlet.task import DEFAULT_MIN_REL_L2, Tolerance, ToleranceSpec

if TYPE_CHECKING:
    import torch


#: An element-wise tolerance that admits every finite value (rtol 0: inf x |0| would be NaN),
#: for checks held only to the relative L2 bound and the reference's NaN/Inf pattern.
ANY_FINITE = Tolerance(atol=math.inf, rtol=0.0)


@dataclass
class Comparison:
    """How one output tensor compares with its reference."""

    ok: bool
    reason: str
    max_abs_err: float
    max_rel_err: float
    rel_l2_err: float
    rel_l2_bound: float
    match_fraction: float
    moved_s: float = 0.0
    """Seconds spent moving the two tensors to the comparing device and widening them there
    (host-to-GPU copies of the outputs and references, for a GPU; the rest is the arithmetic)."""


def rel_l2_bound(spec: ToleranceSpec, dtype: str, baseline_rel_l2: float) -> float:
    """The relative L2 bound: margin x the baseline's error, floored, capped by the ceiling."""
    tol = tolerance_for(spec, dtype)
    floor = tol.min_rel_l2 if tol.min_rel_l2 is not None else DEFAULT_MIN_REL_L2.get(dtype, 1e-5)
    bound = max(floor, spec.margin * baseline_rel_l2) if math.isfinite(baseline_rel_l2) else floor
    return min(bound, tol.max_rel_l2) if tol.max_rel_l2 is not None else bound


#: How far past the trusted baseline's worst element a candidate's element may be.
BASELINE_SLACK = 2.0


def element_slack(baseline_max_abs: float) -> float:
    """The absolute slack every element of a trial gets: twice the baseline's worst error there.

    A fixed atol/rtol cannot follow the conditioning of the inputs: under `scaled` or `special`
    inputs a float32 reduction cancels, and the task's own baseline (or PyTorch itself) misses
    some elements by several tolerances. A candidate is held to no less than what the trusted
    code achieves on the very same inputs; the relative L2 bound still guards the overall
    precision.
    """
    return BASELINE_SLACK * baseline_max_abs if math.isfinite(baseline_max_abs) else 0.0


def tolerance_for(spec: ToleranceSpec, dtype: str) -> Tolerance:
    """The task's stated tolerance for a dtype (the loader guarantees every used dtype has one)."""
    return spec.dtypes[dtype]


#: Bytes of float64 temporaries the comparison holds per element of a chunk (about ten
#: float64 and six boolean arrays of the chunk's size).
COMPARE_BYTES_PER_ELEMENT = 96
#: Elements compared at once on the host: fewer than PyTorch's grain size (32,768), so that
#: every operation runs on the calling thread. The host's cores are the workers'; and under
#: load an intra-op parallel region waits for all its threads to be scheduled: 4M elements
#: compared in chunks of 2^16 took 8.5 s with PyTorch's two threads on this busy 2-core
#: machine, 0.35 s with one. Small chunks also let the allocator reuse the temporaries'
#: memory: at 2^24 each one was a fresh mapping whose pages all faulted in (210 bytes per
#: element, more system time than arithmetic; two 4M comparisons 4-5.5 s, 1.4-1.8 CPU s); at
#: 2^14, 2 bytes (1.0-1.7 s, 0.5 CPU s). PyTorch's microseconds per operation are about a
#: tenth of a chunk's time (2026-11-27).
HOST_CHUNK_ELEMENTS = 1 << 14
#: Share of the GPU's free memory the comparison's temporaries may take.
DEVICE_MEMORY_SHARE = 0.5
#: Elements compared at once on a GPU at most: 6 GiB of temporaries, whose arithmetic takes
#: milliseconds. The judge's process shares the GPU with its workers, and PyTorch's allocator
#: keeps what a comparison took: half the free memory (38 GiB at KernelBench's softmax on an
#: H200) stayed with the judge and ran the next judgment's reference worker out of memory.
DEVICE_CHUNK_ELEMENTS = 1 << 26
#: A comparison whose temporaries took at least this much returns them to the GPU when done.
RELEASE_BYTES = 2 << 30


def compare(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    tol: Tolerance,
    l2_bound: float,
    what: str,
    device: str = "cpu",
    *,
    slack: float = 0.0,
    chunk_elements: int | None = None,
) -> Comparison:
    """Element-wise atol/rtol check plus the relative L2 bound, all in float64, on `device`.

    GPU-sized outputs are compared on the GPU being judged: on the host, the float64
    temporaries of a 10^8-element output cost seconds per trial. They are compared in chunks
    (`chunk_elements`, else sized to the free memory: a 4096 x 393216 float32 output, as in
    KernelBench's softmax, ran an 80 GB GPU out of memory whole), with the same result as at
    once. `slack` widens every element's tolerance (`element_slack`). An exact value beyond
    the output dtype's range may come back as the infinity it rounds to, or as a finite value
    within the tolerance.
    """
    flat_cand = candidate.reshape(-1)
    flat_ref = reference.reshape(-1)
    total = flat_ref.numel()
    step = chunk_elements or elements_per_chunk(device, total)
    tally = _Tally()
    for start in range(0, max(total, 1), max(step, 1)):
        _compare_chunk(
            flat_cand[start : start + step],
            flat_ref[start : start + step],
            candidate.dtype,
            tol,
            slack,
            device,
            start,
            tally,
        )
    if step * COMPARE_BYTES_PER_ELEMENT >= RELEASE_BYTES:
        release_cached(device)
    match_fraction = tally.within / max(total, 1)
    num, denom = tally.err_norm, tally.ref_norm
    rel_l2 = (num / denom if denom > 0 else num) if math.isfinite(num) else math.inf
    reason = ""
    if tally.first_bad is not None:
        bad, expected, found = tally.first_bad
        index = tuple(int(i) for i in _unravel(bad, tuple(reference.shape)))
        kind = "non-finite value" if not math.isfinite(found) else "mismatch"
        wrong = max(total, 1) - tally.within
        reason = (
            f"{what}: {kind} at index {list(index)}: expected {expected:.6g}, found {found:.6g} "
            f"(atol {tol.atol:g}, rtol {tol.rtol:g}{f', slack {slack:.3g}' if slack else ''}); "
            f"{wrong} of {max(total, 1)} elements wrong"
        )
    elif rel_l2 > l2_bound:
        reason = (
            f"{what}: relative L2 error {rel_l2:.3g} is above the bound {l2_bound:.3g} "
            "(the baseline's own error times the task's margin): lower precision than allowed?"
        )
    return Comparison(
        not reason,
        reason,
        tally.max_abs,
        tally.max_rel,
        rel_l2,
        l2_bound,
        match_fraction,
        tally.moved_s,
    )


@dataclass
class _Tally:
    """What the chunks of a comparison add up to."""

    within: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    ref_norm: float = 0.0
    err_norm: float = 0.0
    """L2 norms so far, combined chunk by chunk with `math.hypot` (no overflow of squares)."""
    first_bad: tuple[int, float, float] | None = None
    """The first wrong element: its flat index, expected and found values."""
    moved_s: float = 0.0
    """Seconds in `_widened` (`Comparison.moved_s`)."""


def elements_per_chunk(device: str, total: int) -> int:
    """How many elements to compare at once: all when they fit, else what the memory allows."""
    import torch

    if device.startswith(("cuda", "rocm")) and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        fits = int(free * DEVICE_MEMORY_SHARE) // COMPARE_BYTES_PER_ELEMENT
        return max(1 << 20, min(total, fits, DEVICE_CHUNK_ELEMENTS))
    return min(max(total, 1), HOST_CHUNK_ELEMENTS)


def release_cached(device: str) -> None:
    """Give the blocks PyTorch's allocator keeps on a GPU back to it, for the other processes.

    Only unused blocks go: tensors other threads hold stay.
    """
    import torch

    if device.startswith(("cuda", "rocm")) and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        torch.cuda.empty_cache()


def _compare_chunk(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    dtype: torch.dtype,
    tol: Tolerance,
    slack: float,
    device: str,
    offset: int,
    tally: _Tally,
) -> None:
    import torch

    moving = time.perf_counter()
    cand = _widened(candidate, device)
    ref = _widened(reference, device)
    if device.startswith(("cuda", "rocm")):
        # The copies and widening are queued: wait for them, or they count as arithmetic.
        torch.cuda.synchronize(device)
    tally.moved_s += time.perf_counter() - moving
    ref_finite = torch.isfinite(ref)
    cand_finite = torch.isfinite(cand)
    overflow = rounds_to_infinity(ref, dtype)
    # Non-finite values must match exactly where the reference has them; NaN or Inf anywhere
    # else is wrong whatever the tolerance.
    same_special = (~ref_finite) & ((cand.isnan() & ref.isnan()) | (cand == ref))
    diff = (cand - ref).abs()
    allowed = tol.atol + tol.rtol * ref.abs() + slack
    within = torch.where(ref_finite, cand_finite & (diff <= allowed), same_special)
    within |= overflow & (cand == ref.sign() * math.inf)
    # Overflowing elements are judged above; in the norms an infinity would drown the rest.
    ref_finite &= ~overflow
    tally.within += int(within.sum())
    finite_both = ref_finite & cand_finite
    if bool(finite_both.any()):
        # Masked with `where`, not selected (`diff[finite_both]`): errors are never negative, so
        # zero stands in for the elements left out, and a boolean selection runs in parallel
        # whatever its size, stalling for tens of milliseconds where the cores are busy.
        tally.max_abs = max(tally.max_abs, float(torch.where(finite_both, diff, 0.0).max()))
        rel = diff / ref.abs().clamp_min(1e-30)
        tally.max_rel = max(tally.max_rel, float(torch.where(finite_both, rel, 0.0).max()))
    ref_f = torch.where(ref_finite, ref, torch.zeros_like(ref))
    cand_f = torch.where(ref_finite, cand, torch.zeros_like(cand))
    tally.ref_norm = math.hypot(tally.ref_norm, float(torch.linalg.vector_norm(ref_f)))
    tally.err_norm = math.hypot(tally.err_norm, float(torch.linalg.vector_norm(cand_f - ref_f)))
    if tally.first_bad is None and within.numel() and not bool(within.all()):
        bad = int((~within).nonzero()[0].item())
        tally.first_bad = (offset + bad, float(ref[bad]), float(cand[bad]))


def _widened(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """`tensor` in float64 on `device`: moved in its own dtype, then widened there.

    Not `tensor.to(device=device, dtype=torch.float64)`: PyTorch converts a host tensor's dtype
    on the host before copying it to a GPU, so a float32 output crossed as twice its bytes (a
    half-precision one as four times) after a parallel conversion loop on the busy host.
    """
    import torch

    return to_device(tensor, device).to(torch.float64)


#: Host tensors of at least this many bytes reach a GPU through pinned buffers (`to_device`).
STAGED_MIN_BYTES = 8 << 20
#: The size of each of the two pinned buffers a staged move fills in turn.
STAGE_BYTES = 32 << 20


def to_device(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """`tensor` on `device`; a large host tensor goes to a GPU through two pinned buffers.

    The outputs and references the judge compares are views of mapped memory files
    (`channel.py`), and a copy from such pageable memory goes through the driver's own small
    staging at a fraction of the bus's speed. Here the host fills one pinned buffer while the
    other's chunk crosses (`scripts/bench_h2d.py` measures the difference). The buffers come
    from PyTorch's caching host allocator, which reuses a block only once its copy is done.
    """
    import torch

    size = tensor.nbytes
    if tensor.device.type != "cpu" or not device.startswith("cuda") or size < STAGED_MIN_BYTES:
        return tensor.to(device)
    source = tensor.contiguous().reshape(-1).view(torch.uint8)
    moved = torch.empty(size, dtype=torch.uint8, device=device)
    stream = torch.cuda.current_stream(device)
    stages = [torch.empty(STAGE_BYTES, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
    crossed: list[torch.cuda.Event | None] = [None, None]
    for index, start in enumerate(range(0, size, STAGE_BYTES)):
        end = min(size, start + STAGE_BYTES)
        slot = index % 2
        previous = crossed[slot]
        if previous is not None:
            previous.synchronize()  # the buffer's last chunk has crossed: it may be refilled
        stage = stages[slot][: end - start]
        stage.copy_(source[start:end])
        moved[start:end].copy_(stage, non_blocking=True)
        crossed[slot] = stream.record_event()
    stream.synchronize()
    return moved.view(tensor.dtype).reshape(tensor.shape)


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for dim in reversed(shape):
        index.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return list(reversed(index))


def check_meta(
    expected: protocol.OutputInfo, found: protocol.OutputInfo, device: str, *, values: bool = True
) -> str | None:
    """Compare the output's container and each item's type, dtype, shape, device, layout.

    `values=False` (a task whose checker decides the values): dtype and shape are the
    checker's to judge too (GPU MODE compares a float32 output with a float64 reference).
    """
    if expected.container != found.container and not (
        expected.container in ("tuple", "list") and found.container in ("tuple", "list")
    ):
        want = "a single tensor" if expected.container is None else "a tuple of tensors"
        got = found.container or (found.items[0].type if found.items else "nothing")
        return f"expected {want}, got {got}"
    if len(expected.items) != len(found.items):
        return f"expected {len(expected.items)} outputs, got {len(found.items)}"
    device_kind = device.split(":")[0]
    for i, (want_item, got_item) in enumerate(zip(expected.items, found.items, strict=True)):
        label = f"output {i}" if len(expected.items) > 1 else "output"
        if not got_item.exact:
            return (
                f"{label} is a {got_item.type}, not a plain torch.Tensor "
                "(subclasses and lazy wrappers are not accepted)"
            )
        for key in ("dtype", "shape", "layout") if values else ("layout",):
            wanted, got_value = getattr(want_item, key), getattr(got_item, key)
            if wanted != got_value:
                return f"{label} has {key} {got_value}, expected {wanted}"
        if got_item.device != device_kind:
            return f"{label} is on device {got_item.device}, expected {device_kind}"
    return None


#: How many times the reference's elements an output may hold and still go to a task's checker
#: (a float64 answer to a float16 reference holds the same elements; anything far larger is
#: no answer, and would only load the trusted worker that runs the checker).
CHECKED_ELEMENTS_FACTOR = 4
#: Elements any output may hold whatever the reference's size (tiny references).
CHECKED_ELEMENTS_SLACK = 4096


def unchecked_output(
    candidate: torch.Tensor, reference: torch.Tensor, what: str, device: str = "cpu"
) -> str | None:
    """Why an output judged by a task's checker is wrong before the checker sees it, if it is.

    The checker decides values, dtypes and shapes, but two things are never right whatever it
    says: an output far larger than the reference's (`CHECKED_ELEMENTS_FACTOR`), and NaN or Inf
    where the reference has none. Element by element when the shapes agree (an exact value past
    the output dtype's range may be its infinity); otherwise any NaN or Inf at all when the
    reference is finite everywhere and nothing in it overflows the output's dtype. A checker
    written as `(out - ref).abs() > tol` says yes to NaN.
    """
    import torch

    limit = CHECKED_ELEMENTS_FACTOR * reference.numel() + CHECKED_ELEMENTS_SLACK
    if candidate.numel() > limit:
        return (
            f"{what} holds {candidate.numel()} elements, the reference's {reference.numel()}: "
            "not an answer (nothing that large is passed to the task's checker)"
        )
    if not (candidate.is_floating_point() and reference.is_floating_point()):
        return None
    cand = to_device(candidate, device)
    stray = ~torch.isfinite(cand)
    if not bool(stray.any()):
        return None
    ref = _widened(reference, device)
    overflow = rounds_to_infinity(ref, candidate.dtype)
    if tuple(cand.shape) == tuple(ref.shape):
        stray &= torch.isfinite(ref) & ~overflow
    elif not bool(torch.isfinite(ref).all()) or bool(overflow.any()):
        return None
    if not bool(stray.any()):
        return None
    index = int(stray.reshape(-1).nonzero()[0].item())
    found = float(cand.reshape(-1)[index])
    return (
        f"{what}: non-finite value {found} at flat index {index} where the reference is finite "
        f"({int(stray.sum())} of {cand.numel()} elements)"
    )
