"""Options of the judge that `gauntlet eval` and `gauntlet run` share."""

from __future__ import annotations

from typing import Any

import typer

from gauntlet.judge.timing import DEFAULT_TIME_CAP_S


def time_cap() -> Any:
    """`--time-cap`: seconds of GPU timing per config at most."""
    return typer.Option(
        DEFAULT_TIME_CAP_S, "--time-cap", min=0.1, help="Seconds of GPU timing per config at most."
    )


def compile_reference() -> Any:
    """`--compile-reference/--no-compile-reference`."""
    return typer.Option(
        True,
        "--compile-reference/--no-compile-reference",
        help="Also time torch.compile of the reference (torch2* tasks, for the record).",
    )
