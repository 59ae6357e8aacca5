"""Build `.kb-kit/`: KernelBench's eval, its problems and our tasks, for a GPU machine.

    python scripts/kb_kit.py [--kernelbench GIT_DIR_OR_CHECKOUT] [--anchors ../shared/anchors] \\
        [--problems 1,23,47] [--max-mb 64] [--max-gflop 20] [--fresh] [--no-compat] [--out .kb-kit]

Issue 18's side-by-side benchmark needs, on a GPU machine with no network, KernelBench's own
evaluation (its `src/`, the anchors' `kb_eval_one.py` and `kb_stubs.py`) and our tasks for the
same problems, each with the same naive kernel as the submission; issue 21's steps need the
problem files of levels 1-3 (`gpu_check.sh kbimport`: the import's coverage on the machine's
CPUs) and the compatibility contract's tasks (`gpu_check.sh kbcompat`:
`scripts/kb_compat_evidence.py`, imported here with `--import-only`). This lays them out:

    .kb-kit/kb_eval_one.py, kb_stubs.py    the anchors' scripts (they expect `kb/src` beside them)
    .kb-kit/kernels/                        the anchors' naive ModelNew kernels
    .kb-kit/kb/src/kernelbench/             KernelBench's source, from the snapshot (`kb/COMMIT`)
    .kb-kit/kb/KernelBench/level{1,2,3}/    the problem files of levels 1-3
    .kb-kit/tasks/l1/N_<name>/              `gauntlet import kernelbench --contract modelnew`
    .kb-kit/submissions/l1_N/model_new.py   that problem's naive kernel, unmodified
    .kb-kit/cases.tsv                       number, task, submission, problem, kernel (a line each)
    .kb-kit/compat/tasks/l{1,2}/N_<name>/   kb_compat_evidence.py's tasks (`--contract modelnew`)
    .kb-kit/kbimport/*/, kbcompat/*/        earlier calls' records, put there by hand from a
                                            call's OUT: the next call goes on from them

The import runs the problems' float64 references on this CPU at its visible configs, so it is
done small (`--max-mb`, `--max-gflop`; problem 23 at KernelBench's size is 12 GiB in float32)
and the configs are then set to KernelBench's: float32 only (the anchors' kernels take float32
only, as KernelBench judges them), visible C1 at the problem's shipped constants (exactly the
problem KernelBench times), the hidden configs' sizes scaled by the same factor as C1 (float32
draws from the task's domain, as the importer would have written at a cap above them). A
problem already under `tasks/` or `compat/tasks/` is not imported again (`--fresh` redoes the
former). The kit is about 2 MiB: carry it.

    carry [".whl", ".kb-kit"];  STEP_TIMEOUT=520 scripts/gpu_check.sh "$OUT" env kb  (docs/gpu.md)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

from gauntlet import process

#: Where the `fetch` tool leaves KernelBench's snapshot (a bare git directory).
SNAPSHOT = Path("/work/.mirror/ScalingIntelligence+KernelBench/repo")
#: The anchors' naive kernel for each level 1 problem.
KERNELS = {1: "matmul_new.py", 23: "softmax_new.py", 47: "sumred_new.py"}
#: The dtype the anchors' kernels take (each checks `torch::kFloat32`), KernelBench's own.
DTYPE = "float32"


def _git(git_dir: Path, *args: str) -> str:
    finished = process.run(["git", "--git-dir", str(git_dir), *args], timeout_s=120)
    if finished.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in '{git_dir}' failed: {finished.stderr[-400:]}")
    return str(finished.stdout)


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


#: The KernelBench levels whose problem files the kit carries (level 4 downloads models).
LEVELS = ("KernelBench/level1", "KernelBench/level2", "KernelBench/level3")


def copy_kernelbench(source: Path, kb: Path, numbers: list[int]) -> str:
    """KernelBench's `src/` and levels 1-3 into `kb`; the commit (or 'checkout')."""
    if kb.exists():
        shutil.rmtree(kb)
    kb.mkdir(parents=True)
    if _is_git_dir(source):
        archive = kb / "snapshot.tar"
        _git(source, "archive", "--format=tar", "-o", str(archive), "HEAD", "src", *LEVELS)
        with tarfile.open(archive) as tar:
            tar.extractall(kb, filter="data")
        archive.unlink()
        commit = _git(source, "rev-parse", "HEAD").strip()
    else:
        shutil.copytree(source / "src", kb / "src")
        for level in LEVELS:
            shutil.copytree(source / level, kb / level, copy_function=shutil.copyfile)
        commit = "checkout"
    level = LEVELS[0]
    found = {int(p.name.split("_")[0]) for p in (kb / level).glob("*.py")}
    missing = sorted(set(numbers) - found)
    if missing:
        raise SystemExit(f"no level 1 problem(s) {missing} in '{source}'")
    (kb / "COMMIT").write_text(commit + "\n")
    return commit


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _scaled(config: dict[str, Any], factors: dict[str, float]) -> dict[str, Any]:
    return {k: max(1, round(v * factors[k])) if k in factors else v for k, v in config.items()}


