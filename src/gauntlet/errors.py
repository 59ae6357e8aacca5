"""Exceptions raised by Kernel Gauntlet's own machinery.

Failures of untrusted code (a kernel that does not build, crashes or is wrong) are never
exceptions: they are verdicts. These exceptions are for our side only::

    GauntletError
    ├── ConfigError        bad user input: a malformed task file, a bad option, a bad path
    │   └── TaskFormatError    a task folder that does not load (file, key, what was expected)
    ├── UnknownNameError   an unknown task, suite, agent, device or platform
    ├── JudgeError         the judge's own infrastructure failed (not the submission)
    ├── WorkerLost         a trusted worker died where only our code ran
    ├── RecordError        a run directory or record that cannot be read or written
    └── RunInterrupted     a run stopped by the user (Ctrl-C); it can be resumed
"""

from __future__ import annotations


class GauntletError(Exception):
    """Base of every error raised by Kernel Gauntlet."""


class ConfigError(GauntletError):
    """Bad user input; the CLI prints it without a traceback and exits 2."""


class TaskFormatError(ConfigError):
    """A task folder that does not load."""

    def __init__(self, path: str, key: str, problem: str) -> None:
        self.path = path
        self.key = key
        self.problem = problem
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {problem}")


class UnknownNameError(ConfigError):
    """A name that matches nothing known, with the valid choices."""

    def __init__(self, kind: str, name: str, known: list[str], hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.known = known
        shown = ", ".join(known[:30]) + (", ..." if len(known) > 30 else "")
        message = f"unknown {kind} '{name}' (known: {shown or 'none'})"
        super().__init__(message + (f"; {hint}" if hint else ""))


class JudgeError(GauntletError):
    """The judge's own infrastructure failed."""


class WorkerLost(JudgeError):
    """A worker that ran only trusted code died or broke its protocol."""


class RecordError(GauntletError):
    """A run directory or one of its records cannot be read or written."""


class RunInterrupted(GauntletError):
    """A run stopped by the user; what was recorded stays, and `--resume` finishes it."""

    def __init__(self, run_dir: str, recorded: int, total: int) -> None:
        self.run_dir = run_dir
        super().__init__(
            f"run interrupted: {recorded} of {total} attempts recorded in '{run_dir}'; the "
            f"attempts that were running were stopped and are not recorded; finish it with "
            f"'gauntlet run --resume {run_dir}'"
        )
