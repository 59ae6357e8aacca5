"""KernelBench import coverage: every problem of the chosen levels imported, and counted.

    python3 scripts/kb_import_coverage.py --kernelbench KB --levels 3 --out out/kb-coverage \\
        --max-mb 16 --max-gflop 0.5 --jobs 2

Imports the problems with `gauntlet.importers.kernelbench` (the same code as `gauntlet import
kernelbench`, torch2triton track), one problem per worker thread, each probe in its child
process with its limit of CPU seconds (`--probe-cpu-s`). Every problem's outcome is appended to
`OUT/problems.jsonl` as it ends, with its wall seconds, the load average, the code's commit and
a digest of its source (`src`: the same code on a machine without `.git`); its start, and each
run's settings and machine, to `OUT/runs.jsonl`; each finished probe's result to
`OUT/probes.jsonl` (`gauntlet.importers.probecache`). So a run stopped early still counts what
it did, names what it left unfinished, and the next run goes on inside a problem from its last
finished probe. `--baseline` also judges each written task's baseline on the `cpu` device on
all its configs (`gauntlet.taskcheck.baseline_passes`, as `gauntlet tasks check` does).

A rerun skips the problems already in OUT (`--fresh` starts over) or in the `--merge` folders
(earlier runs, e.g. an earlier call's OUT brought back from another machine) and reuses their
probes: problems an earlier run started and never finished go first, then level 3 before 2
before 1, so the long ones have a call's whole time. `--stop-after-s` starts no problem after
that many seconds. `OUT/coverage.md` is rewritten after every problem (and, with
`OUT/coverage.json`, by `--summary`, which runs nothing): per level imported, rewritten,
refused and unfinished, the refusals by class (`REFUSAL_CLASSES`), the baselines judged, the
problems an answer that does no work passes under KernelBench's own setup and what became of
them, and the code, the KernelBench commit, the machine and the dates. A run writes four files
(a GPU machine's call brings back at most eight).

Run it niced on a shared host (`nice -n 10`): the probes' float64 work is what takes the time.
On a GPU machine's CPUs it is `scripts/gpu_check.sh OUT kbimport` (docs/importers.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gauntlet import devices
from gauntlet.importers.kernelbench import ImportOptions, import_problem, problem_files
from gauntlet.importers.probecache import ProbeCache, code_digest
from gauntlet.importers.report import ProblemReport

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
    ("importer error", r"^the importer raised", "importer"),
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


#: What an answer that does no work looks like in a source finding (`degeneracy.measure`'s
#: details under KernelBench's own setup): the kind, first match wins.
TRIVIAL_ANSWERS: tuple[tuple[str, str], ...] = (
    ("zeros", r"zeros as the output passes"),
    ("identity", r"input '[^']*' as the output passes"),
    ("constant", r"constant as the output passes"),
    ("insensitive", r"redrawing every input moves it"),
)


def trivial_answers(findings: Sequence[str]) -> list[str]:
    """The kinds of answers that do no work and pass, named in a problem's source findings."""
    return sorted({kind for text in findings for kind, pattern in TRIVIAL_ANSWERS
                   if re.search(pattern, text)})  # fmt: skip


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

    cpu = devices.cpu_model()
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(pages / 2**30, 1),
            "python": platform.python_version(), "torch": torch.__version__,
            "kernel": platform.release()}  # fmt: skip


#: Wall seconds a baseline judgment may take (its child process is killed past them).
BASELINE_TIMEOUT_S = 3600


def _baseline(tasks: Path, report: ProblemReport, id_prefix: str) -> dict[str, Any]:
    """The written task's baseline judged on `cpu`, all configs: passed, how many, why not.

    Judged in a child process (this script's `--judge-baseline`), so the references the judge
    keeps for later judgments of a task (`python_backend._REFERENCES`, up to a quarter of the
    host's memory) end with it instead of piling up over a level. (The descriptors these kept
    references held, one per frame, first made this a child: past descriptor 1024 the
    channel's `select()` failed every later judgment; now none is held, 390979b, and the
    channel polls, 9832495.)
    """
    from gauntlet import process

    assert report.task_id is not None
    started = time.monotonic()
    folder = tasks / report.task_id.removeprefix(f"{id_prefix}/")
    argv = [sys.executable, str(Path(__file__).resolve()), "--judge-baseline", str(folder)]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    finished = process.run(argv, timeout_s=BASELINE_TIMEOUT_S, env=env)
    try:
        found = json.loads(finished.stdout.strip().splitlines()[-1])
        passed, detail = bool(found["passed"]), str(found["detail"])
    except (IndexError, json.JSONDecodeError, KeyError, TypeError):
        ended = finished.signal_name or f"exit {finished.returncode}"
        passed, detail = False, f"the judgment gave no result ({ended}): {finished.stderr[-300:]}"
    return {"passed": passed, "detail": detail[:400],
            "seconds": round(time.monotonic() - started, 1)}  # fmt: skip


