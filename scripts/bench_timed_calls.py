"""The host's cost of one timed call's exchange with the judge, without a GPU.

    python3 scripts/bench_timed_calls.py [--pairs 200] [--threads 1 3] [--busy 0 1 3]
        [--elements 16] [--samples 3] [--switch-ms 5]

Each judgment is the judge's real side (`timekeeper.follow`, in a thread of this process) and a
caller process that reports its calls with the worker's real code (`worker._report_call`) over
the workers' real channel (`tests/support/timed_caller.py`); a call itself takes no time. For
each `--threads` (judgments timing at once, each with its own caller) and `--busy` (threads of
this process running pure Python meanwhile, as another judgment's parsing or checks would), it
prints per call: the caller's wait for the go-ahead (`timing.pairs.report` on a GPU), and the
judge's own share of it (`timing.judge`). A thread of the judge waiting for the GIL behind a
busy one waits up to `sys.getswitchinterval()` at each system call it makes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from gauntlet.judge import protocol, timekeeper, workers

ROOT = Path(__file__).resolve().parents[1]


def _judgment(home: Path, pairs: int, elements: int, samples: int) -> tuple[float, float]:
    """One config's timed calls; per call, the caller's wait and the judge's share (seconds)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")]),
        "OMP_NUM_THREADS": "1",
    }
    handle = workers.WorkerHandle(
        "tests.support.timed_caller",
        env=env,
        cwd=home,
        args=("C1", str(pairs), "--elements", str(elements)),
    )

    def read(sampled: bool) -> tuple[protocol.Event, list[Any]]:
        header, tensors = handle.read(time.monotonic() + 120)
        return protocol.parse_event(header), tensors

    try:
        read(False)  # timing_start, once the caller has imported
        secret = frozenset(range(3, 3 + samples))
        followed = timekeeper.follow("C1", read, handle.send, secret, max_pairs=pairs)
        finished = handle.finish(grace_s=30)
    finally:
        handle.close()
    if finished.returncode != 0:
        raise RuntimeError(f"the caller failed: {finished.stderr[-2000:]}")
    report_s = float(json.loads(finished.stdout.splitlines()[-1])["report_s"])
    return report_s / followed.calls, followed.judge_s / followed.calls


def _busy(stop: threading.Event) -> None:
    """Pure Python, as a judge thread parsing frames or walking an AST would run."""
    while not stop.is_set():
        sum(i * i for i in range(2000))


def measure(threads: int, busy: int, pairs: int, elements: int, samples: int) -> str:
    """A markdown row: per call, the median over the judgments of each figure, in ms."""
    stop = threading.Event()
    burners = [threading.Thread(target=_busy, args=(stop,), daemon=True) for _ in range(busy)]
    results: list[tuple[float, float]] = []
    errors: list[BaseException] = []

    def one(index: int) -> None:
        with tempfile.TemporaryDirectory(prefix=f"timed-{index}-") as home:
            try:
                results.append(_judgment(Path(home), pairs, elements, samples))
            except BaseException as err:  # noqa: BLE001 - reported below, with the row
                errors.append(err)

    for burner in burners:
        burner.start()
    judges = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for judge in judges:
        judge.start()
    for judge in judges:
        judge.join()
    stop.set()
    for burner in burners:
        burner.join()
    if errors:
        raise RuntimeError(f"a judgment failed: {errors[0]}") from errors[0]
    wait_ms = statistics.median(r[0] for r in results) * 1e3
    judge_ms = statistics.median(r[1] for r in results) * 1e3
    return f"| {threads} | {busy} | {pairs * 2} | {wait_ms:.3f} | {judge_ms:.3f} |"


def main() -> int:
    # The judge has PyTorch imported long before it times (it reads tensors from its first
    # frames): imported here first, its seconds would land on the first sampled output.
    import torch  # noqa: F401

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1, 3])
    parser.add_argument("--elements", type=int, default=16, help="elements of each output")
    parser.add_argument("--samples", type=int, default=3, help="sampled calls per judgment")
    parser.add_argument(
        "--switch-ms", type=float, default=None, help="sys.setswitchinterval, in milliseconds"
    )
    args = parser.parse_args()
    if args.switch_ms is not None:
        sys.setswitchinterval(args.switch_ms / 1e3)
    print(
        f"switch interval {sys.getswitchinterval() * 1e3:g} ms, {os.cpu_count()} CPUs, "
        f"outputs of {args.elements} float32 elements, {args.samples} sampled"
    )
    print("| judgments at once | busy threads | calls each | caller's wait per call (ms) "
          "| judge's share per call (ms) |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: |", flush=True)
    for threads in args.threads:
        for busy in args.busy:
            print(measure(threads, busy, args.pairs, args.elements, args.samples), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
