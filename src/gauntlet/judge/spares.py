"""Spare judge workers: started ahead of their judgments, so a judgment does not wait for imports.

A Python worker imports PyTorch and Triton before it reads its request
(`worker._import_trusted`): seconds of every judgment. While a `SparePool` is active (a
`Judge` service is open, as during a run) it keeps started workers per role and device waiting
for a request; a judgment takes one, and another is started in its place in the background at
once. Every judgment still gets a fresh candidate process that has run nothing before; only its
imports happened earlier.

A spare says when its imports are done (`protocol.Imported`, its first frame), so the pool
knows which spares are ready: a judgment takes a ready one first, and records how its workers
came (`Spare.origin`: kept, spare, spare still importing; or new). In a loop of judgments back
to back a candidate spare is taken every judgment, and its replacement has only the judgments
of the spares ahead of it to import in: where a judgment gets a candidate spare still
importing (past the kind's first judgment), the pool keeps twice as many of that kind ahead
from then on, up to `most_ahead` (half the cores this process may use, at most `MOST_AHEAD`,
never fewer than `size`): on a machine with few cores more importers would only share the same
CPU.

A reference worker runs only trusted task code, never a submission, so it is kept: a judgment
borrows it and gives it back reset (`resident.py`, `give_back`), and the next judgment on that
device finds PyTorch imported and CUDA initialised. The pool keeps `size` reference workers per
device, lent or waiting; it lets go of one that died, failed to reset, holds more memory than
it did (`RESIDENT_GROWTH_BYTES`, `RESIDENT_DEVICE_BYTES`) or served `RESIDENT_JUDGMENTS`.

A candidate spare is confined from its start (`confine.py`), so what it will see is fixed then:
a slot folder of its own, whose `task/` and `submission/` it sees read-only and `tmp/` writable.
The judge copies the task files the candidate runs and the built submission into the slot when
it takes the spare. A spare whose read-only view would hold a task's folder (a checkout on the
import path that holds the task suite) is never given that task's judgment.

Each pool lives in a folder of its own (`spares-*`), holding a lock on its `owner.lock` for as
long as it is open. A pool killed before it closed (`kill -9`, a lost machine) leaves its
folder behind; the next pool started in the same place removes every folder whose lock it can
take (`reap_abandoned`): the kernel releases a lock when its holder dies, so a live pool's
folder is never touched.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from gauntlet import confine, settings
from gauntlet.judge import protocol, workers

logger = logging.getLogger(__name__)

Role = Literal["reference", "candidate"]

#: Judgments a reference worker serves before it is let go (a bound on slow leaks: extension
#: libraries a process cannot unload, the allocator's fragmentation).
RESIDENT_JUDGMENTS = 200
#: Growth of a reference worker's resident memory after its reset, since its first, past which
#: it is let go.
RESIDENT_GROWTH_BYTES = 1 << 30
#: GPU memory a reference worker's allocator may still reserve after its reset (its cuBLAS
#: workspaces; a task's tensors kept alive would be more).
RESIDENT_DEVICE_BYTES = 256 << 20
#: The most candidate spares kept ahead per device, however fast judgments take them (each
#: is a process with PyTorch imported: hundreds of MB of host memory).
MOST_AHEAD = 8
#: Seconds `SparePool.close` waits for reference workers resetting in the background: longer
#: than a reset's own deadline (`python_backend.RESET_S`), after which it gives its worker back.
RESET_WAIT_S = 90.0


@dataclass
class Spare:
    """A started worker waiting for its request, and the slot folder it was started with."""

    role: Role
    device: str
    handle: workers.WorkerHandle
    slot: Path
    confined: confine.Confinement | None
    served: int = 0
    """Judgments it served (a reference worker serves many)."""
    first_host_bytes: int | None = None
    """A reference worker's resident memory after its first reset."""
    last_reset_s: float | None = None
    """Seconds a reference worker's last reset took (`protocol.Idle.reset_s`)."""
    ready_when_taken: bool | None = None
    """Whether it had reported its imports done when a judgment took it (None: not taken)."""

    def imported(self) -> bool:
        """Whether it is alive and has reported its imports done, or served a judgment before.

        A fresh spare sends nothing before `protocol.Imported`, so a frame waiting on its
        channel is that report (read by the judgment that takes it).
        """
        if self.served:
            return True
        if self.handle.child.poll() is not None:
            return False
        waiting = select.poll()
        waiting.register(self.handle.result_fd, select.POLLIN)
        return bool(waiting.poll(0))

    @property
    def origin(self) -> str:
        """How a judgment got this worker.

        'kept' (it served before), 'spare' (imported when taken) or 'spare importing' (taken
        before its imports were done, so the judgment waited for them).
        """
        if self.served:
            return "kept"
        return "spare" if self.ready_when_taken else "spare importing"

    @property
    def task_dir(self) -> Path:
        """Where the judge copies the task files a candidate runs (shown to it read-only)."""
        return self.slot / "task"

    @property
    def submission_dir(self) -> Path:
        """Where the judge copies the built submission (shown to a candidate read-only)."""
        return self.slot / "submission"

    @property
    def tmp(self) -> Path:
        """The worker's own writable folder (its HOME, TMPDIR and working directory)."""
        return self.slot / "tmp"

    def shows(self, path: Path) -> bool:
        """Whether the worker can see `path` (everything where it is not confined)."""
        if self.confined is None:
            return True
        shown = [*self.confined.readonly, *self.confined.writable]
        return any(path.resolve().is_relative_to(Path(p)) for p in shown)

    def discard(self) -> None:
        """Stop the worker and remove its slot."""
        self.handle.close()
        shutil.rmtree(self.slot, ignore_errors=True)


