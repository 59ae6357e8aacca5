"""Memory cgroups for candidate workers: a cap that counts every page their processes touch.

A resource limit counts one process's mappings of one kind: `RLIMIT_AS` every mapping (the
CPU candidate's cap), `RLIMIT_DATA` only the heap and private writable mappings (a GPU
candidate's cap: CUDA reserves virtual ranges of many GiB, which rule out the address space).
Shared anonymous mappings, a memory file mapped shared and pinned host memory are counted by
neither, so a GPU submission could take the host's memory and let the kernel's OOM killer pick
the judge. A memory cgroup counts every page charged to the processes in it, whatever maps it,
and kills one of *them* when they pass its limit.

`MemoryCgroup.create` makes one under the judge's own cgroup, where this machine lets this
process: cgroup v2 first (the judge's cgroup must have the memory controller, or let it be
enabled for its children: a delegated subtree), else v1's memory hierarchy. `available` says
why not where it cannot (an unprivileged user, no writable hierarchy, a v2 cgroup that holds
processes and has no memory controller for its children); the judge then records that reason
and judges on without one. Each cgroup is named `gauntlet-<judge pid>-<n>`: one left behind by a
judge that died is removed by the next judge to make one there (`_reap_abandoned`).

Charges stay with the cgroup that made them when a process moves (v1's default, v2 always),
so a cgroup counts only what its processes touch after they moved in.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gauntlet import process

logger = logging.getLogger(__name__)

#: The prefix of the cgroups made here (then the judge's pid and a count).
PREFIX = "gauntlet-"
#: Seconds `MemoryCgroup.remove` waits for the processes it killed to leave the cgroup.
REMOVE_WAIT_S = 5.0
_REMOVE_POLL_S = 0.01

_counter = itertools.count()


class CgroupUnavailable(OSError):
    """No memory cgroup can be made here; the message says why."""


@dataclass(frozen=True)
class _Parent:
    """The judge's own cgroup in a hierarchy with the memory controller."""

    version: Literal[1, 2]
    path: Path


def _mountinfo() -> list[tuple[Path, str, str, set[str]]]:
    """Cgroup mounts: (mount point, root of the hierarchy shown there, fs type, options)."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            # Optional fields end at "-": then the fs type, the source and the super options.
            tail = fields[fields.index("-") + 1 :]
            if tail[0] in ("cgroup", "cgroup2"):
                options = set(tail[2].split(",")) if len(tail) > 2 else set()
                found.append((Path(fields[4]), fields[3], tail[0], options))
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per v1 controller, and its v2 cgroup under the key ''."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _shown_at(mount: Path, root: str, own: str) -> Path | None:
    """Where cgroup `own` is under a mount showing the hierarchy from `root`, if it shows it."""
    if own != root and not own.startswith(root.rstrip("/") + "/"):
        return None
    return mount / os.path.relpath(own, root)


def _find_parent() -> _Parent | str:
    """The judge's cgroup to make memory cgroups under, or why there is none."""
    own = _own_cgroups()
    reasons: list[str] = []
    for mount, root, fstype, _ in _mountinfo():
        if fstype != "cgroup2" or "" not in own:
            continue
        path = _shown_at(mount, root, own[""])
        if path is None:
            continue
        try:
            if "memory" not in (path / "cgroup.controllers").read_text().split():
                reasons.append(f"cgroup v2 '{path}' has no memory controller")
                continue
            if "memory" not in (path / "cgroup.subtree_control").read_text().split():
                # Refused (EBUSY) where the judge's cgroup holds processes and is not the root:
                # v2 lets a cgroup's children have a controller only where it holds none.
                (path / "cgroup.subtree_control").write_text("+memory")
        except OSError as err:
            reasons.append(
                f"cgroup v2 '{path}' cannot give its children the memory controller: "
                f"{err.strerror or err}"
            )
            continue
        return _Parent(2, path)
    for mount, root, fstype, options in _mountinfo():
        if fstype != "cgroup" or "memory" not in options or "memory" not in own:
            continue
        path = _shown_at(mount, root, own["memory"])
        if path is not None and path.is_dir():
            return _Parent(1, path)
    reasons.append("no cgroup v1 memory hierarchy shows this process's cgroup")
    return "; ".join(reasons)


@functools.cache
def available() -> str | None:
    """None where a memory cgroup can be made here, else why not (probed once, then kept)."""
    parent = _find_parent()
    if isinstance(parent, str):
        problem = parent
    else:
        probe = parent.path / f"{PREFIX}{os.getpid()}-probe"
        try:
            probe.mkdir()
            probe.rmdir()
            return None
        except OSError as err:
            problem = f"cannot make a cgroup under '{parent.path}': {err.strerror or err}"
    # Once: the answer is kept, and each judgment records it in its verdict.
    logger.warning("no memory cgroup for candidate workers: %s", problem)
    return problem


