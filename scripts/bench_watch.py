"""What the candidate worker's watch costs per judged call (`worker._Watch`), on one device.

    python3 scripts/bench_watch.py --device cuda:0

Every call the judge checks runs under the watch: a dispatch mode and the profiler (Kineto,
with CUDA activity on a GPU, so that the orchestrator can attribute kernels). This times a
small call plain and watched, the first watched call of a fresh process apart (where the
profiler and CUPTI start), and the worker's trusted imports, so that the fixed cost of a
judgment can be told from the cost of its checks.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    kind = args.device.split(":")[0]

    started = time.perf_counter()
    from gauntlet.judge import worker

    worker._import_trusted(kind, ahead=True)
    imports = time.perf_counter() - started
    import torch

    x = torch.randn(1024, 1024, device=args.device)
    started = time.perf_counter()
    torch.softmax(x, -1)
    if kind == "cuda":
        torch.cuda.synchronize()
    first_plain = time.perf_counter() - started

    def once(watched: bool) -> float:
        begun = time.perf_counter()
        if watched:
            with worker._Watch(frozenset(), kernels=kind == "cuda"):
                torch.softmax(x, -1)
                if kind == "cuda":
                    torch.cuda.synchronize()
        else:
            torch.softmax(x, -1)
            if kind == "cuda":
                torch.cuda.synchronize()
        return time.perf_counter() - begun

    first_watched = once(True)
    plain = [once(False) for _ in range(args.calls)]
    watched = [once(True) for _ in range(args.calls)]
    print(f"device {args.device}, torch {torch.__version__}")
    print(f"trusted imports (with the watch's warm-up): {imports:.2f} s")
    print(f"first call, plain (CUDA start-up on a GPU): {first_plain * 1e3:.1f} ms")
    print(f"first watched call: {first_watched * 1e3:.1f} ms")
    print(f"plain call, median of {args.calls}: {statistics.median(plain) * 1e3:.2f} ms")
    print(f"watched call, median of {args.calls}: {statistics.median(watched) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