def judge_baseline(folder: Path) -> int:
    """`--judge-baseline`: one task's baseline judged on `cpu`, printed as a JSON line."""
    from gauntlet.task import load_task
    from gauntlet.taskcheck import baseline_passes

    try:
        checked = baseline_passes(load_task(folder), "cpu")
        passed, detail = checked.ok, checked.detail
    except Exception as err:  # noqa: BLE001 - recorded as the baseline's failure, as in `one`
        passed, detail = False, f"the check raised {type(err).__name__}: {err}"
    print(json.dumps({"passed": passed, "detail": detail}), flush=True)
    return 0


def queue(
    files: Sequence[tuple[int, Path]], done: set[str], unfinished: set[str]
) -> list[tuple[int, Path]]:
    """The problems still to import, in order: those started before and never finished first
    (the longest), then level 3, 2, 1 (deep networks take the longest), each by number."""

    def key(item: tuple[int, Path]) -> tuple[bool, int, int]:
        name = f"level{item[0]}/{item[1].name}"
        return name not in unfinished, -item[0], _num(name)

    return sorted((f for f in files if f"level{f[0]}/{f[1].name}" not in done), key=key)


def run(args: argparse.Namespace) -> None:
    """Import every problem not yet in OUT or the merged folders, recording each as it ends."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    log, runs, probes = out / "problems.jsonl", out / "runs.jsonl", out / "probes.jsonl"
    if args.fresh:
        for stale in (log, runs, probes):
            stale.unlink(missing_ok=True)
    folders = [*args.merge, out]
    done = {r["problem"] for r in _lines(folders, "problems.jsonl")}
    unfinished = {r["problem"] for r in _starts(folders)} - done
    cache = ProbeCache(probes, [folder / "probes.jsonl" for folder in args.merge])
    options = ImportOptions(
        levels=args.levels, ids=args.ids, track="torch2triton", id_prefix="kb",
        max_bytes=int(args.max_mb * 2**20), max_flops=args.max_gflop * 1e9,
        cpu_limit_s=args.probe_cpu_s, jobs=args.jobs,
    )  # fmt: skip
    files = queue(problem_files(args.kernelbench, options.levels, options.ids), done, unfinished)
    commit, src = code_commit(), code_digest()
    tasks: Path = args.tasks_dir or out / "tasks"
    started_at = time.monotonic()
    writing = threading.Lock()

    def append(path: Path, record: dict[str, Any]) -> None:
        with writing, path.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")

    def one(item: tuple[int, Path]) -> None:
        if args.stop_after_s and time.monotonic() - started_at > args.stop_after_s:
            return
        problem = f"level{item[0]}/{item[1].name}"
        now = datetime.now(UTC).isoformat(timespec="seconds")
        append(runs, {"kind": "started", "problem": problem, "level": item[0], "started": now,
                      "src": src})  # fmt: skip
        started = time.monotonic()
        try:
            report = import_problem(item[0], item[1], tasks, options, cache)
        except Exception as err:  # noqa: BLE001 - one problem's failure is its record, not the run's
            # A run on another machine is a call of minutes: an importer error on one problem
            # is recorded (class "importer error") and the others go on.
            reason = f"the importer raised {type(err).__name__}: {err}"[:600]
            report = ProblemReport(problem=problem, outcome="refused", reason=reason)
        seconds = round(time.monotonic() - started, 1)  # the import's, the baseline's apart
        baseline = (
            {"baseline": _baseline(tasks, report, options.id_prefix)}
            if args.baseline and report.task_id is not None
            else {}
        )
        record = {
            **report.model_dump(mode="json"),
            "level": item[0],
            "seconds": seconds,
            "ended": datetime.now(UTC).isoformat(timespec="seconds"),
            "load": [round(v, 2) for v in os.getloadavg()],
            "commit": commit,
            "src": src,
            **baseline,
        }
        append(log, record)
        with writing:
            summarize(out, args.merge)
        print(f"{record['problem']}: {report.outcome} in {record['seconds']} s "
              f"{report.reason or ''}"[:300], flush=True)  # fmt: skip

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, files))
    append(runs, {
        "kind": "run", "commit": commit, "src": src,
        "ended": datetime.now(UTC).isoformat(timespec="seconds"),
        "levels": args.levels, "ids": args.ids, "max_mb": args.max_mb,
        "max_gflop": args.max_gflop, "jobs": args.jobs, "probe_cpu_s": args.probe_cpu_s,
        "kernelbench": args.kernelbench_commit[:7]
        or _git(args.kernelbench, "rev-parse", "--short=7", "HEAD"),
        "machine": machine(), "problems": len(files),
        "seconds": round(time.monotonic() - started_at, 1),
    })  # fmt: skip


def _lines(folders: Sequence[Path], name: str) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for folder in folders
        if (folder / name).exists()
        for line in (folder / name).read_text().splitlines()
        if line.strip()
    ]


def _starts(folders: Sequence[Path]) -> list[dict[str, Any]]:
    """The problems' starts in the folders' runs.jsonl."""
    return [r for r in _lines(folders, "runs.jsonl") if r.get("kind") == "started"]


def summarize(out: Path, merged: Sequence[Path] = (), with_json: bool = False) -> dict[str, Any]:
    """The per-level counts of OUT/problems.jsonl (a problem's last record counts).

    `merged`: other runs' folders read first, in order, so OUT's records (and a later folder's)
    replace theirs: a rerun of some problems at a later commit. A problem started (in any of
    them) and never recorded counts as unfinished. Writes OUT/coverage.md, and
    OUT/coverage.json `with_json`.
    """
    folders = [*merged, out]
    records: dict[str, dict[str, Any]] = {}
    for record in _lines(folders, "problems.jsonl"):
        records[record["problem"]] = record
    unfinished: dict[str, dict[str, Any]] = {}
    for start in _starts(folders):
        if start["problem"] not in records:
            unfinished[start["problem"]] = start
    levels: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"problems": 0, "imported": 0, "rewritten": 0, "refused": 0, "unfinished": [],
                 "refusals": Counter(), "refused_ids": defaultdict(list), "seconds": 0.0,
                 "baselines": {"judged": 0, "passed": 0, "failed": []},
                 "trivial": {"problems": [], "outcomes": Counter()}}
    )  # fmt: skip
    for record in records.values():
        level = levels[record["level"]]
        number = _num(record["problem"])
        level["problems"] += 1
        level[record["outcome"]] += 1
        level["seconds"] += record["seconds"]
        if record["outcome"] == "refused":
            name, _ = refusal_class(record["reason"] or "")
            level["refusals"][name] += 1
            level["refused_ids"][name].append(number)
        baseline = record.get("baseline")
        if baseline is not None:
            level["baselines"]["judged"] += 1
            level["baselines"]["passed"] += baseline["passed"]
            if not baseline["passed"]:
                level["baselines"]["failed"].append(number)
        kinds = trivial_answers(record.get("source_findings", []))
        if kinds:
            level["trivial"]["problems"].append([number, kinds, record["outcome"]])
            level["trivial"]["outcomes"][record["outcome"]] += 1
    for start in unfinished.values():
        levels[start["level"]]["unfinished"].append(_num(start["problem"]))
    if not records and not unfinished:
        return {}
    ended = [r["ended"] for r in records.values()] or ["-"]
    summary = {
        "commits": sorted({r["commit"] for r in records.values()}),
        "sources": sorted({r.get("src", "?") for r in records.values()}),
        "first_ended": min(ended),
        "last_ended": max(ended),
        "runs": [r for r in _lines(folders, "runs.jsonl") if r.get("kind") != "started"],
        "levels": {
            str(k): {**v, "refusals": dict(v["refusals"]),
                     "refused_ids": {c: sorted(i) for c, i in v["refused_ids"].items()},
                     "unfinished": sorted(v["unfinished"]),
                     "trivial": {"problems": sorted(v["trivial"]["problems"]),
                                 "outcomes": dict(v["trivial"]["outcomes"])},
                     "rate": round((v["imported"] + v["rewritten"])
                                   / max(1, v["problems"] + len(v["unfinished"])), 3)}
            for k, v in sorted(levels.items())
        },
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    if with_json:
        (out / "coverage.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "coverage.md").write_text(_markdown(summary, records), encoding="utf-8")
    return summary


def _markdown(summary: dict[str, Any], records: dict[str, dict[str, Any]]) -> str:
    """coverage.md: the per-level table, then each refusal, baseline and trivial answer."""
    columns = ("level", "problems", "imported", "rewritten", "refused", "unfinished",
               "imported or rewritten", "refusals", "baselines pass on cpu")  # fmt: skip
    rows = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    trivial = []
    for level, v in summary["levels"].items():
        classes = "; ".join(
            f"{c} {n} ({', '.join(map(str, v['refused_ids'][c]))})"
            for c, n in v["refusals"].items()
        )
        b = v["baselines"]
        failed = f" (failed: {', '.join(map(str, b['failed']))})" if b["failed"] else ""
        baselines = f"{b['passed']} of {b['judged']}{failed}"
        rows.append(f"| {level} | {v['problems'] + len(v['unfinished'])} | {v['imported']} | "
                    f"{v['rewritten']} | {v['refused']} | {len(v['unfinished'])} | "
                    f"{v['rate']:.0%} | {classes} | {baselines} |")  # fmt: skip
        if v["trivial"]["problems"]:
            shown = ", ".join(f"{n} ({'/'.join(k)}: {o})" for n, k, o in v["trivial"]["problems"])
            trivial.append(f"- level {level}, {len(v['trivial']['problems'])} problems: {shown}")
    refused = [
        f"- {r['problem']} ({refusal_class(r['reason'])[0]}): {r['reason']}"
        for r in sorted(records.values(), key=lambda r: (r["level"], _num(r["problem"])))
        if r["outcome"] == "refused"
    ]
    unfinished = [
        f"- level {level}: {', '.join(map(str, v['unfinished']))}"
        for level, v in summary["levels"].items()
        if v["unfinished"]
    ]
    sources = summary["sources"]
    same = "one source tree" if len(sources) == 1 else f"**{len(sources)} source trees**"
    if "?" in sources:
        same = "records without a source digest: see the commits"
    return "\n".join([
        f"code {', '.join(summary['commits'])} (src {', '.join(sources)}: {same}); "
        f"{summary['first_ended']} to {summary['last_ended']}",
        "", *rows, "",
        "Answers that do no work and pass under KernelBench's own setup (U[0, 1) inputs, "
        "weights of seed 42, atol = rtol = 1e-4), and the outcome here:",
        *(trivial or ["- none"]), "",
        "Started and never finished (stopped with their run):", *(unfinished or ["- none"]), "",
        "Refused:", *refused, "",
    ])  # fmt: skip


def _num(problem: str) -> int:
    return int(problem.split("/")[1].split("_")[0])


def main() -> int:
    """Parse the options; run, then summarize."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernelbench", type=Path, help="A KernelBench checkout.")
    parser.add_argument("--kernelbench-commit", default="", help="Its commit, if not a git tree.")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--tasks-dir", type=Path, help="Where tasks go (default: OUT/tasks).")
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
    parser.add_argument(
        "--baseline", action="store_true", help="Judge each written task's baseline on cpu."
    )
    parser.add_argument(
        "--stop-after-s", type=float, default=0, help="Start no problem after this (0: never)."
    )
    parser.add_argument("--fresh", action="store_true", help="Forget OUT's records.")
    parser.add_argument("--summary", action="store_true", help="Only summarize OUT.")
    parser.add_argument("--judge-baseline", type=Path, help="Only judge this task's baseline.")
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=[], help="Earlier runs' OUT folders, read first."
    )
    args = parser.parse_args()
    if args.judge_baseline is not None:
        return judge_baseline(args.judge_baseline)
    if args.out is None:
        parser.error("--out is required")
    if not args.summary:
        if args.kernelbench is None:
            parser.error("--kernelbench is required to run")
        run(args)
    summary = summarize(args.out, args.merge, with_json=args.summary)
    if summary:
        print((args.out / "coverage.md").read_text())
    return 0 if summary else 1


if __name__ == "__main__":
    sys.exit(main())
