"""The candidate worker's side of a config's timed calls, without a GPU, for the timekeeper.

    python -m tests.support.timed_caller COMMAND_FD RESULT_FD CONFIG PAIRS
        [--elements N] [--call-us US] [--wrong-role-at PAIR] [--file-bytes N]

Speaks the real protocol through the real code: after `TimingStart`, PAIRS pairs of calls in
`timing.measure`'s order, each reported with `worker._report_call` (which sends the call's
output when the judge asks for it), then a `Timed` frame. A call is a busy wait of `--call-us`
microseconds (standing in for the GPU's time) returning a float64 tensor of `--elements`
elements, element i holding pair x elements + i. `--wrong-role-at PAIR` reports that pair's
first call under the other role (a breach). `--file-bytes N` caps the size of a file it may make
(`RLIMIT_FSIZE`), as a candidate's is (`worker._bound_memory_files`): a larger output then goes
in several memory files, or inline through the socket under a limit of less than a page
(`channel.write_frame`). Prints one
JSON line at the end: `report_s`, the seconds the calls waited for the judge's go-ahead
(`timing.measure`'s `pairs.report`), `sent`, the seconds spent sending sampled outputs by step
(`pairs.sample.*`), and `sampled`, the pairs whose output the judge asked for.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch

from gauntlet.judge import protocol, timing, worker
from gauntlet.judge.channel import FrameReader, write_frame


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command_fd", type=int)
    parser.add_argument("result_fd", type=int)
    parser.add_argument("config")
    parser.add_argument("pairs", type=int)
    parser.add_argument("--elements", type=int, default=16)
    parser.add_argument("--call-us", type=float, default=0.0)
    parser.add_argument("--wrong-role-at", type=int, default=-1)
    parser.add_argument("--file-bytes", type=int, default=0)
    args = parser.parse_args()
    if args.file_bytes:
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.file_bytes, args.file_bytes))
    commands = FrameReader(args.command_fd)
    fd = args.result_fd
    write_frame(fd, protocol.TimingStart(event="timing_start", config=args.config).model_dump())
    report_s = 0.0
    steps: dict[str, float] = {}
    sampled = []
    out = torch.empty(args.elements, dtype=torch.float64)
    for pair in range(args.pairs):
        for step, role in enumerate(timing.pair_order(pair)):
            until = time.perf_counter() + args.call_us / 1e6
            while time.perf_counter() < until:
                pass
            torch.arange(args.elements, out=out).add_(pair * args.elements)
            if pair == args.wrong_role_at and step == 0:
                role = timing.pair_order(pair)[1]
            started = time.perf_counter()
            sent = worker._report_call(fd, commands, role, pair, out, False, "cpu")
            report_s += time.perf_counter() - started - timing.sent_seconds(sent)
            for step, seconds in sent.items():
                steps[step] = steps.get(step, 0.0) + seconds
            if sent:
                sampled.append(pair)
    times = [args.call_us] * args.pairs
    summary = protocol.TimingSummary(
        baseline=args.call_us,
        candidate=args.call_us,
        baseline_iqr=0.0,
        candidate_iqr=0.0,
        speedup=1.0,
        speedup_ci=(1.0, 1.0),
        count=args.pairs,
        baseline_us=times,
        candidate_us=times,
        host_us=0.0,
        event_us=0.0,
        launch_overhead_us=0.0,
        problem="",
        kernels=[],
        compiled=None,
        spin_us=0.0,
        compiled_note="",
        phases={"pairs.report": report_s, **{f"pairs.sample.{k}": v for k, v in steps.items()}},
    )
    timed = protocol.Timed(event="timed", config=args.config, summary=summary, clocks={})
    write_frame(fd, timed.model_dump())
    print(json.dumps({"report_s": report_s, "sent": steps, "sampled": sampled}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
