"""Kernel Gauntlet: a benchmark and harness for AI agents that write compute kernels."""

__version__ = "0.1.0"
