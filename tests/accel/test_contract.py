"""Memory contracts: layout, guard gaps, validation, symbols."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gauntlet.accel import MemoryContract, Region


def test_pack_lays_out_regions_in_order_with_guards() -> None:
    contract = MemoryContract.pack(
        inputs={"x": (3, 5), "w": (7,)},
        outputs={"y": (2, 2)},
        scratch={"tmp": (10,)},
        dtype="bfloat16",
        dtypes={"y": "float32"},
    )
    names = [r.name for r in contract.regions]
    assert names == ["x", "w", "y", "tmp"]
    assert [r.role for r in contract.regions] == ["input", "input", "output", "scratch"]
    assert contract.region("y").dtype == "float32" and contract.region("x").itemsize == 2
    for first, second in zip(contract.regions, contract.regions[1:], strict=False):
        assert second.base >= first.end + 4096 and second.base % 4096 == 0
    assert contract.symbols() == {r.name: r.base for r in contract.regions}
    assert contract.regions[0].base == 0x10000
    assert [r.name for r in contract.with_role("input")] == ["x", "w"]


def test_contract_validation() -> None:
    with pytest.raises(ValueError, match="dtypes names unknown regions: z"):
        MemoryContract.pack(inputs={"x": (1,)}, outputs={}, dtypes={"z": "float32"})
    with pytest.raises(ValidationError, match="overlap"):
        MemoryContract(
            regions=(
                Region(name="a", role="input", dtype="float32", shape=(4,), base=0x1000),
                Region(name="b", role="output", dtype="float32", shape=(4,), base=0x1008),
            )
        )
    with pytest.raises(ValidationError, match="unique"):
        MemoryContract.pack(inputs={"x": (1,)}, outputs={}, scratch={"x": (1,)})
    with pytest.raises(ValidationError, match="not an identifier"):
        MemoryContract.pack(inputs={"x y": (1,)}, outputs={})
    with pytest.raises(ValidationError, match="positive"):
        MemoryContract.pack(inputs={"x": (0, 3)}, outputs={})
    with pytest.raises(KeyError, match="no region 'q'"):
        MemoryContract.pack(inputs={"x": (1,)}, outputs={}).region("q")
