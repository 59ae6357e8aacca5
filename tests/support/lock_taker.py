"""A process taking a GPU's two-mode lock (`gauntlet/judge/devicelock.py`) for the lock's tests.

    python -m tests.support.lock_taker DEVICE PLAN [--rounds N] [--hold-s S] [--seed K] [--wait]

PLAN is the modes of one round, comma-separated: `shared`, `exclusive` (a holder outside any
judgment: no slot) or `shared,exclusive` (a judgment: its untimed work, then its timing, its
slot held throughout). Prints `asking` before its first request, then one JSON line per mode
held: `pid`, `mode`, `start` and `end` (`time.monotonic`, the host's clock, comparable across
processes) and `waited`. Each mode is held `--hold-s` seconds (drawn from 0 to that with
`--seed`), or with `--wait` until a line comes on stdin (the line `held` is printed first).
With `--go` it waits for a line on stdin before its first request (takers started one by one
then ask together).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

from gauntlet.judge import devicelock


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("plan")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--hold-s", type=float, default=0.0)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--go", action="store_true")
    args = parser.parse_args()
    modes = args.plan.split(",")
    rng = random.Random(args.seed) if args.seed is not None else None
    print("asking", flush=True)
    if args.go:
        sys.stdin.readline()
    for _ in range(args.rounds):
        with devicelock.Hold(args.device, slots=0 if modes == ["exclusive"] else 1) as hold:
            for mode in modes:
                waited = hold.shared() if mode == "shared" else hold.exclusive()
                start = time.monotonic()
                if args.wait:
                    print("held", flush=True)
                    sys.stdin.readline()
                else:
                    time.sleep(rng.uniform(0, args.hold_s) if rng else args.hold_s)
                end = time.monotonic()
                interval = {"pid": os.getpid(), "mode": mode, "start": start, "end": end}
                print(json.dumps({**interval, "waited": waited}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
