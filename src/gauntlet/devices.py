"""Devices: what is here, what each can run, and which one a task gets.

Kinds: `cpu` (PyTorch on the CPU, Triton's interpreter), `cuda:N` (NVIDIA GPUs, and AMD GPUs
through PyTorch's HIP build, reported as `rocm:N`), `sim:<platform>` (accelerator simulators).
"""

from __future__ import annotations

import importlib.util
import platform
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gauntlet.errors import ConfigError
from gauntlet.task import Task


class DeviceInfo(BaseModel):
    """One device and what it offers."""

    model_config = ConfigDict(frozen=True)

    name: str
    """`cpu`, `cuda:0`, `rocm:0`, `sim:npu`."""
    kind: str
    """`cpu`, `cuda`, `rocm` or `sim`."""
    description: str
    details: dict[str, str] = Field(default_factory=dict)


def kind_of(device: str) -> str:
    """The task-facing kind of a device name: `cuda:1` -> `cuda`, `sim:npu` -> `sim:npu`."""
    if device.startswith("sim:"):
        return device
    return device.split(":")[0].replace("rocm", "cuda")


def index_of(device: str) -> int:
    """The index of a GPU device's name: `cuda:1` -> 1, `cuda` -> 0."""
    return int(device.split(":")[1]) if ":" in device else 0


@lru_cache(maxsize=1)
def list_devices() -> tuple[DeviceInfo, ...]:
    """Every device here: the CPU, GPUs PyTorch sees, and the accelerator simulators."""
    found = [
        DeviceInfo(
            name="cpu",
            kind="cpu",
            description=f"{platform.machine()}: PyTorch on the CPU, Triton's interpreter",
        )
    ]
    found += _gpus()
    found += [
        DeviceInfo(name=f"sim:{p}", kind="sim", description=f"simulated accelerator '{p}'")
        for p in _platforms()
    ]
    return tuple(found)


def cpu_model() -> str:
    """The CPU's model name (`/proc/cpuinfo`), else what `platform` knows.

    For benchmark records, which name the machine they were measured on.
    """
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def _gpus() -> list[DeviceInfo]:
    if importlib.util.find_spec("torch") is None:
        return []
    import torch

    if not torch.cuda.is_available():
        return []
    kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
    driver = _driver_version()
    gpus = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        gpus.append(
            DeviceInfo(
                name=f"{kind}:{index}",
                kind=kind,
                description=props.name,
                details={
                    "memory_gib": f"{props.total_memory / 2**30:.1f}",
                    "sms": str(props.multi_processor_count),
                    "l2_mib": f"{getattr(props, 'L2_cache_size', 0) / 2**20:.0f}",
                    "capability": f"{props.major}.{props.minor}",
                    "torch": torch.__version__,
                    "cuda": str(torch.version.cuda or torch.version.hip),
                    **({"driver": driver} if driver else {}),
                },
            )
        )
    return gpus


def _driver_version() -> str:
    """The NVIDIA driver's version through NVML, where it can be read."""
    try:
        import pynvml
    except ImportError:
        return ""
    try:
        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
    except pynvml.NVMLError:
        return ""
    return version.decode() if isinstance(version, bytes) else str(version)


def _platforms() -> list[str]:
    if importlib.util.find_spec("gauntlet.accel") is None:
        return []
    from gauntlet import accel

    names = getattr(accel, "platform_names", None)
    return list(names()) if callable(names) else []


def device_for(task: Task, requested: str | None) -> str | None:
    """The device a task runs on: the requested one if the task can use it, else the best here.

    Returns None when the task cannot run on the requested device (or on any device here).
    """
    kinds = task.spec.device_kinds()
    if requested is not None:
        return requested if kind_of(requested) in kinds else None
    names = [d.name for d in list_devices()]
    for preferred in ("cuda", "sim", "cpu"):
        for name in names:
            if kind_of(name) in kinds and (name.startswith(preferred)):
                return name
    return None


def check_device(name: str) -> None:
    """Raise ConfigError for a device that is not here."""
    names = [d.name for d in list_devices()]
    if name not in names and not (name == "cuda" and any(n.startswith("cuda:") for n in names)):
        raise ConfigError(f"device '{name}' is not available here (available: {', '.join(names)})")
