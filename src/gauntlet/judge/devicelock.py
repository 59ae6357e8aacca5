"""Judgments share a GPU, and each times it alone: a two-mode lock per GPU.

A judgment's GPU work other than timing (the reference worker's run, the candidate's first
calls, where Triton compiles its kernels for seconds, its correctness trials, the judge's
comparisons) may overlap another judgment's, so it holds the GPU in shared mode; its timing
holds the GPU exclusively, so that no other judgment's work disturbs it. The lock is a set of
`flock`s on files in one folder for the whole machine (`settings.LOCK_DIR`, not the cache
folder, which each run or user may set apart): it covers the runner's threads (each holder
opens its own descriptions of the files), the feedback tools' judgments, separate runs and
users, and the kernel releases a dead holder's locks. The lock names the physical GPU: `cuda:0`
of a process that sees only GPU 3 (`CUDA_VISIBLE_DEVICES=3`, as Ray gives a GPU task) takes GPU
3's lock, the one a process seeing every GPU takes for `cuda:3`.

Per GPU there are three kinds of file:

- `<gpu>.lock`, the GPU itself: shared (`LOCK_SH`) by judgments' untimed work, exclusive
  (`LOCK_EX`) while one times, and shared again by that judgment once its timing is over, for
  its checks of the timed outputs (`Hold.share`, a conversion in place). (Earlier versions took
  it exclusively for a whole judgment, so they still exclude every judgment of this one.)
- `<gpu>.turnstile`, writer preference: a shared taker passes through it (takes it, takes the GPU,
  lets it go) and an exclusive taker holds it while it waits for the shared holders to leave.
  So a judgment waiting to time is served before shared takers that come after it holds the
  turnstile, however many keep coming: they queue behind it rather than keep the GPU busy.
- `<gpu>.slot-<i>` (`settings.JUDGMENTS_PER_GPU` of them) with `<gpu>.queue`, the GPU's memory:
  a judgment holds its slots from before its first GPU work to its end, its timing included
  (its processes keep their memory while they wait to time), so at most that many judgments hold
  memory on the GPU at once; a judgment whose footprint needs more than one slot's share of the
  GPU's memory takes several (`footprint.slots_needed`). Only the holder of the queue takes
  slots, so two takers never each hold part of what they need; `flock` waits on one file, not
  on any of several, so the queue's holder polls the slots (every `SLOT_POLL_S`).

The order of taking is slots, turnstile, GPU, and nothing is taken while waiting in another
mode (a judgment lets its shared hold go before it asks for the exclusive one), so no holder
waits on one that waits on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Literal

from gauntlet import settings

logger = logging.getLogger(__name__)

#: How often the queue's holder looks for free slots.
SLOT_POLL_S = 0.01
#: Waits longer than this are logged (INFO): under `--parallel` they are most of a judgment.
LOGGED_WAIT_S = 1.0

Mode = Literal["shared", "exclusive"]


def physical(device: str) -> str:
    """The device as the whole host numbers it, through this process's `CUDA_VISIBLE_DEVICES`.

    `cuda:0` with `CUDA_VISIBLE_DEVICES=3,1` is `cuda:3`; an entry that is a UUID stays one.
    """
    kind, _, index = device.partition(":")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if kind not in ("cuda", "rocm") or not visible or not index.isdigit():
        return device
    entries = [entry.strip() for entry in visible.split(",")]
    return f"{kind}:{entries[int(index)]}" if int(index) < len(entries) else device


class Hold:
    """One judgment's hold on a GPU: its slots, then the GPU shared, then exclusively to time.

    Use as a context manager (leaving it lets go of everything held), e.g.::

        with Hold("cuda:0", slots=1) as hold:
            hold.shared()      # the reference's run, compiles, correctness trials
            hold.exclusive()   # timing
    """

    def __init__(self, device: str, slots: int = 1) -> None:
        """A hold not yet taken.

        Args:
            device: The GPU as this process names it (`physical` maps it to the host's).
            slots: Memory slots the judgment takes (clamped to the GPU's count); 0 for a
                holder that only ever holds the GPU exclusively (it excludes every judgment
                anyway).
        """
        self.device = physical(device)
        self.slots = min(max(slots, 0), settings.JUDGMENTS_PER_GPU)
        self.mode: Mode | None = None
        """The mode the GPU is held in now (None: not held)."""
        self._stem = self.device.replace(":", "_")
        self._held_slots: dict[int, int] = {}
        """Each slot held, by index: its file's description."""
        self._gpu: int | None = None

    def __enter__(self) -> Hold:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()

    def shared(self) -> float:
        """Take the slots and the GPU in shared mode; the seconds waited for them."""
        assert self.mode is None, f"the hold on {self.device} is already {self.mode}"
        started = time.monotonic()
        self._take_slots()
        with self._passing("turnstile"):
            self._lock_gpu(fcntl.LOCK_SH)
        self.mode = "shared"
        return self._waited(started)

    def exclusive(self) -> float:
        """Hold the GPU alone (letting a shared hold go first); the seconds waited for it.

        The slots stay held: the judgment's processes keep their memory while they wait.
        """
        assert self.mode != "exclusive", f"the hold on {self.device} is already exclusive"
        started = time.monotonic()
        if self.mode == "shared":
            self._unlock_gpu()
        # Holding the turnstile while waiting keeps new shared takers out, so the holders
        # that are there drain; once the GPU is ours, the next taker may queue for it.
        with self._passing("turnstile"):
            self._lock_gpu(fcntl.LOCK_EX)
        self.mode = "exclusive"
        return self._waited(started)

    def share(self) -> None:
        """From exclusive to shared, the slots kept: others' shared work may run beside ours.

        Converted in place on the lock's description, not let go and taken again: a judgment
        waiting for the GPU alone holds the turnstile that shared takers pass, and would time
        before this one's last shared work could start.
        """
        assert self.mode == "exclusive" and self._gpu is not None, (
            f"the hold on {self.device} is {self.mode}, not exclusive"
        )
        self._lock_gpu(fcntl.LOCK_SH)
        self.mode = "shared"

    def release(self) -> None:
        """Let go of the GPU and the slots (whatever is held)."""
        self._unlock_gpu()
        for fd in self._held_slots.values():
            os.close(fd)  # closing the description drops its flock
        self._held_slots = {}

    def _waited(self, started: float) -> float:
        waited = time.monotonic() - started
        if waited > LOGGED_WAIT_S:
            logger.info("waited %.1f s for %s (%s)", waited, self.device, self.mode)
        return waited

    def _take_slots(self) -> None:
        if not self.slots:
            return
        with self._passing("queue"):
            while True:
                for index in range(settings.JUDGMENTS_PER_GPU):
                    if len(self._held_slots) == self.slots:
                        return
                    if index in self._held_slots:
                        continue
                    fd = _open(_lock_file(f"{self._stem}.slot-{index}"))
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        os.close(fd)
                        continue
                    self._held_slots[index] = fd
                if len(self._held_slots) == self.slots:
                    return
                time.sleep(SLOT_POLL_S)

    @contextmanager
    def _passing(self, name: str) -> Iterator[None]:
        """Hold `<gpu>.<name>` exclusively for the block."""
        fd = _open(_lock_file(f"{self._stem}.{name}"))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _lock_gpu(self, operation: int) -> None:
        if self._gpu is None:
            self._gpu = _open(_lock_file(f"{self._stem}.lock"))
        try:
            fcntl.flock(self._gpu, operation)
        except BaseException:
            self._unlock_gpu()
            raise

    def _unlock_gpu(self) -> None:
        if self._gpu is not None:
            os.close(self._gpu)
            self._gpu = None
        self.mode = None


@contextmanager
def exclusive(device: str) -> Iterator[float]:
    """Hold the GPU alone, outside any judgment (no slot); yields the seconds waited for it."""
    with Hold(device, slots=0) as hold:
        yield hold.exclusive()


def _open(path: Path) -> int:
    """A description of its own for one holder (not inherited by the workers it starts)."""
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _lock_file(name: str) -> Path:
    """A lock file, created open to every user of the machine (like /tmp)."""
    folder = settings.LOCK_DIR
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(PermissionError):
            folder.chmod(0o1777)
    path = folder / name
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
        try:
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, 0o666)
        finally:
            os.close(fd)
    return path
