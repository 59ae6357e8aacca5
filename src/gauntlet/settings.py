"""Every environment variable Kernel Gauntlet reads, declared once."""

from __future__ import annotations

import os
from pathlib import Path

#: Root of the shipped task suite; overridable to point at another suite folder.
TASKS_DIR = Path(
    os.environ.get("GAUNTLET_TASKS_DIR", Path(__file__).resolve().parents[2] / "tasks")
)

#: Where build artifacts are cached by content hash.
CACHE_DIR = Path(os.environ.get("GAUNTLET_CACHE_DIR", Path.home() / ".cache" / "kernel-gauntlet"))

#: Where the per-GPU judgment locks live: one folder for the whole machine, whatever each run's
#: cache folder or user (two runs with different caches time the same GPU).
LOCK_DIR = Path(os.environ.get("GAUNTLET_LOCK_DIR", "/tmp/kernel-gauntlet-locks"))

#: Judgments that may hold one GPU at once (`judge/devicelock.py`): they share it for their untimed
#: work (compiles, correctness trials, the reference's run) and each times it alone; the bound
#: keeps their memory on the GPU (the processes of each) from oversubscribing it. 1: one
#: judgment at a time, as before the lock had two modes.
JUDGMENTS_PER_GPU = max(1, int(os.environ.get("GAUNTLET_JUDGMENTS_PER_GPU", "3")))

#: Bytes of float64 references the judge may hold on the host at once (`judge/footprint.py`,
#: `reference_budget_bytes`): 0, the default, is a quarter of the host's memory. It bounds the
#: references kept across judgments, each frame of the reference worker's, and what a judgment
#: holds whole: configs past it are streamed (tests force it low on the CPU to do so).
REFERENCE_BYTES = int(os.environ.get("GAUNTLET_REFERENCE_BYTES", "0"))

#: Whether a GPU candidate's processes get a memory cgroup (`memcg.py`, on: "on"). Off by
#: default until it has run on a GPU: its limit is the candidate's data-segment cap, and the
#: candidate's outputs leave it through pinned staging memory and memory files that the cgroup
#: charges to it (not its data segment), so an honest kernel with outputs larger than the cap
#: (`tests/gpu/test_judge_cuda.py`'s 1.25 GiB output, KernelBench L1/23's 6.4 GB) would be
#: killed. Off, the candidate's shared mappings stay uncounted (a known hole, README.md).
MEMORY_CGROUP = os.environ.get("GAUNTLET_MEMORY_CGROUP", "off") == "on"

#: Whether the judge's workers are forked from a zygote that has imported PyTorch, Triton and
#: TorchDynamo once (`gauntlet.zygote`; off: "off", each worker a fresh interpreter that imports
#: them itself, about 5 s of CPU; for comparing the two and for finding a fault of the zygote's).
ZYGOTE = os.environ.get("GAUNTLET_ZYGOTE", "on") != "off"

#: Names of the variables read elsewhere (each module reads its own at the point of use).
API_KEY_ENV = "OPENAI_API_KEY"
"""The key of the OpenAI-compatible endpoint the `toolcall` agent talks to."""
BASE_URL_ENV = "OPENAI_BASE_URL"
SANDBOX_ENV = "GAUNTLET_SANDBOX"
"""Default sandbox of CLI agents: auto, bwrap, confine, docker or none."""
SANDBOX_NETWORK_ENV = "GAUNTLET_SANDBOX_NETWORK"
"""Network inside the sandbox: on or off."""
WS_SOCKET_ENV = "GAUNTLET_WS_SOCKET"
"""The feedback tools' server socket, given to `gauntlet-ws` inside a sandbox."""
TRITON_TRUSTED_CACHE_ENV = "GAUNTLET_TRITON_TRUSTED_CACHE"
"""Set by the judge in a candidate's worker: the Triton cache it reads but never writes."""
SPARE_WORKERS_ENV = "GAUNTLET_SPARE_WORKERS"
"""Spare judge workers a run keeps started per role and device (default: one per parallel
attempt on a host of 8 cores or more, else none; 0: none, every judgment starts cold)."""

#: Host cores below which a run keeps no spare workers by default, and a search agent's own judge
#: keeps one instead of two: a spare's imports then take a core from the judgment beside it
#: instead of an idle one (on 2 cores, the runner's tests took 215 s with spares and 143 s
#: without).
SPARES_MIN_CORES = 8

#: Environment variables a worker process keeps; everything else is scrubbed.
WORKER_ENV_KEEP = (
    "PATH",
    "PYTHONPATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "TORCH_CUDA_ARCH_LIST",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "TRITON_CACHE_DIR",
    "TORCH_EXTENSIONS_DIR",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
)


def env_flag(name: str) -> bool:
    """Whether a boolean environment variable is set to a true value."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}
