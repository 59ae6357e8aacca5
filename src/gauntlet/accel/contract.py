"""The memory contract between a task and a kernel: named HBM regions and who may write them.

A task builds its contract from its configuration, for instance::

    MemoryContract.pack(
        inputs={"x": (m, k), "w": (k, n)},
        outputs={"y": (m, n)},
        scratch={"tmp": (m, n)},
        dtype="bfloat16",
    )

`pack` lays the regions out in that order, each at an address aligned to `align` bytes and
separated by an unmapped guard gap, so a kernel that runs off the end of one region faults instead
of silently reading the next. The simulator loads the inputs into their regions, lets the program
write only outputs and scratch, and reads the outputs back. The calling convention hands region `i`
(in contract order) to the program in address register `a<i>`, and the assembler knows each
region's base address under its name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

Role = Literal["input", "output", "scratch"]
DType = Literal["float32", "bfloat16"]

#: Bytes per element of each HBM element type.
ITEMSIZE: dict[str, int] = {"float32": 4, "bfloat16": 2}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Region(BaseModel):
    """One named array in HBM."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Identifier; also the assembler symbol holding the base address."""
    role: Role
    """`input` (read-only, loaded before the run), `output` (read back after) or `scratch`."""
    dtype: DType
    shape: tuple[int, ...]
    base: int
    """Byte address of element 0; elements are stored row-major."""

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not _NAME.fullmatch(name):
            raise ValueError(f"region name '{name}' is not an identifier")
        return name

    @field_validator("shape")
    @classmethod
    def _positive(cls, shape: tuple[int, ...]) -> tuple[int, ...]:
        if not shape or any(d <= 0 for d in shape):
            raise ValueError(f"shape {shape} must have at least one dimension, all positive")
        return shape

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return ITEMSIZE[self.dtype]

    @property
    def elements(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def size_bytes(self) -> int:
        """Bytes occupied."""
        return self.elements * self.itemsize

    @property
    def end(self) -> int:
        """First byte address after the region."""
        return self.base + self.size_bytes

    @property
    def writable(self) -> bool:
        """Whether the program may write it."""
        return self.role != "input"


class MemoryContract(BaseModel):
    """The HBM regions of one task configuration, in calling-convention order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    regions: tuple[Region, ...]

    @model_validator(mode="after")
    def _consistent(self) -> MemoryContract:
        names = [r.name for r in self.regions]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"region names must be unique; repeated: {', '.join(duplicates)}")
        ordered = sorted(self.regions, key=lambda r: r.base)
        for region in ordered:
            if region.base <= 0 or region.base % region.itemsize:
                raise ValueError(
                    f"region '{region.name}' base {region.base:#x} must be positive and a "
                    f"multiple of its element size {region.itemsize}"
                )
        for first, second in zip(ordered, ordered[1:], strict=False):
            if first.end > second.base:
                raise ValueError(f"regions '{first.name}' and '{second.name}' overlap")
        return self

    @classmethod
    def pack(
        cls,
        *,
        inputs: Mapping[str, tuple[int, ...]],
        outputs: Mapping[str, tuple[int, ...]],
        scratch: Mapping[str, tuple[int, ...]] | None = None,
        dtype: DType = "float32",
        dtypes: Mapping[str, DType] | None = None,
        base: int = 0x10000,
        align: int = 4096,
        guard: int = 4096,
    ) -> MemoryContract:
        """Lay regions out one after another: inputs, then outputs, then scratch.

        Args:
            inputs: Region name -> shape, read-only, loaded before the run.
            outputs: Region name -> shape, read back after the run.
            scratch: Region name -> shape, writable, neither loaded nor read back.
            dtype: Element type of every region not named in `dtypes`.
            dtypes: Per-region element types.
            base: Address of the first region (addresses below it are unmapped).
            align: Alignment of each region's base address, in bytes.
            guard: Unmapped bytes left after each region.
        """
        per_region = dict(dtypes or {})
        regions: list[Region] = []
        address = base
        groups: tuple[tuple[Role, Mapping[str, tuple[int, ...]]], ...] = (
            ("input", inputs),
            ("output", outputs),
            ("scratch", scratch or {}),
        )
        for role, shapes in groups:
            for name, shape in shapes.items():
                region = Region(
                    name=name,
                    role=role,
                    dtype=per_region.pop(name, dtype),
                    shape=tuple(int(d) for d in shape),
                    base=address,
                )
                regions.append(region)
                address = _round_up(region.end + guard, align)
        if per_region:
            raise ValueError(f"dtypes names unknown regions: {', '.join(sorted(per_region))}")
        return cls(regions=tuple(regions))

    def region(self, name: str) -> Region:
        """The region with this name."""
        for region in self.regions:
            if region.name == name:
                return region
        known = ", ".join(r.name for r in self.regions)
        raise KeyError(f"no region '{name}' in the memory contract (regions: {known})")

    def with_role(self, role: Role) -> list[Region]:
        """The regions of one role, in contract order."""
        return [r for r in self.regions if r.role == role]

    @property
    def end(self) -> int:
        """First byte address after the last region."""
        return max((r.end for r in self.regions), default=0)

    def symbols(self) -> dict[str, int]:
        """Assembler symbols: each region's name -> its base address."""
        return {r.name: r.base for r in self.regions}


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple
