"""Probe results kept between runs, so an import stopped part way through a problem goes on.

A deep network's import is several probes (`kbprobe analyze`, then a `check` per rewrite
round), each minutes of CPU time; a run bounded by a time limit (a call on a GPU machine) that
stops inside a problem would otherwise start it over, and a problem longer than the limit would
never end. `ProbeCache` keeps each finished probe's result in a JSONL file under a key made of
the probe's command, what it was given (the request; for `check`, the task folder's files, not
its path) and the gauntlet package's code: the same probe of the same code gives the same result
(probes are deterministic: fixed seeds, one thread), so a result found is one the probe would
compute again. Only results are kept: a probe that failed or ran out of time runs again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel


@functools.cache
def code_digest() -> str:
    """A digest of the gauntlet package's Python files: the code, with or without `.git`.

    A copy of the working tree on another machine gives the same digest as the tree it was
    copied from.
    """
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def probe_key(command: str, request: BaseModel, task_dir: Path | None = None) -> str:
    """The key of one probe: its command, its request (or `task_dir`'s files) and the code."""
    digest = hashlib.sha256(f"{command}\0{code_digest()}\0".encode())
    if task_dir is None:
        digest.update(request.model_dump_json().encode())
    else:
        for path in sorted(p for p in task_dir.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(task_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class ProbeCache:
    """Probe results by key: read from `earlier` files and `path`, new ones appended to `path`.

    Shared by the import's worker threads (one lock around reads and appends).
    """

    def __init__(self, path: Path, earlier: Sequence[Path] = ()) -> None:
        """Load every result of `earlier` and `path` (a later file's result for a key wins)."""
        self._path = path
        self._lock = threading.Lock()
        self._results: dict[str, str] = {}
        for source in [*earlier, path]:
            if not source.is_file():
                continue
            for line in source.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    self._results[entry["key"]] = entry["result"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    # A line torn by a run stopped mid-write: that probe runs again.
                    continue

    def get(self, key: str) -> str | None:
        """The result kept under `key` (its JSON), or None."""
        with self._lock:
            return self._results.get(key)

    def put(self, key: str, result: str) -> None:
        """Keep `result` (JSON) under `key`, appended to the file as one line."""
        with self._lock:
            self._results[key] = result
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with self._path.open("a", encoding="utf-8") as stream:
                stream.write(json.dumps({"key": key, "result": result}) + "\n")
