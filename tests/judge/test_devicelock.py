"""The per-GPU lock: judgments share the GPU, and a timing holds it alone, across processes.

Each test's holders are real processes (`tests/support/lock_taker.py`) beside this one; which
lock a process holds or waits for is read from `/proc/locks`, so no test guesses with a sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gauntlet import settings
from gauntlet.judge import devicelock

REPO = Path(__file__).resolve().parents[2]
#: Seconds any one step may take before the test fails (a hung lock, not a slow machine).
STEP_S = 60.0


@pytest.fixture
def locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "locks"
    monkeypatch.setattr(settings, "LOCK_DIR", folder)
    monkeypatch.setattr(settings, "JUDGMENTS_PER_GPU", 3)
    return folder


class Taker:
    """A `lock_taker` process and its lines."""

    def __init__(
        self,
        locks: Path,
        *args: str,
        per_gpu: int = 3,
        visible: str | None = None,
        cache: Path | None = None,
    ) -> None:
        env = {
            **os.environ,
            "GAUNTLET_LOCK_DIR": str(locks),
            "GAUNTLET_JUDGMENTS_PER_GPU": str(per_gpu),
        }
        env.pop("CUDA_VISIBLE_DEVICES", None)
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        if cache is not None:
            env["GAUNTLET_CACHE_DIR"] = str(cache)
        self.proc = subprocess.Popen(  # noqa: TID251 - the test is about processes
            [sys.executable, "-m", "tests.support.lock_taker", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        assert self.line() == "asking"

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def interval(self) -> dict[str, Any]:
        line = self.line()
        assert line.startswith("{"), f"expected an interval, got {line!r}"
        interval: dict[str, Any] = json.loads(line)
        return interval

    def go_on(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        assert self.proc.wait(timeout=STEP_S) == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=STEP_S)


@pytest.fixture
def takers() -> Iterator[list[Taker]]:
    started: list[Taker] = []
    yield started
    for taker in started:
        if taker.proc.poll() is None:
            taker.kill()


def _flocks(path: Path) -> list[tuple[int, bool]]:
    """Who holds or waits for the flock of `path`: (pid, waiting) per entry of /proc/locks."""
    inode = os.stat(path).st_ino
    found = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        waiting = fields[1] == "->"
        fields = [f for f in fields if f != "->"]
        if fields[1] == "FLOCK" and int(fields[5].rsplit(":", 1)[1]) == inode:
            found.append((int(fields[4]), waiting))
    return found


def _until(condition: Any, what: str) -> None:
    """Poll `condition` (a state of the kernel's locks) until it holds."""
    deadline = time.monotonic() + STEP_S
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.005)


def _file(locks: Path, device: str, kind: str) -> Path:
    return locks / f"{device.replace(':', '_')}.{kind}"


def test_timing_never_overlaps_another_judgments_work(locks: Path, takers: list[Taker]) -> None:
    """Judgments and outside holders in five processes: no exclusive interval overlaps any
    other, and no more judgments than the GPU's slots hold it at once."""
    per_gpu = 2
    plans = ["shared,exclusive"] * 3 + ["shared", "exclusive"]
    for seed, plan in enumerate(plans):
        args = ("cuda:0", plan, "--rounds", "8", "--hold-s", "0.02", "--seed", str(seed), "--go")
        takers.append(Taker(locks, *args, per_gpu=per_gpu))
    for taker in takers:
        taker.go_on()
    intervals: list[dict[str, Any]] = []
    for taker in takers:
        assert taker.proc.stdout is not None
        intervals += [json.loads(line) for line in taker.proc.stdout]
        taker.finish()
    assert len(intervals) == 8 * (3 * 2 + 2)
    for held in intervals:
        if held["mode"] != "exclusive":
            continue
        for other in intervals:
            if other["pid"] != held["pid"]:
                apart = other["end"] <= held["start"] or other["start"] >= held["end"]
                assert apart, f"{held} overlaps {other}"
    # A judgment holds its slot from its shared start to its timing's end.
    spans: dict[tuple[int, int], list[float]] = {}
    counts: dict[int, int] = {}
    for held in intervals:
        if held["mode"] == "exclusive" and held["pid"] == takers[-1].proc.pid:
            continue  # outside any judgment: no slot
        pid = held["pid"]
        if held["mode"] == "shared":
            counts[pid] = counts.get(pid, 0) + 1
        span = spans.setdefault((pid, counts[pid]), [held["start"], held["end"]])
        span[1] = held["end"]
    events = sorted([(s, 1) for s, _ in spans.values()] + [(e, -1) for _, e in spans.values()])
    at_once = most = 0
    for _, step in events:
        at_once += step
        most = max(most, at_once)
    assert most <= per_gpu, most


