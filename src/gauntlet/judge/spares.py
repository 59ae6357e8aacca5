"""Spare judge workers: started ahead of their judgments, so a judgment does not wait for imports.

A Python worker imports PyTorch and Triton before it reads its request
(`worker._import_trusted`): seconds of every judgment. While a `SparePool` is active (a
`Judge` service is open, as during a run) it keeps started workers per role and device waiting
for a request; a judgment takes one, and another is started in its place in the background.
Every judgment still gets a fresh candidate process that has run nothing before; only its
imports happened earlier.

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
        self._spares: list[Spare] = []
        """Waiting: never used, or reference workers given back."""
        self._lent: list[Spare] = []
        """Reference workers a judgment has borrowed."""
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

    def take(self, role: Role, device: str, hidden: Path) -> Spare | None:
        """A spare for `role` on `device` that cannot see `hidden`, or None (start one cold).

        Either way the pool keeps `size` spares of this kind started for the next judgment. A
        reference worker that served before comes first (its CUDA is up); it is lent, and
        comes back through `give_back`.
        """
        with self._lock:
            if self._closed:
                return None
            self._wanted.add((role, device))
            self._wake.notify_all()
            self._drop_dead()
            for spare in sorted(self._spares, key=lambda s: -s.served):
                if spare.role != role or spare.device != device:
                    continue
                if spare.confined is not None and spare.shows(hidden):
                    # (An unconfined spare sees all, as a cold worker here would.)
                    continue
                self._spares.remove(spare)
                if role == "reference":
                    self._lent.append(spare)
                self.taken += 1
                return spare
        return None

    def give_back(self, spare: Spare, idle: protocol.Idle | None) -> None:
        """A judgment is done with a spare: a reference worker reset (`idle`) waits for the next.

        Any other (a candidate, a reference worker that did not reset, died, grew or served
        its share) is stopped.
        """
        with self._lock:
            lent = spare in self._lent
            if lent:
                self._lent.remove(spare)
            spare.served += 1
            if idle is not None and spare.first_host_bytes is None:
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
        """Stop every spare and the filler; remove the slots."""
        with self._lock:
            self._closed = True
            spares, self._spares = self._spares, []
            self._wake.notify_all()
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
        """Kinds with fewer than `size` live spares (a reference worker lent counts)."""
        self._drop_dead()
        live = [(s.role, s.device) for s in self._spares + self._lent]
        return [kind for kind in sorted(self._wanted) if live.count(kind) < self.size]


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
