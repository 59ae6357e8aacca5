"""Platforms: an ISA plus the machine it runs on, built from hardware parameters.

A platform module (`platforms/<name>.py`) declares a pydantic model of its hardware parameters,
ships their defaults in `platforms/<name>.toml`, and registers a builder with `@platform(...)`.
`get_platform(name, overrides)` validates the defaults updated with the overrides (task configs
vary hardware sizes) and builds, once per distinct set of parameters, a `Platform`: the ISA
table, the execution units, the on-chip memory spaces and the manual's prose chapters.
"""

from __future__ import annotations

import dataclasses
import importlib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from gauntlet.accel.isa import ISA
from gauntlet.errors import ConfigError, UnknownNameError

UnitKind = Literal["frontend", "compute", "dma"]


@dataclass(frozen=True)
class Unit:
    """An execution unit with its own timeline.

    The `frontend` issues every instruction in program order, one per cycle, and executes scalar
    and control instructions itself. `compute` and `dma` units take instructions from a queue of
    `queue_depth` entries and run them one after another; the front end stalls only when that
    queue is full or when it must wait for a result (`dwait`, a register written by a unit).
    """

    name: str
    title: str
    kind: UnitKind
    queue_depth: int = 1
    tracked: int = 0
    """Results in flight the unit keeps track of (0: queue_depth + 4, enough for units whose
    results land soon after they finish). A unit whose results land long after (a memory port
    with a latency) holds at most this many; another waits for the oldest to land."""


@dataclass(frozen=True)
class Space:
    """An on-chip memory of fp32 words (an SRAM), addressed in words."""

    name: str
    title: str
    words: int
    align: int
    """Every access starts at a multiple of this many words."""


@dataclass(frozen=True)
class Chapter:
    """A prose chapter of the manual (memory model, calling convention, timing)."""

    title: str
    markdown: str


@dataclass(frozen=True)
class Microbenchmark:
    """A small program whose measured cycles document one cost formula in the manual."""

    name: str
    mnemonic: str
    """The instruction whose cost it measures."""
    source: str
    """Assembly; it may use the platform's symbols and `x`, `y` (contract regions)."""
    predicted: Callable[[Mapping[str, int | float]], int]
    """The cycles the cost model predicts for it, from the platform's parameters."""
    note: str = ""
    shape: tuple[int, int] = (64, 64)
    """Shape of the fp32 input region `x` and output region `y` the program may use."""


