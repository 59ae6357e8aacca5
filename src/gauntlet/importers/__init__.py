"""Importers of the field's problem sets into ordinary task folders (docs/importers.md).

Only KernelBench so far (`import_kernelbench`). A problem's code never runs in the importer's
process: `kbprobe` runs it in a child process started through `gauntlet.process`.
"""

from gauntlet.importers.kernelbench import ImportOptions, import_kernelbench
from gauntlet.importers.report import ImportReport, ProblemReport

__all__ = ["ImportOptions", "ImportReport", "ProblemReport", "import_kernelbench"]
