"""Shared output helpers of the command line: one console each for results and diagnostics."""

from __future__ import annotations

from rich.console import Console

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

STATUS_STYLE = {
    "pass": "bold green",
    "overfit": "yellow",
    "incorrect": "red",
    "rejected": "bold magenta",
    "build_error": "red",
    "timeout": "red",
    "crash": "red",
    "no_submission": "dim",
    "agent_error": "red",
    "judge_error": "bold red",
}


def styled_status(status: str) -> str:
    """A status with its colour, for rich tables."""
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"
