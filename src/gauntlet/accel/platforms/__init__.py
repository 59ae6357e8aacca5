"""The built-in platforms; importing this package registers each of them (`@platform`)."""

from gauntlet.accel.platforms import npu, rvv, tile

__all__ = ["npu", "rvv", "tile"]