def test_shared_holders_overlap_and_an_exclusive_one_waits(
    locks: Path, takers: list[Taker]
) -> None:
    with devicelock.Hold("cuda:0") as ours:
        assert ours.shared() < 1.0
        # Another judgment's untimed work goes on beside ours.
        takers.append(Taker(locks, "cuda:0", "shared", "--wait"))
        assert takers[0].line() == "held"
        takers[0].go_on()
        assert takers[0].interval()["mode"] == "shared"
        takers[0].finish()
        # A timing waits until our untimed work is done.
        takers.append(Taker(locks, "cuda:0", "exclusive", "--wait"))
        gpu = _file(locks, "cuda:0", "lock")
        _until(lambda: (takers[1].proc.pid, True) in _flocks(gpu), "the timing waits")
        released = time.monotonic()
    assert takers[1].line() == "held"
    takers[1].go_on()
    timing = takers[1].interval()
    assert timing["start"] >= released
    takers[1].finish()


def test_a_waiting_timing_goes_before_later_shared_takers(locks: Path, takers: list[Taker]) -> None:
    """Writer preference: a shared taker that comes after a timing waits behind it."""
    gpu, turnstile = _file(locks, "cuda:0", "lock"), _file(locks, "cuda:0", "turnstile")
    with devicelock.Hold("cuda:0") as ours:
        ours.shared()
        timing = Taker(locks, "cuda:0", "exclusive", "--hold-s", "0.05")
        takers.append(timing)
        _until(
            lambda: (
                (timing.proc.pid, False) in _flocks(turnstile)
                and (timing.proc.pid, True) in _flocks(gpu)
            ),
            "the timing holds the turnstile and waits for the GPU",
        )
        later = Taker(locks, "cuda:0", "shared", "--hold-s", "0.0")
        takers.append(later)
        _until(lambda: (later.proc.pid, True) in _flocks(turnstile), "the later taker waits")
    first, second = timing.interval(), later.interval()
    assert first["start"] < second["start"]
    assert first["end"] <= second["start"]
    timing.finish()
    later.finish()


def test_a_judgment_whose_timing_is_over_shares_the_gpu_again(
    locks: Path, takers: list[Taker]
) -> None:
    """Its checks of the timed outputs run beside others' shared work, never behind a timing
    that waits: the conversion is in place, not a release and a new wait."""
    gpu = _file(locks, "cuda:0", "lock")
    with devicelock.Hold("cuda:0") as ours:
        ours.shared()
        ours.exclusive()
        timing = Taker(locks, "cuda:0", "exclusive", "--wait")
        takers.append(timing)
        _until(lambda: (timing.proc.pid, True) in _flocks(gpu), "the other timing waits")
        ours.share()
        assert ours.mode == "shared" and len(ours._held_slots) == 1
        # The other timing still waits (woken by the conversion, it queues again): what is
        # left of ours is work on the GPU. Had it taken the GPU, it would wait no more.
        _until(lambda: (timing.proc.pid, True) in _flocks(gpu), "the other timing waits again")
        assert (os.getpid(), False) in _flocks(gpu)
        released = time.monotonic()
    assert timing.line() == "held"
    timing.go_on()
    assert timing.interval()["start"] >= released
    timing.finish()
    with devicelock.Hold("cuda:0") as ours:
        ours.shared()
        ours.exclusive()
        ours.share()
        # With no timing waiting, another judgment's shared work starts beside ours.
        beside = Taker(locks, "cuda:0", "shared", "--wait")
        takers.append(beside)
        assert beside.line() == "held"
        beside.go_on()
        beside.finish()


def test_the_slots_bound_judgments_on_a_gpu(
    locks: Path, takers: list[Taker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "JUDGMENTS_PER_GPU", 2)
    with devicelock.Hold("cuda:0") as first, devicelock.Hold("cuda:0") as second:
        first.shared()
        second.shared()
        third = Taker(locks, "cuda:0", "shared", per_gpu=2)
        takers.append(third)
        queue = _file(locks, "cuda:0", "queue")
        # It holds the queue while it looks for a free slot: none is.
        _until(lambda: (third.proc.pid, False) in _flocks(queue), "the third waits for a slot")
        released = time.monotonic()
        first.release()
        assert third.interval()["start"] >= released
        third.finish()


def test_a_judgment_of_more_memory_takes_more_slots(locks: Path) -> None:
    with devicelock.Hold("cuda:0", slots=2) as big:
        big.shared()
        with devicelock.Hold("cuda:0", slots=1) as small:
            small.shared()
            assert len(big._held_slots) + len(small._held_slots) == 3
        # More than the GPU has is all of them.
        assert devicelock.Hold("cuda:0", slots=5).slots == 3


def test_the_kernel_releases_a_dead_holders_lock(locks: Path, takers: list[Taker]) -> None:
    for plan in ("exclusive", "shared"):
        holder = Taker(locks, "cuda:0", plan, "--wait", per_gpu=1)
        takers.append(holder)
        assert holder.line() == "held"
        os.kill(holder.proc.pid, signal.SIGKILL)
        holder.proc.wait(timeout=STEP_S)
        # Its slot and the GPU are free again: a whole judgment goes through.
        with devicelock.Hold("cuda:0") as hold:
            hold.shared()
            hold.exclusive()


def test_the_lock_is_the_machines_whatever_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locks: Path, takers: list[Taker]
) -> None:
    # The holder is another run with a cache folder of its own.
    monkeypatch.setattr(settings, "CACHE_DIR", tmp_path / "ours")
    holder = Taker(locks, "cuda:0", "exclusive", "--wait", cache=tmp_path / "theirs")
    takers.append(holder)
    assert holder.line() == "held"
    with devicelock.exclusive("cuda:1") as waited:
        assert waited < 1.0
    assert (holder.proc.pid, False) in _flocks(_file(locks, "cuda:0", "lock"))


