"""Importers of the field's problem sets into ordinary task folders (docs/importers.md).

KernelBench (`import_kernelbench`) and robust-kbench (`import_robust_kbench`, through the
KernelBench machinery), GPU MODE's reference-kernels (`import_gpumode`). A problem's code never
runs in the importer's process: `kbprobe` runs it in a child process started through
`gauntlet.process`, and GPU MODE's problems are only read.

The names load on first use: `tasks check` imports `importers.degeneracy` for every task, and
the KernelBench machinery imports PyTorch, which no command line should wait for unless it
imports a problem set.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gauntlet.importers.gpumode import GpuModeOptions, import_gpumode
    from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench
    from gauntlet.importers.report import ImportReport, ProblemReport
    from gauntlet.importers.robustkbench import import_robust_kbench

_EXPORTS = {
    "GpuModeOptions": "gauntlet.importers.gpumode",
    "import_gpumode": "gauntlet.importers.gpumode",
    "ImportOptions": "gauntlet.importers.kernelbench",
    "import_kernelbench": "gauntlet.importers.kernelbench",
    "ImportReport": "gauntlet.importers.report",
    "ProblemReport": "gauntlet.importers.report",
    "import_robust_kbench": "gauntlet.importers.robustkbench",
}

__all__ = [
    "GpuModeOptions",
    "ImportOptions",
    "ImportReport",
    "ProblemReport",
    "import_gpumode",
    "import_kernelbench",
    "import_robust_kbench",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gauntlet.importers' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
