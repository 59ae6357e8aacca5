"""Triton's compile cache for a candidate's process: read trusted kernels, write privately.

Triton keys its compiled kernels by a hash of their source and options, and loads whatever a
cache folder holds under that key. A cache folder the candidate's process could write would let
a submission plant a kernel under the key of the baseline's kernel (a slow one), which a later
judgment would load and time. So a candidate's worker reads from the judge's shared cache, which
only trusted processes write (the reference worker compiles the baseline's kernels there) and
which its confinement shows read-only, and writes what it compiles to its own folder
(`TRITON_CACHE_DIR`), gone with the judgment, except that the judge keeps it for the next
judgment of the same files (`kernel_cache.py`). Selected by `TRITON_CACHE_MANAGER`.
"""

from __future__ import annotations

import json
import os

from triton.runtime.cache import FileCacheManager

from gauntlet.settings import TRITON_TRUSTED_CACHE_ENV


class TrustedFirstCache(FileCacheManager):  # type: ignore[misc]
    """Looks a kernel up in the trusted shared cache first, then in the private one."""

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        super().__init__(key, override=override, dump=dump)
        trusted = os.environ.get(TRITON_TRUSTED_CACHE_ENV, "")
        self.trusted: FileCacheManager | None = None
        folder = os.path.join(trusted, key)
        if trusted and not (override or dump) and os.path.isdir(folder):
            reader = FileCacheManager.__new__(FileCacheManager)
            reader.key = key
            reader.cache_dir = folder
            self.trusted = reader

    def get_file(self, filename: str) -> str | None:
        """The trusted copy of a file if there is one, else the private one."""
        if self.trusted is not None:
            found: str | None = self.trusted.get_file(filename)
            if found is not None:
                return found
        result: str | None = super().get_file(filename)
        return result

    def get_group(self, filename: str) -> dict[str, str] | None:
        """The trusted group if there is one, else the private one."""
        if self.trusted is not None:
            group: dict[str, str] | None = self.trusted.get_group(filename)
            if group is not None:
                return group
        return self._private_group(filename)

    def _private_group(self, filename: str) -> dict[str, str] | None:
        """A group of the private cache, its files looked for beside it.

        Triton records a group's files by absolute path; the judge copies a submission's kept
        kernels (`kernel_cache.py`) from an earlier judgment's folder into this one, so the
        recorded folder is gone and the files lie here.
        """
        name = f"__grp__{filename}"
        if not self.has_file(name):
            return None
        try:
            with open(self._make_path(name)) as handle:
                children = json.load(handle).get("child_paths")
        except (OSError, ValueError, AttributeError):
            return None  # a broken entry: compiled again
        if not isinstance(children, dict):
            return None
        found = {}
        for child, path in children.items():
            here = os.path.join(self.cache_dir, os.path.basename(str(path)))
            if not os.path.exists(here):
                return None
            found[str(child)] = here
        return found