def test_the_lock_names_the_physical_gpu(
    monkeypatch: pytest.MonkeyPatch, locks: Path, takers: list[Taker]
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert devicelock.physical("cuda:0") == "cuda:3"
    assert devicelock.physical("cuda:1") == "cuda:1"
    assert devicelock.physical("cpu") == "cpu"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    # A process that sees only GPU 3 (a Ray GPU task) holds what `cuda:3` elsewhere waits for.
    holder = Taker(locks, "cuda:0", "exclusive", "--wait", visible="3")
    takers.append(holder)
    assert holder.line() == "held"
    with devicelock.exclusive("cuda:0") as waited:
        assert waited < 1.0
    assert (holder.proc.pid, False) in _flocks(_file(locks, "cuda:3", "lock"))


@pytest.mark.gpu
def test_judgments_side_by_side_on_a_gpu_time_it_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two judgments in threads share the GPU and each records its wait to time it alone;
    no timing overlaps the other judgment's hold.

    On the machine's own lock, not a private folder's: the GPU tier's other workers judge on
    the same GPU, and judgments behind another lock would time it while they do.
    """
    import threading

    from gauntlet.judge import judge
    from tests.support.fixtures import SCALE_ADD, VERDICT_TIME_CAP_S

    intervals: list[tuple[str, float, float]] = []
    real_exclusive, real_release = devicelock.Hold.exclusive, devicelock.Hold.release
    started: dict[int, tuple[str, float]] = {}

    def exclusive(hold: devicelock.Hold) -> float:
        if hold.mode == "shared":
            intervals.append(("shared", started[id(hold)][1], time.monotonic()))
        waited = float(real_exclusive(hold))
        started[id(hold)] = ("exclusive", time.monotonic())
        return waited

    def release(hold: devicelock.Hold) -> None:
        if id(hold) in started and hold.mode is not None:
            mode, since = started.pop(id(hold))
            intervals.append((mode, since, time.monotonic()))
        real_release(hold)

    real_shared, real_share = devicelock.Hold.shared, devicelock.Hold.share

    def shared(hold: devicelock.Hold) -> float:
        waited = float(real_shared(hold))
        started[id(hold)] = ("shared", time.monotonic())
        return waited

    def share(hold: devicelock.Hold) -> None:
        # Each interval recorded within the real one: the timing's ends before the conversion,
        # the checks' shared one starts after it.
        mode, since = started.pop(id(hold))
        intervals.append((mode, since, time.monotonic()))
        real_share(hold)
        started[id(hold)] = ("shared", time.monotonic())

    monkeypatch.setattr(devicelock.Hold, "shared", shared)
    monkeypatch.setattr(devicelock.Hold, "share", share)
    monkeypatch.setattr(devicelock.Hold, "exclusive", exclusive)
    monkeypatch.setattr(devicelock.Hold, "release", release)
    task = SCALE_ADD()
    verdicts: list[Any] = []

    def one(seed: int) -> None:
        verdicts.append(
            judge(
                task,
                task.root / "expert",
                device="cuda:0",
                seed=seed,
                time_cap_s=VERDICT_TIME_CAP_S,
            )  # fmt: skip
        )

    threads = [threading.Thread(target=one, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert [v.status for v in verdicts] == ["pass", "pass"], [v.reason for v in verdicts]
    assert all("device_wait_exclusive" in v.phases_s for v in verdicts)
    timings = [i for i in intervals if i[0] == "exclusive"]
    assert len(timings) == 2, intervals
    for mode, start, end in timings:
        for other in intervals:
            if other != (mode, start, end):
                assert other[2] <= start or other[1] >= end, (timings, intervals)
