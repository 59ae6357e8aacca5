"""How fast a large frame crosses the judge's result channel, by the way it goes.

    python scripts/bench_channel.py [--mib 512] [--limit-mib 32] [--repeats 3]

A real writer process sends one frame of `--mib` MiB (a float32 array) over a Unix socket
pair: `file` (no file-size limit: one memory file, or from 64 MiB one a filling thread, made
side by side, `channel.PARALLEL_FILL_BYTES`), `parts` (a file-size limit of
`--limit-mib`: memory files of that size, as a candidate's per-file share,
`worker._bound_memory_files`) and `inline` (a limit under a page: no memory file, the bytes
on the socket). Prints, per way and run, the writer's seconds and CPU seconds in
`write_frame`, and the reader's seconds and CPU seconds to read the frame and to read every
byte of it once (a mapped frame's pages are faulted in then, as a comparison would).
"""

from __future__ import annotations

import argparse
import resource
import socket
import subprocess
import sys
import time

import numpy as np

from gauntlet.judge.channel import FrameReader

_WRITER = """
import json, resource, sys, time
import numpy as np
from gauntlet.judge.channel import write_frame
fd, limit, mib = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
data = np.ones(mib << 18, dtype=np.float32)
write_frame(fd, {"event": "ready"})
usage, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
path = write_frame(fd, {"event": "frame"}, [data])
seconds, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
print(json.dumps({"path": path, "write_s": seconds, "write_cpu_s": cpu}))
"""

WAYS = ("file", "parts", "inline")


def _file_limit(way: str, limit: int) -> int:
    """The writer's file-size limit that sends its frame `way` (0: none)."""
    return {"file": 0, "parts": limit, "inline": 1000}[way]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(way: str, mib: int, limit: int) -> str:
    """One frame sent the given way; a line of its figures."""
    ours, theirs = socket.socketpair()
    arguments = [str(theirs.fileno()), str(_file_limit(way, limit)), str(mib)]
    writer = subprocess.Popen(  # noqa: TID251 - a benchmark's child, timed from inside
        [sys.executable, "-c", _WRITER, *arguments],
        pass_fds=(theirs.fileno(),),
        stdout=subprocess.PIPE,
        text=True,
    )
    theirs.close()
    reader = FrameReader(ours.fileno())
    reader.read(time.monotonic() + 60)
    cpu, started = _cpu_s(), time.perf_counter()
    _, arrays = reader.read(time.monotonic() + 600)
    read_s, read_cpu_s = time.perf_counter() - started, _cpu_s() - cpu
    np.bitwise_xor.reduce(arrays[0].view(np.uint64))
    touched_s, touched_cpu_s = time.perf_counter() - started, _cpu_s() - cpu
    out, _ = writer.communicate(timeout=600)
    reader.close()
    ours.close()
    return (
        f"{way:<6} {out.strip()} read_s {read_s:.3f} read_cpu_s {read_cpu_s:.3f} "
        f"read_and_touched_s {touched_s:.3f} read_and_touched_cpu_s {touched_cpu_s:.3f}"
    )


def main() -> None:
    """Each way, `--repeats` times in turn."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--limit-mib", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.repeats):
        for way in WAYS:
            print(measure(way, args.mib, args.limit_mib << 20), flush=True)


if __name__ == "__main__":
    main()
