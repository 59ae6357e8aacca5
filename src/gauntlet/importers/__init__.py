"""Importers of the field's problem sets into ordinary task folders (docs/importers.md).

KernelBench (`import_kernelbench`) and robust-kbench (`import_robust_kbench`, through the
KernelBench machinery), GPU MODE's reference-kernels (`import_gpumode`). A problem's code never
runs in the importer's process: `kbprobe` runs it in a child process started through
`gauntlet.process`, and GPU MODE's problems are only read.
"""

from gauntlet.importers.gpumode import GpuModeOptions, import_gpumode
from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench
from gauntlet.importers.report import ImportReport, ProblemReport
from gauntlet.importers.robustkbench import import_robust_kbench

__all__ = [
    "GpuModeOptions",
    "ImportOptions",
    "ImportReport",
    "ProblemReport",
    "import_gpumode",
    "import_kernelbench",
    "import_robust_kbench",
]
