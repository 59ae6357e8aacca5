"""Importers of the field's problem sets into ordinary task folders (docs/importers.md).

KernelBench (`import_kernelbench`) and robust-kbench (`import_robust_kbench`, through the
KernelBench machinery). A problem's code never runs in the importer's
process: `kbprobe` runs it in a child process started through `gauntlet.process`.
"""

from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench
from gauntlet.importers.report import ImportReport, ProblemReport
from gauntlet.importers.robustkbench import import_robust_kbench

__all__ = [
    "ImportOptions",
    "ImportReport",
    "ProblemReport",
    "import_kernelbench",
    "import_robust_kbench",
]
