"""`gauntlet import`: turn another benchmark's problems into task folders."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from gauntlet import settings, suites
from gauntlet._cli.output import out
from gauntlet.errors import ConfigError

if TYPE_CHECKING:
    from gauntlet.importers.report import ImportReport, ProblemReport


def register(app: typer.Typer) -> None:
    """Add the `import` command group."""
    group = typer.Typer(help="Import another benchmark's problems as tasks.", no_args_is_help=True)
    group.command("kernelbench")(kernelbench)
    group.command("robust-kbench")(robust_kbench)
    group.command("gpumode")(gpumode)
    app.add_typer(group, name="import")


def _numbers(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"{option} takes numbers separated by commas, not '{text}'") from None


def _id_prefix(folder: Path) -> str:
    """The folder's path under the tasks root (where `gauntlet tasks` finds them), else its name."""
    resolved = folder.resolve()
    root = settings.TASKS_DIR.resolve()
    prefix = resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else folder.name
    if not re.fullmatch(r"[a-z0-9][a-z0-9_\-]*(/[a-z0-9][a-z0-9_\-]*)*", prefix):
        raise ConfigError(
            f"'{prefix}' cannot start a task id (lowercase letters, digits, '_' and '-'); "
            "choose another --out"
        )
    return prefix


def kernelbench(
    path: Path = typer.Argument(..., help="A KernelBench checkout (or its KernelBench/ folder)."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Where the task folders go."),
    levels: str = typer.Option("1,2,3", "--levels", help="Levels, e.g. 1,2."),
    ids: str = typer.Option(None, "--ids", help="Problem numbers, e.g. 1,19,23 (default: all)."),
    track: str = typer.Option("torch2cuda", "--track", help="torch2cuda or torch2triton."),
    max_mb: float = typer.Option(2048, "--max-mb", help="Cap on a config's compulsory MiB."),
    max_gflop: float = typer.Option(1000, "--max-gflop", help="Cap on a config's GFLOP."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Problems analysed at once."),
    probe_cpu_s: float = typer.Option(
        600, "--probe-cpu-s", help="CPU seconds each probe of a problem may use."
    ),
    contract: str = typer.Option(
        "function", "--contract", help="function, or modelnew: judge KernelBench ModelNew files."
    ),
) -> None:
    """Import KernelBench problems; writes import_report.json beside the tasks."""
    from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench

    if not path.is_dir():
        raise ConfigError(f"'{path}' is not a folder; give a KernelBench checkout")
    if contract not in ("function", "modelnew"):
        raise ConfigError(f"unknown --contract '{contract}' (known: function, modelnew)")
    options = ImportOptions(
        contract=contract,  # type: ignore[arg-type]
        levels=_numbers(levels, "--levels") or [],
        ids=_numbers(ids, "--ids"),
        track=track,
        id_prefix=_id_prefix(out_dir),
        max_bytes=int(max_mb * 2**20),
        max_flops=max_gflop * 1e9,
        jobs=jobs,
        cpu_limit_s=probe_cpu_s,
    )
    report = import_kernelbench(path, out_dir, options, on_problem=_print_problem)
    _print_report(report, f"KernelBench import into {out_dir}", out_dir)


def robust_kbench(
    path: Path = typer.Argument(..., help="A robust-kbench checkout (or its tasks/ folder)."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Where the task folders go."),
    tasks: str = typer.Option(
        None, "--tasks", help="Task folder names, e.g. layernorm,mnist_pool."
    ),
    ports: bool = typer.Option(False, "--ports", help="Also the KernelBench v0 ports."),
    track: str = typer.Option("torch2cuda", "--track", help="torch2cuda or torch2triton."),
    max_mb: float = typer.Option(2048, "--max-mb", help="Cap on a config's compulsory MiB."),
    max_gflop: float = typer.Option(1000, "--max-gflop", help="Cap on a config's GFLOP."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Problems analysed at once."),
) -> None:
    """Import robust-kbench tasks, forward and backward; writes import_report.json beside them."""
    from gauntlet.importers.kernelbench import ImportOptions
    from gauntlet.importers.robustkbench import import_robust_kbench

    if not path.is_dir():
        raise ConfigError(f"'{path}' is not a folder; give a robust-kbench checkout")
    options = ImportOptions(
        track=track,
        id_prefix=_id_prefix(out_dir),
        max_bytes=int(max_mb * 2**20),
        max_flops=max_gflop * 1e9,
        jobs=jobs,
    )
    names = [n.strip() for n in tasks.split(",") if n.strip()] if tasks else None
    report = import_robust_kbench(
        path, out_dir, options, ports=ports, names=names, on_problem=_print_problem
    )
    _print_report(report, f"robust-kbench import into {out_dir}", out_dir)


def gpumode(
    path: Path = typer.Argument(..., help="A gpu-mode/reference-kernels checkout."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Where the task folders go."),
    sets: str = typer.Option(
        None, "--sets", help="Problem sets (folders under problems/), e.g. pmpp_v2,linalg."
    ),
    track: str = typer.Option("torch2cuda", "--track", help="torch2cuda or torch2triton."),
) -> None:
    """Import GPU MODE problems that run on NVIDIA and are not quantised; writes the report."""
    from gauntlet.importers.gpumode import GpuModeOptions, import_gpumode

    if not path.is_dir():
        raise ConfigError(f"'{path}' is not a folder; give a reference-kernels checkout")
    options = GpuModeOptions(
        track=track,
        id_prefix=_id_prefix(out_dir),
        sets=[n.strip() for n in sets.split(",") if n.strip()] if sets else None,
    )
    report = import_gpumode(path, out_dir, options, on_problem=_print_problem)
    _print_report(report, f"GPU MODE import into {out_dir}", out_dir)


def _print_problem(problem: ProblemReport) -> None:
    reason = f" ({escape(problem.reason)})" if problem.reason else ""
    out.print(f"{problem.problem}: {problem.outcome}{reason}")


def _add_suites(report: ImportReport, out_dir: Path) -> None:
    """The source's suites in the tasks folder's suites.toml, when the tasks were written there."""
    if not out_dir.resolve().is_relative_to(settings.TASKS_DIR.resolve()):
        out.print(f"no suite added: {out_dir} is outside the tasks folder ({settings.TASKS_DIR})")
        return
    for name, patterns in report.suites(_id_prefix(out_dir)).items():
        added = suites.add_suite(name, patterns)
        out.print(f"suite {name}: {patterns}" + (" (added to suites.toml)" if added else ""))


def _print_report(report: ImportReport, title: str, out_dir: Path) -> None:
    table = Table(title=title)
    table.add_column("outcome")
    table.add_column("problems", justify="right")
    for outcome, count in report.counts().items():
        table.add_row(outcome, str(count))
    out.print(table)
    for reason, count in report.reasons().items():
        out.print(f"  refused {count}: {escape(reason)}")
    out.print(f"report: {out_dir / 'import_report.json'}")
    _add_suites(report, out_dir)
