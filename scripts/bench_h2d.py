"""How fast the judge can move a host tensor onto its GPU, by way of moving it.

The judge's comparisons read outputs and references that crossed from the workers in memory
files (`channel.py`: sealed `memfd`s, mapped private) and move each onto the GPU before
widening it to float64 (`correctness._widened`). This times, for one frame-sized tensor:

- `heap`: `tensor.to(device)` from ordinary (pageable) memory;
- `mapped`: the same from a frame read off a socket (`channel.FrameReader`: a sealed memory
  file, mapped), as the workers' outputs and references arrive;
- `staged`: the mapped tensor through two pinned buffers in turn (`correctness.to_device`);
- `registered`: the mapping pinned in place (`cudaHostRegister`, read-only), then copied;
- `pinned`: from page-locked memory, the bus's own ceiling;

and `staged` again with `--threads` copies at once (judgments side by side). The other way,
a GPU tensor of the same size leaving a worker, the writer's seconds:

- `frame out`: written as a frame on a socket (`channel.write_frame`: staged through pinned
  memory, then written into a fresh memory file), as a worker sends outputs and references;
- `into existing pages`: the same copies into a memory file whose pages were allocated
  before the clock started (`posix_fallocate`);
- `pages allocated`: `posix_fallocate` of a fresh memory file of that size alone.

It prints a markdown table: seconds (median of `--repeats`) and GB/s.

    python scripts/bench_h2d.py --mib 512 --repeats 5 --threads 3
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import threading
import time
from collections.abc import Callable

import torch

from gauntlet.judge import correctness
from gauntlet.judge.channel import FrameReader, to_host, write_frame

_READ_ONLY_REGISTER = 8  # cudaHostRegisterReadOnly


def _mapped(data: torch.Tensor) -> torch.Tensor:
    """`data` as the judge receives it: a frame on a socket, its bytes in a memory file."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        write_frame(theirs.fileno(), {"event": "bench"}, [data])
        _, tensors = FrameReader(ours.fileno()).read(None)
    mapped: torch.Tensor = tensors[0]
    return mapped


def _frame_out(data: torch.Tensor) -> torch.Tensor:
    """Send `data` (on the GPU) as a frame on a socket; the reader never maps it."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        write_frame(theirs.fileno(), {"event": "bench"}, [data])
    return data


class _Prefaulted:
    """A memory file of `size` bytes whose pages exist; `fill` copies a GPU tensor into it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.memory = -1

    def allocate(self) -> None:
        if self.memory >= 0:
            os.close(self.memory)
        self.memory = os.memfd_create("bench-prefaulted")
        os.posix_fallocate(self.memory, 0, self.size)

    def fill(self, data: torch.Tensor) -> torch.Tensor:
        view = memoryview(to_host(data).reshape(-1).view(torch.uint8).numpy().data)
        position = 0
        while view:
            written = os.pwrite(self.memory, view, position)
            view, position = view[written:], position + written
        return data


def _allocated(size: int) -> torch.Tensor:
    memory = os.memfd_create("bench-fresh")
    try:
        os.posix_fallocate(memory, 0, size)
    finally:
        os.close(memory)
    return torch.empty(0)


def _timed(move: Callable[[], torch.Tensor], repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        move()
        torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def _registered(host: torch.Tensor, device: str) -> torch.Tensor:
    cudart = torch.cuda.cudart()
    size = host.numel() * host.element_size()
    code = cudart.cudaHostRegister(host.data_ptr(), size, _READ_ONLY_REGISTER)
    if int(code) != 0:
        raise RuntimeError(f"cudaHostRegister (read-only) failed: {code}")
    try:
        return host.to(device, non_blocking=True)
    finally:
        torch.cuda.synchronize()
        cudart.cudaHostUnregister(host.data_ptr())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=3)
    args = parser.parse_args()
    device = "cuda:0"
    torch.cuda.init()
    data = torch.randn(args.mib << 18, generator=torch.Generator().manual_seed(0))
    mapped = _mapped(data)
    pinned = data.pin_memory()
    size_gb = data.numel() * 4 / 1e9
    rows: list[tuple[str, float]] = [
        ("heap", _timed(lambda: data.to(device), args.repeats)),
        ("mapped", _timed(lambda: mapped.to(device), args.repeats)),
        ("staged", _timed(lambda: correctness.to_device(mapped, device), args.repeats)),
    ]
    try:
        rows.append(("registered", _timed(lambda: _registered(mapped, device), args.repeats)))
    except RuntimeError as err:
        print(f"registered: {err}")
    rows.append(("pinned", _timed(lambda: pinned.to(device), args.repeats)))
    copies = [_mapped(data) for _ in range(args.threads)]

    def together() -> torch.Tensor:
        threads = [
            threading.Thread(target=correctness.to_device, args=(copy, device)) for copy in copies
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return data

    together_s = _timed(together, args.repeats)
    on_gpu = data.to(device)
    rows.append(
        ("frame out (GPU to a fresh memory file)", _timed(lambda: _frame_out(on_gpu), args.repeats))
    )
    prefaulted = _Prefaulted(on_gpu.numel() * on_gpu.element_size())
    out_s = []
    for _ in range(args.repeats):
        prefaulted.allocate()
        out_s.append(_timed(lambda: prefaulted.fill(on_gpu), 1))
    rows.append(("into existing pages (GPU to a prefaulted file)", statistics.median(out_s)))
    rows.append(
        (
            "pages allocated (fallocate alone)",
            _timed(lambda: _allocated(prefaulted.size), args.repeats),
        )
    )
    assert torch.equal(correctness.to_device(mapped, device).cpu(), data)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.mib} MiB float32\n")
    print("| move | seconds | GB/s |\n| --- | --- | --- |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {size_gb / seconds:.1f} |")
    print(
        f"| staged, {args.threads} at once | {together_s:.3f} | "
        f"{args.threads * size_gb / together_s:.1f} |"
    )


if __name__ == "__main__":
    main()
