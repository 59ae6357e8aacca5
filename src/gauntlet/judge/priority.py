"""A spare worker imports at the lowest CPU priority and is judged at its normal one.

A spare (`spares.py`) imports PyTorch and Triton, seconds of a core, beside the judgment that
runs; on a machine with few cores those imports took CPU from the judgment. So a spare lowers
itself before its imports (`SpareLowering.lower`, in its working thread) and its main thread,
which is never lowered and only waits, lifts it back as soon as its imports are done or its
request arrives, whichever comes first (`SpareLowering.lift_when_due`): every thread back to
`SCHED_OTHER` at the nice value it was started with, its session's autogroup back to its nice.
A spare waiting for its request takes no CPU, so it waits lifted: a judgment that takes it
does not wait for a lowered process to be scheduled and to get an autogroup change past the
kernel's rate limit (seconds on a loaded machine, measured). The working thread reads its
request only once lifted (`SpareLowering.imported`): a main thread that watched the request's
pipe while the working thread read it could miss it, and both then waited for each other
until the judge gave up (`STARTUP_S`). A worker that cannot lift itself entirely never runs a
judgment (it exits, named why; taken meanwhile, the judge's `WorkerLost`, judged again with
cold workers): a judged candidate below the priority its baseline's timing had would be a
timing asymmetry of the judge's own.

Two kernel mechanisms (sched(7)), because which one counts depends on the machine:

- `SCHED_IDLE`, per thread, inherited by the threads it starts. Leaving it takes
  `CAP_SYS_NICE` or an `RLIMIT_NICE` that allows the thread's nice value (20 - nice <= limit;
  the usual limit, 0, never does), so a worker uses it only where a probe thread of its own
  got back from it (`_can_leave_idle`): as root, not in a confinement (whose user namespace has
  no capability over the host's scheduler) nor as an unprivileged user.
- The autogroup's nice (`/proc/self/autogroup`). Where autogroup is on and the process is in
  the root CPU cgroup, the scheduler shares the CPU between sessions first, and a policy or a
  nice value weighs only within a session; every worker is a session of its own, so there
  `SCHED_IDLE` alone changed nothing (this project's 2-core machine: a busy loop beside two
  others got 0.66 s of CPU in 3 s under `SCHED_IDLE`, 0.59 s at normal priority, 0.05 s at
  autogroup nice 19). Any process may raise its autogroup's nice and bring it back to 0 (only
  a negative value needs privilege); without `CAP_SYS_ADMIN` the kernel takes one change per
  100 ms on the whole machine (`EAGAIN`, tried again). Elsewhere it is harmless.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
from dataclasses import dataclass
from pathlib import Path

#: The autogroup nice value of a spare while it imports (the lowest).
SPARE_AUTOGROUP_NICE = 19
#: Seconds a spare keeps asking for its autogroup back at its nice when the kernel refused the
#: change for its rate (`EAGAIN`: one change per 100 ms on the whole machine). A spare that
#: gives up exits and its judgment is made again with cold workers, which costs more than this
#: wait; 2 s was too short under a loaded 2-core machine's `make test` (a spare's main thread,
#: in the lowered autogroup, asks rarely while other workers' changes take the slots).
AUTOGROUP_RETRY_S = 10.0
_AUTOGROUP = Path("/proc/self/autogroup")


@dataclass(frozen=True)
class Lowered:
    """What `lower` changed, to be put back."""

    autogroup_nice: int | None
    """The autogroup's nice value before (None: not changed)."""
    idle: bool
    """Whether the lowering thread went to `SCHED_IDLE`."""