def start_spare(role: Role, device: str, root: Path) -> Spare:
    """Start a worker for `role` on `device` that waits for its request.

    Raises:
        OSError: The process could not be started.
    """
    slot = Path(tempfile.mkdtemp(prefix=f"{role}-", dir=root))
    for part in ("task", "submission", "tmp"):
        (slot / part).mkdir()
    gpu = device.startswith(("cuda", "rocm"))
    confined = None
    if role == "candidate":
        readonly = [slot / "task", slot / "submission"]
        if gpu:
            readonly += workers.shared_caches()
        confined = workers.confinement(readonly, [slot / "tmp"], hidden=settings.TASKS_DIR, gpu=gpu)
    try:
        handle = workers.python_worker(
            slot / "tmp", device, confined, ahead=role == "candidate", spare=True
        )
    except OSError:
        shutil.rmtree(slot, ignore_errors=True)
        raise
    return Spare(role, device, handle, slot, confined)


#: The file in a pool's folder that the pool holds locked (`flock`) while it is open.
OWNER_LOCK = "owner.lock"
#: Seconds after which a pool folder with no lock file is an abandoned one (its pool died
#: between making the folder and locking it, or predates the lock), not one being made.
UNLOCKED_GRACE_S = 60.0


def _lock(path: Path) -> BinaryIO | None:
    """`path` opened and locked for us, or None while another process holds its lock."""
    handle = open(path, "ab")  # noqa: SIM115 - held open for as long as the lock
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def reap_abandoned(root: Path) -> list[Path]:
    """Remove the pool folders under `root` whose pool's process is gone; returns them."""
    reaped: list[Path] = []
    for folder in sorted(root.glob("spares-*")):
        lock = folder / OWNER_LOCK
        try:
            if not lock.exists():
                if time.time() - folder.stat().st_mtime < UNLOCKED_GRACE_S:
                    continue
                held = None
            else:
                held = _lock(lock)
                if held is None:
                    continue  # its pool is alive
        except OSError:
            continue  # removed meanwhile (another pool reaping), or not ours to open
        try:
            shutil.rmtree(folder, ignore_errors=True)
            reaped.append(folder)
        finally:
            if held is not None:
                held.close()
    if reaped:
        logger.info("removed %d abandoned spare folders under %s", len(reaped), root)
    return reaped


