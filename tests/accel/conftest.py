"""Fixtures of the accelerator tests: the default npu, fresh machines, and a one-call runner."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pytest

from gauntlet.accel import MemoryContract, Platform, SimResult, assemble, get_platform, simulate
from gauntlet.accel.machine import Machine


@pytest.fixture(scope="session")
def npu() -> Platform:
    return get_platform("npu")


@pytest.fixture
def machine(npu: Platform) -> Machine:
    """A fresh npu with no memory contract (SRAMs and registers only)."""
    return Machine(npu)


Runner = Callable[..., SimResult]


@pytest.fixture(scope="session")
def run_npu(npu: Platform) -> Runner:
    """Assemble and simulate `source` against a contract of fp32 regions (all given as shapes)."""

    def run(
        source: str,
        *,
        inputs: Mapping[str, np.ndarray] | None = None,
        outputs: Mapping[str, tuple[int, ...]] | None = None,
        scratch: Mapping[str, tuple[int, ...]] | None = None,
        dtype: str = "float32",
        symbols: Mapping[str, int] | None = None,
        step_limit: int = 1_000_000,
        platform: Platform | None = None,
    ) -> SimResult:
        given = dict(inputs or {"x": np.arange(64 * 64, dtype=np.float32).reshape(64, 64)})
        contract = MemoryContract.pack(
            inputs={k: v.shape for k, v in given.items()},
            outputs=dict(outputs or {"y": (64, 64)}),
            scratch=dict(scratch or {}),
            dtype=dtype,  # type: ignore[arg-type]
        )
        target = platform or npu
        program = assemble(target, source, {**contract.symbols(), **(symbols or {})})
        return simulate(program, contract, given, step_limit=step_limit)

    return run