def autogroup_nice(path: Path = _AUTOGROUP) -> int | None:
    """The nice value of a process's autogroup (None where the kernel has none)."""
    try:
        return int(path.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def _set_autogroup_nice(nice: int, retry_s: float) -> bool:
    """Set this session's autogroup nice value; False where the kernel refused it."""
    deadline = time.monotonic() + retry_s
    while True:
        try:
            _AUTOGROUP.write_text(str(nice))
            return True
        except OSError as err:
            if err.errno != errno.EAGAIN or time.monotonic() > deadline:
                return False
        time.sleep(0.02)


def _can_leave_idle() -> bool:
    """Whether a thread of this process gets back from `SCHED_IDLE` (tried on a thread)."""
    if not hasattr(os, "SCHED_IDLE"):
        return False
    came_back: list[bool] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            came_back.append(True)
        except OSError:
            came_back.append(False)

    thread = threading.Thread(target=probe, name="gauntlet-priority-probe")
    thread.start()
    thread.join()
    return came_back == [True]


def lower() -> Lowered:
    """Lower the calling thread (and the threads it starts) and this process's session."""
    before = autogroup_nice()
    changed = None
    if before is not None and before < SPARE_AUTOGROUP_NICE:
        # Not worth waiting for at the start: a spare left at its nice still works.
        if _set_autogroup_nice(SPARE_AUTOGROUP_NICE, retry_s=0.2):
            changed = before
    idle = _can_leave_idle()
    if idle:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    return Lowered(autogroup_nice=changed, idle=idle)


def idle_threads(pid: int | str = "self") -> list[int]:
    """Threads of a process under `SCHED_IDLE`."""
    found = []
    for entry in os.listdir(f"/proc/{pid}/task"):
        try:
            if os.sched_getscheduler(int(entry)) == os.SCHED_IDLE:
                found.append(int(entry))
        except ProcessLookupError:
            continue  # ended meanwhile
    return found


def lift(lowered: Lowered) -> str:
    """Undo `lower` for the whole process; "" when done, else what is still lowered."""
    problems = []
    if lowered.idle:
        # A thread still lowered may start another meanwhile: again until none is left.
        for _ in range(20):
            left = idle_threads()
            if not left:
                break
            for tid in left:
                try:
                    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                except ProcessLookupError:
                    continue
                except OSError as err:
                    problems.append(f"thread {tid} stays SCHED_IDLE: {err.strerror}")
                    break
        if idle_threads():
            problems.append("threads stay SCHED_IDLE")
    if lowered.autogroup_nice is not None:
        if not _set_autogroup_nice(lowered.autogroup_nice, AUTOGROUP_RETRY_S):
            problems.append(f"the autogroup stays at nice {autogroup_nice()}")
    return "; ".join(dict.fromkeys(problems))


class SpareLowering:
    """A spare worker's priority: lowered by its working thread, lifted by its main thread."""

    def __init__(self) -> None:
        self._state: Lowered | None = None
        self._lowered = threading.Event()
        self._lifted = threading.Event()
        # Readable once the imports are done (the write end closed), for the main thread's
        # wait on it and on the request at once.
        self._imported_r, self._imported_w = os.pipe()
        self.problem = ""
        """What could not be lifted ("" when all of it was)."""

    @property
    def state(self) -> Lowered | None:
        """What was lowered (None until `lower` ran, or where it failed)."""
        return self._state

    def lower(self) -> None:
        """In the working thread, before its imports."""
        try:
            self._state = lower()
        finally:
            self._lowered.set()

    def lift_when_due(self, request_fd: int, working: threading.Thread) -> None:
        """In the main thread: once the imports are done or the request came, lift it all.

        (Or once the working thread ended: nothing is left to lift for.)
        """
        self._lowered.wait()
        while working.is_alive():
            readable, _, _ = select.select([request_fd, self._imported_r], [], [], 0.5)
            if readable:
                break
        os.close(self._imported_r)
        if self._state is not None:
            self.problem = lift(self._state)
        self._lifted.set()

    def imported(self) -> str:
        """In the working thread, its imports done: "" once lifted, else what was not.

        Call it before reading the request: the main thread may be watching the request's pipe.
        """
        os.close(self._imported_w)
        self._lifted.wait()
        return self.problem
