"""KernelBench import coverage: every problem of the chosen levels imported, and counted.

    python3 scripts/kb_import_coverage.py --kernelbench KB --levels 3 --out out/kb-coverage \\
        --max-mb 16 --max-gflop 0.5 --jobs 2

Imports the problems with `gauntlet.importers.kernelbench` (the same code as `gauntlet import
kernelbench`, torch2triton track), one problem per worker thread, each probe in its child
process with its limit of CPU seconds (`--probe-cpu-s`). Every problem's outcome is appended to
`OUT/problems.jsonl` as it ends, with its wall seconds and the load average, so a run stopped
early still counts what it did; a rerun skips the problems already there (`--fresh` starts
over). `--summary` (also done at the end of a run) writes `OUT/coverage.json` and
`OUT/coverage.md`: per level imported, rewritten and refused, the refusals by class
(`REFUSAL_CLASSES`), and the code's commit, the KernelBench commit, the machine and the dates.

Run it niced on a shared host (`nice -n 10`): the probes' float64 work is what takes the time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gauntlet.importers.kernelbench import ImportOptions, import_problem, problem_files

#: How a refusal's reason is classed, first match wins: (class, pattern, whose fault).
#: "host": the machine or the run's caps, not the problem; "problem": the problem as published.
REFUSAL_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("probe time-out", r"ran past \d+", "host"),
    ("probe failed", r"^the probe \(\w+\) (failed|wrote no valid)", "importer"),
    ("above the caps", r"^does not fit ", "host"),
    ("not on the meta device", r"^does not run on the meta device", "importer"),
    ("degenerate", r"^(degenerate|still degenerate)", "problem"),
    ("random state in forward", r"not deterministic", "problem"),
    ("task checks fail", r"^task checks fail", "importer"),
    ("module not installed", r"not installed", "host"),
    ("format", r".", "problem"),
)


def refusal_class(reason: str) -> tuple[str, str]:
    """The class of a refusal's reason and whose it is."""
    for name, pattern, whose in REFUSAL_CLASSES:
        if re.search(pattern, reason):
            return name, whose
    raise AssertionError("the last class matches everything")


def _git(folder: Path, *args: str) -> str:
    try:
        found = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return found.stdout.strip()


def code_commit() -> str:
    """The commit of the gauntlet package that runs ('-dirty' when its src/ differs)."""
    import gauntlet

    given = os.environ.get("KB_COVERAGE_COMMIT")  # an exported tree (git archive) has no .git
    if given:
        return given
    root = Path(gauntlet.__file__).resolve().parents[2]
    commit = _git(root, "rev-parse", "--short=9", "HEAD")
    return commit + ("-dirty" if _git(root, "status", "--porcelain", "src") else "")


def machine() -> dict[str, Any]:
    """The host: CPU model, cores, memory, and the versions that decide the outcome."""
    import torch

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(pages / 2**30, 1),
            "python": platform.python_version(), "torch": torch.__version__,
            "kernel": platform.release()}  # fmt: skip


