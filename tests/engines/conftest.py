"""One local Ray for the whole test session: 2 CPUs, no dashboard, a small object store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """The address of a real local Ray started for these tests (skipped where Ray is absent)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed ('make ray' installs it)")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=256 * 2**20,
        log_to_driver=False,
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