def kernelbench_configs(text: str, shipped: dict[str, int | float]) -> str:
    """An imported task.toml with KernelBench's configs: float32, C1 at the `shipped` constants.

    The other visible configs (half dtypes) go; the hidden ones keep their float32 fixed
    configs and their domain, with each size the import reduced scaled by the same factor as C1
    (the importer's domain tops out at C1). The importer writes the configs as one block from
    `[[configs.visible]]` to the next top-level table; that block is written again, and the
    rest of the text is kept.
    """
    configs = tomllib.loads(text)["configs"]
    c1 = configs["visible"][0]
    factors = {
        k: shipped[k] / c1[k]
        for k in c1
        if k in shipped and isinstance(c1[k], int) and c1[k] and shipped[k] != c1[k]
    }
    lines = text.splitlines()
    start = lines.index("[[configs.visible]]")
    end = next(
        i
        for i in range(start + 1, len(lines))
        if lines[i].startswith("[") and not lines[i].startswith(("[[configs.", "[configs."))
    )
    c1 = {**_scaled(c1, factors), "dtype": DTYPE}
    block = ["[[configs.visible]]", *(f"{k} = {_toml(v)}" for k, v in c1.items()), ""]
    hidden = configs.get("hidden", {})
    domain: dict[str, Any] = {}
    if hidden:
        fixed = [_scaled(c, factors) for c in hidden.get("fixed", []) if c.get("dtype") == DTYPE]
        block += ["[configs.hidden]", "fixed = ["]
        block += [f"    {_toml(c)}," for c in fixed]
        block += ["]", f"count = {hidden.get('count', 0)}", ""]
        domain = dict(hidden.get("domain", {}))
        for k in factors.keys() & domain.keys():
            domain[k] = _scaled(domain[k], {"min": factors[k], "max": factors[k]})
        if "dtype" in domain:
            domain["dtype"] = {"values": [DTYPE]}
        block += ["[configs.hidden.domain]", *(f"{k} = {_toml(v)}" for k, v in domain.items())]
        block.append("")
    rewritten = "\n".join(lines[:start] + block + lines[end:]) + "\n"
    return re.sub(r"Unseen configurations will be tested \([^)]*\)", _unseen(domain), rewritten)


def _unseen(domain: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k} in [{v['min']}, {v['max']}]" for k, v in domain.items() if "min" in v)
    return f"Unseen configurations will be tested ({sizes}; dtype {DTYPE})"


def import_tasks(
    kb: Path, tasks: Path, numbers: list[int], max_mb: float, max_gflop: float, jobs: int
) -> None:
    """Our tasks for the problems (`--contract modelnew`), with KernelBench's configs.

    Imported small (the import runs float64 references on this CPU), then C1 is set to the
    problem's shipped constants (`kernelbench_configs`).
    """
    from gauntlet.importers.kbsource import parse_problem
    from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench

    todo = [n for n in numbers if not list(tasks.glob(f"l1/{n}_*/task.toml"))]
    if todo:
        options = ImportOptions(
            levels=[1],
            ids=todo,
            track="torch2cuda",
            id_prefix="kbkit",
            max_bytes=int(max_mb * 2**20),
            max_flops=max_gflop * 1e9,
            contract="modelnew",
            jobs=jobs,
        )
        report = import_kernelbench(kb.resolve(), tasks.resolve(), options)
        for problem in report.problems:
            print(f"import {problem.problem}: {problem.outcome}", problem.reason or "", flush=True)
    for number in numbers:
        for path in tasks.glob(f"l1/{number}_*/task.toml"):
            (problem,) = (kb / "KernelBench" / "level1").glob(f"{number}_*.py")
            shipped = parse_problem(problem.read_text(), problem.name).constants
            path.write_text(kernelbench_configs(path.read_text(), shipped))