class MemoryCgroup:
    """A memory cgroup of one candidate worker's processes, made under the judge's own."""

    def __init__(self, path: Path, version: Literal[1, 2]) -> None:
        self.path = path
        self.version = version
        self.limit_bytes = 0
        """Its limit (0: none)."""

    @classmethod
    def create(cls, limit_bytes: int) -> MemoryCgroup:
        """A new, empty memory cgroup limited to `limit_bytes` (`limit`).

        Raises:
            CgroupUnavailable: This machine does not let this process make one, or limit it
                (why, in it).
        """
        problem = available()
        parent = _find_parent()
        if problem is not None or isinstance(parent, str):
            raise CgroupUnavailable(problem or str(parent))
        _reap_abandoned(parent.path)
        path = parent.path / f"{PREFIX}{os.getpid()}-{next(_counter)}"
        try:
            path.mkdir()
        except OSError as err:
            raise CgroupUnavailable(f"cannot make '{path}': {err.strerror or err}") from err
        cgroup = cls(path, parent.version)
        try:
            cgroup.limit(limit_bytes)
        except OSError as err:
            cgroup.remove()
            raise CgroupUnavailable(f"cannot limit '{path}': {err.strerror or err}") from err
        return cgroup

    def __str__(self) -> str:
        return f"cgroup v{self.version} {self.limit_bytes >> 20} MiB"

    def limit(self, limit_bytes: int) -> None:
        """Cap the memory of its processes at `limit_bytes`, swap included where it can.

        Swap is off for it where the kernel lets it be controlled (v2's `memory.swap.max`,
        v1's `memory.memsw.limit_in_bytes`): memory pushed to swap would escape the limit.

        Raises:
            OSError: The kernel refused the limit.
        """
        if self.version == 2:
            (self.path / "memory.max").write_text(str(limit_bytes))
            _write_if_present(self.path / "memory.swap.max", "0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            # Memory plus swap, at least the memory limit: equal means no swap.
            _write_if_present(self.path / "memory.memsw.limit_in_bytes", str(limit_bytes))
        self.limit_bytes = limit_bytes

    def admit(self, pids: list[int]) -> None:
        """Move processes in, each with all its threads; those gone meanwhile are skipped.

        Raises:
            OSError: The kernel refused to move a process that is still alive.
        """
        for pid in pids:
            try:
                (self.path / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                continue
            except OSError as err:
                if err.errno == errno.ESRCH:
                    continue
                raise

    def admit_tree(self, child: process.Child) -> None:
        """Move `child` and its tree in (`Child.tree`: found again until none is new).

        Raises:
            OSError: The kernel refused to move a process that is still alive.
        """
        moved: set[int] = set()
        while True:
            new = sorted({child.pid, *child.tree()} - moved)
            if not new:
                return
            self.admit(new)
            moved |= set(new)

    def pids(self) -> list[int]:
        """The processes in it now."""
        try:
            text = (self.path / "cgroup.procs").read_text()
        except FileNotFoundError:
            return []
        return [int(line) for line in text.split()]

    def oom_kills(self) -> int:
        """Processes the kernel killed in it for passing its limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            text = (self.path / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self, wait_s: float = REMOVE_WAIT_S) -> None:
        """Kill whatever is left in it and remove it. A failure is logged, never raised.

        What a submission started may outlive the worker's own process (in a PID namespace
        the kernel kills it with the namespace's init, not at once): killed here, then the
        cgroup is removed once it holds no process.
        """
        deadline = time.monotonic() + wait_s
        while True:
            left = self.pids()
            if not left:
                try:
                    self.path.rmdir()
                    return
                except FileNotFoundError:
                    return
                except OSError as err:
                    if err.errno != errno.EBUSY or time.monotonic() > deadline:
                        logger.warning("memory cgroup '%s' not removed: %s", self.path, err)
                        return
            elif time.monotonic() > deadline:
                logger.warning(
                    "memory cgroup '%s' not removed: processes %s outlived SIGKILL",
                    self.path,
                    left[:5],
                )
                return
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(_REMOVE_POLL_S)


def _write_if_present(path: Path, value: str) -> None:
    """Write a control file the kernel may not have (swap accounting off, an old kernel)."""
    try:
        path.write_text(value)
    except FileNotFoundError:
        logger.debug("no '%s' here: left as it is", path)


def _reap_abandoned(parent: Path) -> None:
    """Remove the cgroups made here by judges that are gone (their processes killed first)."""
    for path in parent.glob(f"{PREFIX}*-*"):
        owner = path.name[len(PREFIX) :].split("-")[0]
        if not owner.isdigit() or _alive(int(owner)):
            continue
        MemoryCgroup(path, 2 if (path / "cgroup.controllers").exists() else 1).remove(wait_s=1.0)


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (a pid reused since is taken for the judge: left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
