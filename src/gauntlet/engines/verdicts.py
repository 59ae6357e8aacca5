"""The task's own files, judged once per run where their verdict cannot vary, then reused.

In a run, the `baseline` agent submits the task's baseline, `expert` its expert, and `autotune`
one of the two wherever it has nothing to search or its search keeps the template's point. The
final judgment of the same trusted files, on the same device, with the run's secret seed, gives
the same verdict every time where nothing is timed by a clock: on `cpu` (Triton's interpreter,
correctness only) and on the simulators (`sim:*`, deterministic cycle counts). There the first
passing verdict of those files is kept for the rest of the run (`TrustedVerdicts`, held by the
local engine: one per run, shared by its threads), and a later attempt that submits the same
bytes gets it, marked: `environment["reused_from"]` names the attempt judged, and its
`duration_s` and `phases_s` are empty, since this attempt's judgment cost nothing.

Never reused: a verdict on a GPU (each attempt is timed afresh), any file an agent wrote that is
not byte for byte the task's baseline or expert, and a verdict that did not pass (a failure of
trusted files is judged again, never repeated). An attempt that finds the same files being
judged by another thread waits for that verdict instead of judging them alongside.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping

from gauntlet.judge.verdict import Verdict
from gauntlet.task import Task

#: Devices whose final verdicts depend only on the files, the task and the seed.
DETERMINISTIC_DEVICE_PREFIXES = ("sim:",)
DETERMINISTIC_DEVICES = ("cpu",)
#: The verdict's environment key that names the attempt whose judgment was reused.
REUSED_FROM = "reused_from"
#: Verdicts kept at most in one process (the oldest go first).
KEPT_LIMIT = 4096


def deterministic(device: str) -> bool:
    """Whether a final verdict on `device` is the same for the same files, task and seed."""
    return device in DETERMINISTIC_DEVICES or device.startswith(DETERMINISTIC_DEVICE_PREFIXES)


def trusted_role(task: Task, files: Mapping[str, bytes]) -> str | None:
    """`baseline` or `expert` when the files are exactly that submission of the task, else None.

    `files`: the contract's files by name, each a plain file as the agent left it.
    """
    try:
        texts = {name: data.decode("utf-8") for name, data in files.items()}
    except UnicodeDecodeError:
        return None
    if texts == task.baseline_files():
        return "baseline"
    if texts == task.expert_files():
        return "expert"
    return None


def reuse_key(
    task: Task,
    files: Mapping[str, bytes] | None,
    *,
    device: str,
    seed: int,
    time_cap_s: float,
    compile_reference: bool,
) -> str | None:
    """The key under which the verdict of these files may be reused; None where it may not.

    `files` is None when a contract file is not a plain file (a link, a folder, missing).
    """
    if files is None or not deterministic(device) or trusted_role(task, files) is None:
        return None
    hasher = hashlib.sha256(task.spec.model_dump_json().encode())
    trusted = [task.spec.reference.file, task.spec.inputs.file]
    if task.spec.baseline is not None:
        trusted.append(task.spec.baseline.file)
    for name in trusted:
        hasher.update(task.path(name).read_bytes())
    for name in sorted(files):
        hasher.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    hasher.update(
        json.dumps(
            [task.task_id, str(task.root), device, seed, time_cap_s, compile_reference]
        ).encode()
    )
    return hasher.hexdigest()


class TrustedVerdicts:
    """Passing verdicts of trusted files by `reuse_key`, one judgment a key at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[str, Verdict]] = OrderedDict()
        self._judging: dict[str, threading.Lock] = {}

    def judged(self, key: str | None, attempt_id: str, judge: Callable[[], Verdict]) -> Verdict:
        """The verdict of `judge()`, or a kept one for the same key, marked as reused.

        With no key, `judge()` always runs. With one, a judgment of the same key running in
        another thread is waited for; `judge()`'s errors propagate and keep nothing.
        """
        if key is None:
            return judge()
        with self._lock:
            gate = self._judging.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                kept = self._kept.get(key)
            if kept is not None:
                source, verdict = kept
                return verdict.model_copy(
                    update={
                        "duration_s": 0.0,
                        "phases_s": {},
                        "environment": {**verdict.environment, REUSED_FROM: source},
                    }
                )
            verdict = judge()
            if verdict.passed:
                with self._lock:
                    self._kept[key] = (attempt_id, verdict)
                    while len(self._kept) > KEPT_LIMIT:
                        self._kept.popitem(last=False)
            return verdict