def run(args: argparse.Namespace) -> None:
    """Import every problem not yet in OUT/problems.jsonl, appending each as it ends."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    log = out / "problems.jsonl"
    if args.fresh and log.exists():
        log.unlink()
    done = (
        {json.loads(line)["problem"] for line in log.read_text().splitlines()}
        if log.exists()
        else set()
    )
    options = ImportOptions(
        levels=args.levels, ids=args.ids, track="torch2triton", id_prefix="kb",
        max_bytes=int(args.max_mb * 2**20), max_flops=args.max_gflop * 1e9,
        cpu_limit_s=args.probe_cpu_s, jobs=args.jobs,
    )  # fmt: skip
    files = [
        (level, path)
        for level, path in problem_files(args.kernelbench, options.levels, options.ids)
        if f"level{level}/{path.name}" not in done
    ]
    commit = code_commit()
    tasks = out / "tasks"

    def one(item: tuple[int, Path]) -> None:
        started = time.monotonic()
        report = import_problem(item[0], item[1], tasks, options)
        record = {
            **report.model_dump(mode="json"),
            "level": item[0],
            "seconds": round(time.monotonic() - started, 1),
            "ended": datetime.now(UTC).isoformat(timespec="seconds"),
            "load": [round(v, 2) for v in os.getloadavg()],
            "commit": commit,
        }
        with log.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")
        print(f"{record['problem']}: {report.outcome} in {record['seconds']} s "
              f"{report.reason or ''}"[:300], flush=True)  # fmt: skip

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, files))
    run_info = out / "runs.jsonl"
    with run_info.open("a", encoding="utf-8") as stream:
        stream.write(json.dumps({
            "commit": commit, "ended": datetime.now(UTC).isoformat(timespec="seconds"),
            "levels": args.levels, "ids": args.ids, "max_mb": args.max_mb,
            "max_gflop": args.max_gflop, "jobs": args.jobs, "probe_cpu_s": args.probe_cpu_s,
            "kernelbench": _git(args.kernelbench, "rev-parse", "--short=7", "HEAD")
            or args.kernelbench_commit, "machine": machine(), "problems": len(files),
        }) + "\n")  # fmt: skip


def _lines(folders: Sequence[Path], name: str) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for folder in folders
        if (folder / name).exists()
        for line in (folder / name).read_text().splitlines()
    ]


def summarize(out: Path, merged: Sequence[Path] = ()) -> dict[str, Any]:
    """The per-level counts of OUT/problems.jsonl (a problem's last record counts).

    `merged`: other runs' folders read first, in order, so OUT's records (and a later folder's)
    replace theirs: a rerun of some problems at a later commit.
    """
    records: dict[str, dict[str, Any]] = {}
    for record in _lines([*merged, out], "problems.jsonl"):
        records[record["problem"]] = record
    levels: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"problems": 0, "imported": 0, "rewritten": 0, "refused": 0,
                 "refusals": Counter(), "refused_ids": defaultdict(list), "seconds": 0.0}
    )  # fmt: skip
    for record in records.values():
        level = levels[record["level"]]
        level["problems"] += 1
        level[record["outcome"]] += 1
        level["seconds"] += record["seconds"]
        if record["outcome"] == "refused":
            name, _ = refusal_class(record["reason"] or "")
            level["refusals"][name] += 1
            level["refused_ids"][name].append(int(record["problem"].split("/")[1].split("_")[0]))
    runs = _lines([*merged, out], "runs.jsonl")
    summary = {
        "commits": sorted({r["commit"] for r in records.values()}),
        "first_ended": min(r["ended"] for r in records.values()),
        "last_ended": max(r["ended"] for r in records.values()),
        "runs": runs,
        "levels": {
            str(k): {**v, "refusals": dict(v["refusals"]),
                     "refused_ids": {c: sorted(i) for c, i in v["refused_ids"].items()},
                     "rate": round((v["imported"] + v["rewritten"]) / v["problems"], 3)}
            for k, v in sorted(levels.items())
        },
    }  # fmt: skip
    (out / "coverage.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    columns = ("level", "problems", "imported", "rewritten", "refused", "imported or rewritten",
               "refusals")  # fmt: skip
    rows = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for level, v in summary["levels"].items():
        classes = "; ".join(
            f"{c} {n} ({', '.join(map(str, v['refused_ids'][c]))})"
            for c, n in v["refusals"].items()
        )
        rows.append(f"| {level} | {v['problems']} | {v['imported']} | {v['rewritten']} | "
                    f"{v['refused']} | {v['rate']:.0%} | {classes} |")  # fmt: skip
    refused = [
        f"- {r['problem']} ({refusal_class(r['reason'])[0]}): {r['reason']}"
        for r in sorted(records.values(), key=lambda r: (r["level"], _num(r["problem"])))
        if r["outcome"] == "refused"
    ]
    text = "\n".join([
        f"code {', '.join(summary['commits'])}; "
        f"{summary['first_ended']} to {summary['last_ended']}",
        "", *rows, "", "Refused:", *refused, "",
    ])  # fmt: skip
    (out / "coverage.md").write_text(text, encoding="utf-8")
    return summary


def _num(problem: str) -> int:
    return int(problem.split("/")[1].split("_")[0])


def main() -> int:
    """Parse the options; run, then summarize."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernelbench", type=Path, help="A KernelBench checkout.")
    parser.add_argument("--kernelbench-commit", default="", help="Its commit, if not a git tree.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 3]
    )
    parser.add_argument("--ids", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--max-mb", type=float, default=16)
    parser.add_argument("--max-gflop", type=float, default=0.5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--probe-cpu-s", type=float, default=600, help="CPU seconds a probe may use."
    )
    parser.add_argument("--fresh", action="store_true", help="Forget OUT/problems.jsonl.")
    parser.add_argument("--summary", action="store_true", help="Only summarize OUT.")
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=[], help="Earlier runs' OUT folders, read first."
    )
    args = parser.parse_args()
    if not args.summary:
        if args.kernelbench is None:
            parser.error("--kernelbench is required to run")
        run(args)
    summary = summarize(args.out, args.merge)
    print((args.out / "coverage.md").read_text())
    return 0 if summary else 1


if __name__ == "__main__":
    sys.exit(main())
