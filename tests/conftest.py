"""Shared fixtures and the test tiers: plain, `gpu` (--gpu), `slow` (--runslow), `live` (--live)."""

from __future__ import annotations

import signal

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gpu", action="store_true", help="run tests that need a CUDA device")
    parser.addoption("--runslow", action="store_true", help="run slow tests")
    parser.addoption("--live", action="store_true", help="run tests with real agents or network")


def pytest_configure(config: pytest.Config) -> None:
    # A test session started as a background job inherits SIGINT and SIGQUIT ignored, and so
    # would every process a test starts: Python then installs no KeyboardInterrupt handler,
    # and the tests of Ctrl-C would wait forever. The tests run as from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gates = {"gpu": "--gpu", "slow": "--runslow", "live": "--live"}
    for item in items:
        for marker, option in gates.items():
            if marker in item.keywords and not config.getoption(option):
                item.add_marker(pytest.mark.skip(reason=f"needs {option}"))
