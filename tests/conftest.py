"""Shared fixtures and the test tiers: plain, `gpu` (--gpu), `slow` (--runslow), `live` (--live)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from gauntlet.judge.verdict import PHASES

#: Tests the summary lists, slowest first.
SUMMARY_TESTS = 40
#: GPU test files whose tests take a minute or more each (KernelBench tasks, a search, the
#: CPU-against-GPU verdicts, CUDA builds), run first under --gpu: xdist hands out tests in
#: collection order, and started last these ended the run while the other workers idled
#: (gpu_check.sh passes `--maxschedchunk 1`, so they are spread over the workers, not handed
#: out in runs of consecutive tests). The CUDA build tests come last of them, so most start
#: after another long test, once one of them has put the units they all build (the fixture
#: task's baseline and expert) in their shared cache: started at once, each would build them.
GPU_FIRST = (
    "tests/gpu/test_kb_compat.py",
    "tests/agents/test_evolve.py",
    "tests/gpu/test_judge_cuda.py",
    "tests/judge/test_cuda_build.py",
)

#: Per GPU test (node id): its judgments' summed phases and its call's wall time, collected
#: from the reports (in xdist's controller too, where the workers' reports arrive).
_PHASES: dict[str, dict[str, float]] = {}
_WALLS: dict[str, float] = {}


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
    if config.getoption("--gpu"):
        first = {path: rank for rank, path in enumerate(GPU_FIRST)}
        items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))


@pytest.fixture(autouse=True)
def _judge_phases(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Under --gpu, a GPU test's judgments' phases, summed into its report.

    The GPU tier's wall time is mostly judgments waiting for the one GPU's lock and holding
    it; the summary at the end of the run says how long each test's did. Every judgment that
    gets past its build passes through `pipeline._check` once.
    """
    if not request.config.getoption("--gpu") or request.node.get_closest_marker("gpu") is None:
        yield
        return
    from gauntlet.judge import pipeline

    totals = dict.fromkeys(("judgments", *PHASES), 0.0)
    check = pipeline._check

    def summed(*args: Any, **kwargs: Any) -> Any:
        verdict = check(*args, **kwargs)
        totals["judgments"] += 1
        for name in PHASES:
            totals[name] += verdict.phases_s.get(name, 0.0)
        return verdict

    monkeypatch.setattr(pipeline, "_check", summed)
    yield
    request.node.user_properties.append(("judge_phases", totals))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _WALLS[report.nodeid] = report.duration
    for name, value in report.user_properties:
        if name == "judge_phases" and isinstance(value, dict):
            _PHASES[report.nodeid] = value


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The GPU tests' judge phases: totals, then the slowest tests' own."""
    if not _PHASES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("judge phases of the GPU tests (s)")
    columns = ("wall", "judgments", *PHASES)
    rows = {node: {"wall": _WALLS.get(node, 0.0), **phases} for node, phases in _PHASES.items()}
    totals = {c: sum(r.get(c, 0.0) for r in rows.values()) for c in columns}
    widths = [max(len(c), 6) for c in columns]

    def line(values: list[float], label: str) -> str:
        return " ".join(f"{v:{w}.1f}" for v, w in zip(values, widths, strict=True)) + "  " + label

    write(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)) + "  test")
    write(line([totals[c] for c in columns], f"all {len(rows)} tests"))
    for node in sorted(rows, key=lambda node: -rows[node]["wall"])[:SUMMARY_TESTS]:
        write(line([rows[node].get(c, 0.0) for c in columns], node))