@dataclass(frozen=True)
class Platform:
    """One simulated accelerator with concrete hardware parameters."""

    name: str
    title: str
    summary: str
    params: BaseModel
    isa: ISA
    units: tuple[Unit, ...]
    spaces: tuple[Space, ...]
    chapters: tuple[Chapter, ...]
    microbenchmarks: tuple[Microbenchmark, ...]
    peak_flops_per_cycle: float
    """Floating-point operations per cycle the compute units sustain at best."""
    hbm_bytes_per_cycle: float
    """HBM bandwidth in bytes per cycle."""
    clock_ghz: float
    hbm_bytes: int
    """HBM capacity: the memory contract must end below this address."""
    defaults: BaseModel | None = None
    """The parameters without overrides (set by `get_platform`)."""
    syntax: str | None = None
    """The manual's assembly-syntax chapter, where the platform's differs from the default."""
    grid: tuple[int, int] | None = None
    """For an array of tiles: its rows and columns. Every tile runs the program on a machine of
    its own and `simulate` runs them together (`gauntlet.accel.array`); None: one machine."""
    fault_docs: Mapping[str, str] | None = field(default=None, compare=False)
    """The manual's fault table (kind -> meaning) in the platform's terms, where it differs
    from the default `FAULT_DOCS`."""
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What is derived from the platform once and reused: compiled step factories (`codegen`),
    the rendered manual (`docs`)."""
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {u.name: i for i, u in enumerate(self.units)})
        frontends = [u for u in self.units if u.kind == "frontend"]
        if len(frontends) != 1:
            raise ValueError(f"platform '{self.name}' needs exactly one frontend unit")
        for ins in self.isa.instructions:
            if ins.unit not in self._index:
                raise ValueError(f"instruction '{ins.mnemonic}' names unknown unit '{ins.unit}'")

    def unit_index(self, name: str) -> int:
        """Position of a unit in `units` (and in the simulator's per-unit arrays)."""
        return self._index[name]

    def space(self, name: str) -> Space:
        """The on-chip memory space with this name."""
        for space in self.spaces:
            if space.name == name:
                return space
        raise KeyError(name)

    def param_values(self) -> dict[str, int | float]:
        """Every hardware parameter by name."""
        return {k: v for k, v in self.params.model_dump().items() if isinstance(v, int | float)}

    def symbols(self) -> dict[str, int | float]:
        """Assembler symbols every program may use: each parameter's name in upper case."""
        return {k.upper(): v for k, v in self.param_values().items()}

    def overrides(self) -> dict[str, int | float]:
        """The parameters that differ from the platform's defaults."""
        defaults = (self.defaults or self.params).model_dump()
        return {k: v for k, v in self.param_values().items() if defaults.get(k) != v}

    def roofline_cycles(self, flops: float, hbm_bytes: float) -> float:
        """The fewest cycles a kernel doing this work could take: compute- or memory-bound."""
        return max(flops / self.peak_flops_per_cycle, hbm_bytes / self.hbm_bytes_per_cycle)

    def cycles_to_us(self, cycles: float) -> float:
        """Convert simulated cycles to microseconds at this platform's clock."""
        return cycles / (self.clock_ghz * 1e3)


P = TypeVar("P", bound=BaseModel)
Builder = Callable[[P], Platform]


@dataclass(frozen=True)
class _Entry:
    params: type[BaseModel]
    defaults_toml: Path
    builder: Callable[[BaseModel], Platform]


_REGISTRY: dict[str, _Entry] = {}

#: Modules that register platforms; imported on first use so `import gauntlet` stays light.
_PLATFORM_MODULES = ("gauntlet.accel.platforms",)


def platform(name: str, params: type[P], defaults_toml: Path) -> Callable[[Builder[P]], Builder[P]]:
    """Register a platform builder under `name` (the only place a platform is registered)."""

    def register(builder: Builder[P]) -> Builder[P]:
        if name in _REGISTRY:
            raise ValueError(f"platform '{name}' is registered twice")
        _REGISTRY[name] = _Entry(params, defaults_toml, builder)  # type: ignore[arg-type]
        return builder

    return register


def platform_names() -> list[str]:
    """Names of every registered platform."""
    _load_registry()
    return sorted(_REGISTRY)


def get_platform(name: str, overrides: Mapping[str, int | float] | None = None) -> Platform:
    """The platform `name` with its default parameters updated by `overrides`.

    Raises:
        UnknownNameError: no such platform.
        ConfigError: an override names an unknown parameter or gives an invalid value.
    """
    _load_registry()
    if name not in _REGISTRY:
        raise UnknownNameError("platform", name, sorted(_REGISTRY))
    key = tuple(sorted((overrides or {}).items()))
    return _build(name, key)


@lru_cache(maxsize=64)
def _build(name: str, overrides: tuple[tuple[str, int | float], ...]) -> Platform:
    entry = _REGISTRY[name]
    defaults = _read_defaults(name, entry)
    known = set(entry.params.model_fields)
    unknown = sorted(k for k, _ in overrides if k not in known)
    if unknown:
        raise ConfigError(
            f"unknown {name} parameter(s) {', '.join(repr(u) for u in unknown)} "
            f"(known: {', '.join(sorted(known))})"
        )
    try:
        params = entry.params.model_validate({**defaults.model_dump(), **dict(overrides)})
    except ValidationError as err:
        raise ConfigError(f"invalid {name} parameters {dict(overrides)}: {err}") from err
    return dataclasses.replace(entry.builder(params), defaults=defaults)


@lru_cache(maxsize=16)
def _read_defaults(name: str, entry: _Entry) -> BaseModel:
    path = entry.defaults_toml
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return entry.params.model_validate(data)
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as err:
        raise ConfigError(f"{path}: cannot load the default {name} parameters: {err}") from err


def _load_registry() -> None:
    for module in _PLATFORM_MODULES:
        importlib.import_module(module)