class SparePool:
    """Started workers per (role, device), `size` of each, refilled in the background."""

    def __init__(self, root: Path, size: int = 1) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="spares-", dir=root))
        owner = _lock(self.root / OWNER_LOCK)
        assert owner is not None, "a folder just made is locked by nobody else"
        self._owner = owner
        """Held (locked) until `close`: while it is, no other pool removes this folder."""
        reap_abandoned(root)
        self.size = max(size, 1)
        self.most_ahead = max(self.size, min(MOST_AHEAD, len(os.sched_getaffinity(0)) // 2))
        """The most candidate spares kept ahead per device (`size` at least)."""
        self._ahead: dict[tuple[Role, str], int] = {}
        """Spares kept per kind where more than `size` (a kind a judgment found none ready)."""
        self._consumed: set[tuple[Role, str]] = set()
        """Kinds a judgment took a spare of."""
        self._spares: list[Spare] = []
        """Waiting: never used, or reference workers given back."""
        self._lent: list[Spare] = []
        """Reference workers a judgment has borrowed."""
        self._resets: list[Spare] = []
        """Lent reference workers resetting in the background, until given back (and stopped,
        where not kept)."""
        self._wanted: set[tuple[Role, str]] = set()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self.taken = 0
        """Judgments that got a spare worker."""
        self._filler = threading.Thread(target=self._fill, name="judge-spares", daemon=True)
        self._filler.start()

    def warm(self, device: str) -> None:
        """Start spares of both roles for `device` (judgments there will find them ready)."""
        with self._lock:
            self._wanted.update({("reference", device), ("candidate", device)})
            self._wake.notify_all()

    def wait_imported(self, device: str, timeout_s: float) -> bool:
        """Wait until a spare of each role for `device` is started and all there are imported.

        (`Spare.imported`.) Returns whether they were in time.
        """
        deadline = time.monotonic() + timeout_s
        if not self.wait_started(device, timeout_s):
            return False
        while True:
            with self._lock:
                # (One that died is dropped, and the filler told to start another.)
                self._drop_dead()
                self._wake.notify_all()
                importing = [s for s in self._spares if s.device == device and not s.imported()]
            left = deadline - time.monotonic()
            if not importing or left <= 0:
                return not importing
            waiting = select.poll()
            for spare in importing:
                waiting.register(spare.handle.result_fd, select.POLLIN)
            waiting.poll(1e3 * min(left, 1.0))  # (and again: a spare may die meanwhile)

    def wait_started(self, device: str, timeout_s: float) -> bool:
        """Wait until a spare of each role for `device` has been started (not yet imported)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not all(
                any(s.role == role and s.device == device for s in self._spares + self._lent)
                for role in ("reference", "candidate")
            ):
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._wake.wait(left)
        return True

    def take(self, role: Role, device: str, hidden: Path, wait_s: float = 0.0) -> Spare | None:
        """A spare for `role` on `device` that cannot see `hidden`, or None (start one cold).

        Either way the pool keeps spares of this kind started for the next judgment: the
        filler starts the replacement of the one taken at once. A reference worker that served
        before comes first (its CUDA is up); it is lent, and comes back through `give_back`.
        Where none waits but one is still resetting (`resetting`), this waits up to `wait_s`
        for it. Then a spare whose imports are done, the oldest first. A candidate judgment
        that gets one still importing makes the pool keep twice as many candidate spares ahead
        (up to `most_ahead`; not at the kind's first judgment, whose spares may be just
        started).
        """
        kind = (role, device)

        def fits(s: Spare) -> bool:
            # (An unconfined spare sees all, as a cold worker here would.)
            return (
                s.role == role
                and s.device == device
                and not (s.confined is not None and s.shows(hidden))
            )

        deadline = time.monotonic() + wait_s
        with self._lock:
            while not self._closed:
                self._drop_dead()
                kept = any(fits(s) and s.served for s in self._spares)
                left = deadline - time.monotonic()
                if kept or left <= 0 or not any(fits(s) for s in self._resets):
                    break
                self._wake.wait(left)
            if self._closed:
                return None
            fitting = [s for s in self._spares if fits(s)]
            ready = {id(s): s.imported() for s in fitting}
            fitting.sort(key=lambda s: (-s.served, not ready[id(s)]))
            spare = fitting[0] if fitting else None
            if spare is not None and role == "candidate" and not ready[id(spare)]:
                ahead = self._ahead.get(kind, self.size)
                if ahead < self.most_ahead and kind in self._consumed:
                    self._ahead[kind] = min(2 * ahead, self.most_ahead)
                    logger.info(
                        "judgments outrun their candidate spares' imports on %s: %d kept ahead",
                        device,
                        self._ahead[kind],
                    )
            self._wanted.add(kind)
            if spare is not None:
                self._consumed.add(kind)
                spare.ready_when_taken = ready[id(spare)]
                self._spares.remove(spare)
                if role == "reference":
                    self._lent.append(spare)
                self.taken += 1
            self._wake.notify_all()
            return spare

    def resetting(self, spare: Spare) -> None:
        """A lent reference worker resets: `take` may wait for it, `close` does (`give_back`)."""
        with self._lock:
            self._resets.append(spare)

    def give_back(self, spare: Spare, idle: protocol.Idle | None) -> None:
        """A judgment is done with a spare: a reference worker reset (`idle`) waits for the next.

        Any other (a candidate, a reference worker that did not reset, died, grew or served
        its share) is stopped.
        """
        try:
            self._give_back(spare, idle)
        finally:
            with self._lock:
                if spare in self._resets:
                    self._resets.remove(spare)
                self._wake.notify_all()

    def _give_back(self, spare: Spare, idle: protocol.Idle | None) -> None:
        with self._lock:
            lent = spare in self._lent
            if lent:
                self._lent.remove(spare)
            spare.served += 1
            if idle is not None:
                spare.last_reset_s = idle.reset_s
                if spare.first_host_bytes is None:
                    spare.first_host_bytes = idle.host_bytes
            keep = lent and not self._closed and idle is not None and _fit(spare, idle)
            if keep:
                self._spares.append(spare)
            self._wake.notify_all()
        if not keep:
            spare.discard()

    def count(self, role: Role, device: str) -> int:
        """Live spares of this kind (they may still be importing)."""
        with self._lock:
            self._drop_dead()
            return sum(s.role == role and s.device == device for s in self._spares)

    def close(self) -> None:
        """Stop every spare and the filler, wait for resets to end (stopped); remove the slots.

        A reset's reader gives its worker back within its own deadline (`RESET_WAIT_S` is
        longer), and a closed pool stops it: no worker outlives the pool.
        """
        with self._lock:
            self._closed = True
            spares, self._spares = self._spares, []
            self._wake.notify_all()
            deadline = time.monotonic() + RESET_WAIT_S
            while self._resets and (left := deadline - time.monotonic()) > 0:
                self._wake.wait(left)
            if self._resets:
                logger.warning(
                    "%d reference workers still resetting as the pool closed", len(self._resets)
                )
        self._filler.join(timeout=60)
        for spare in spares:
            spare.discard()
        shutil.rmtree(self.root, ignore_errors=True)
        self._owner.close()

    def _fill(self) -> None:
        while True:
            with self._lock:
                needed = self._needed()
                while not needed and not self._closed:
                    self._wake.wait()
                    needed = self._needed()
                if self._closed:
                    return
            role, device = needed[0]
            try:
                spare = start_spare(role, device, self.root)
            except OSError as err:
                logger.warning("cannot start a spare %s worker on %s: %s", role, device, err)
                with self._lock:
                    self._wanted.discard((role, device))
                continue
            with self._lock:
                if self._closed:
                    spare.discard()
                    return
                self._spares.append(spare)
                self._wake.notify_all()

    def _drop_dead(self) -> None:
        """Forget spares that died waiting (the filler starts others in their place)."""
        dead = [s for s in self._spares if s.handle.child.poll() is not None]
        for spare in dead:
            self._spares.remove(spare)
            threading.Thread(target=spare.discard, daemon=True).start()

    def _needed(self) -> list[tuple[Role, str]]:
        """Kinds with fewer live spares than kept ahead (a reference worker lent counts)."""
        self._drop_dead()
        live = [(s.role, s.device) for s in self._spares + self._lent]
        return [
            kind
            for kind in sorted(self._wanted)
            if live.count(kind) < self._ahead.get(kind, self.size)
        ]


def _fit(spare: Spare, idle: protocol.Idle) -> bool:
    """Whether a reference worker, just reset, may serve another judgment.

    Never where candidates run unconfined: one runs as the same user beside the reference
    worker and could signal or trace it, and a kept worker would carry that into the next
    judgments, other submissions' included.
    """
    if (why := confine.available()) is not None:
        logger.info("a reference worker is not kept: candidates run unconfined here (%s)", why)
        return False
    grown = idle.host_bytes - (spare.first_host_bytes or idle.host_bytes)
    if spare.served >= RESIDENT_JUDGMENTS:
        logger.info(
            "a reference worker on %s served %d judgments: replaced", spare.device, spare.served
        )
        return False
    if grown > RESIDENT_GROWTH_BYTES or idle.device_bytes > RESIDENT_DEVICE_BYTES:
        logger.warning(
            "a reference worker on %s holds %d MB more host memory than after its first "
            "judgment and %d MB of GPU memory after its reset: replaced",
            spare.device,
            grown >> 20,
            idle.device_bytes >> 20,
        )
        return False
    return spare.handle.child.poll() is None


_active: SparePool | None = None
_active_lock = threading.Lock()


def active() -> SparePool | None:
    """The pool of the open `Judge` service, if any."""
    return _active


def activate(pool: SparePool | None) -> SparePool | None:
    """Make `pool` the one judgments take spares from; returns the one it replaces."""
    global _active
    with _active_lock:
        previous, _active = _active, pool
    return previous
