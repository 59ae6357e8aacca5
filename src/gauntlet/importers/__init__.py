"""Importers of the field's problem sets into ordinary task folders (docs/importers.md).

KernelBench (`kernelbench.import_kernelbench`) and robust-kbench
(`robustkbench.import_robust_kbench`, through the KernelBench machinery), GPU MODE's
reference-kernels (`gpumode.import_gpumode`). A problem's code never runs in the importer's
process: `kbprobe` runs it in a child process started through `gauntlet.process`, and GPU
MODE's problems are only read.

The package itself imports nothing: `tasks check` imports `importers.degeneracy` for every
task, and the KernelBench machinery imports PyTorch, which no command line should wait for
unless it imports a problem set.
"""
