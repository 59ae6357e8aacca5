"""Device names: their kind and their index."""

from __future__ import annotations

import pytest

from gauntlet import devices


@pytest.mark.parametrize(
    ("name", "kind", "index"),
    [("cuda:1", "cuda", 1), ("cuda", "cuda", 0), ("rocm:3", "cuda", 3), ("cpu", "cpu", 0)],
)
def test_a_device_name_gives_its_kind_and_index(name: str, kind: str, index: int) -> None:
    assert devices.kind_of(name) == kind
    assert devices.index_of(name) == index
