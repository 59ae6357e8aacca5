"""The `gauntlet` command: a thin Typer layer over the library (see `gauntlet._cli`)."""

from __future__ import annotations

import logging
import sys

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape

from gauntlet.errors import ConfigError, GauntletError, RunInterrupted

app = typer.Typer(
    name="gauntlet",
    help="Kernel Gauntlet: judge and benchmark AI agents that write compute kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    from gauntlet._cli import agents, devices, evaluate, importers, report, run, tasks

    for module in (tasks, evaluate, run, report, agents, devices, importers):
        module.register(app)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        print(f"gauntlet {version('kernel-gauntlet')}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug detail."),
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=Console(stderr=True), show_path=False)],
    )


def main() -> None:
    """Entry point: user errors print without a traceback and exit 2; usage errors exit 2."""
    _register()
    # Messages are not wrapped at the terminal's width: a path or a command in them must stay
    # whole to be copied (and a pipe reports 80 columns).
    errors = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        app()
    except ConfigError as err:
        errors.print(f"[bold red]error:[/] {escape(str(err))}")
        sys.exit(2)
    except RunInterrupted as err:
        errors.print(f"[bold yellow]stopped:[/] {escape(str(err))}")
        sys.exit(130)
    except GauntletError as err:
        errors.print(f"[bold red]error:[/] {escape(str(err))}")
        sys.exit(1)