def import_compat(out: Path) -> None:
    """kb_compat_evidence.py's tasks under `out/compat/tasks` (imported on this CPU)."""
    script = Path(__file__).resolve().parent / "kb_compat_evidence.py"
    compat = out / "compat"
    argv = [sys.executable, str(script), "--kernelbench", str(out / "kb"), "--import-only",
            "--out", str(compat / "import"), "--tasks", str(compat / "tasks")]  # fmt: skip
    # Minutes on two cores: float64 references at the script's caps (its elementwise problems
    # at 256 MiB, its linear layers at 5 GFLOP).
    finished = process.run(argv, timeout_s=3600, output_limit=1 << 20)
    if finished.returncode != 0:
        raise SystemExit(f"kb_compat_evidence.py --import-only failed: {finished.stderr[-800:]}")
    shutil.rmtree(compat / "import", ignore_errors=True)
    refused = {k: v for k, v in json.loads(finished.stdout).items() if v.startswith("refused")}
    print(f"{out}/compat/tasks: kb_compat_evidence.py's tasks; refused: {refused or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, default=SNAPSHOT,
                        help="KernelBench's bare git directory or a checkout")  # fmt: skip
    parser.add_argument("--anchors", type=Path, default=Path("../shared/anchors"))
    parser.add_argument("--problems", default="1,23,47", help="level 1 problem numbers")
    parser.add_argument("--max-mb", type=float, default=64, help="the import's cap (C1's MiB)")
    parser.add_argument("--max-gflop", type=float, default=20, help="the import's cap (GFLOP)")
    parser.add_argument("--jobs", type=int, default=3, help="problems imported at once")
    parser.add_argument("--fresh", action="store_true", help="import the tasks again")
    parser.add_argument("--no-compat", action="store_true",
                        help="leave out kb_compat_evidence.py's tasks (kbcompat step)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path(".kb-kit"))
    args = parser.parse_args()
    numbers = [int(n) for n in args.problems.split(",")]
    unknown = sorted(set(numbers) - set(KERNELS))
    if unknown:
        parser.error(f"no anchor kernel for problem(s) {unknown} (known: {sorted(KERNELS)})")
    if not args.kernelbench.exists():
        parser.error(
            f"no KernelBench at '{args.kernelbench}': fetch github:ScalingIntelligence/KernelBench"
        )
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    commit = copy_kernelbench(args.kernelbench, out / "kb", numbers)
    for name in ("kb_eval_one.py", "kb_stubs.py", "README.md"):
        shutil.copyfile(args.anchors / name, out / name)
    if (out / "kernels").exists():
        shutil.rmtree(out / "kernels")
    shutil.copytree(args.anchors / "kernels", out / "kernels", copy_function=shutil.copyfile)
    if args.fresh and (out / "tasks").exists():
        shutil.rmtree(out / "tasks")
    import_tasks(out / "kb", out / "tasks", numbers, args.max_mb, args.max_gflop, args.jobs)
    lines = []
    for number in numbers:
        tasks = sorted((out / "tasks").glob(f"l1/{number}_*/task.toml"))
        if not tasks:
            print(f"problem {number}: no task (refused: see {out}/tasks/import_report.json)")
            continue
        submission = out / "submissions" / f"l1_{number}"
        submission.mkdir(parents=True, exist_ok=True)
        kernel = out / "kernels" / KERNELS[number]
        shutil.copyfile(kernel, submission / "model_new.py")
        (problem,) = (out / "kb" / "KernelBench" / "level1").glob(f"{number}_*.py")
        lines.append("\t".join(map(str, (number, tasks[0].parent, submission, problem, kernel))))
    (out / "cases.tsv").write_text("\n".join(lines) + "\n")
    if not args.no_compat:
        import_compat(out)
    if (out / "kbimport").exists() or (out / "kbcompat").exists():
        print(f"{out}/kbimport/, kbcompat/: earlier calls' records, merged by the next call")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: KernelBench {commit[:12]}, {len(lines)} case(s), {size / 2**20:.2f} MiB")
    print((out / "cases.tsv").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
