"""Folders as bytes: task folders sent to an engine's workers, attempt files sent back.

An engine that runs attempts on other machines shares no file system with the runner: the
task's folder travels as a tar archive (`TaskBundle`, unpacked once per content digest on each
machine) and the files an attempt leaves for its run directory come back as one
(`pack_folder`, then `unpack` by the runner). Unpacking refuses what would land outside its
destination (absolute paths, `..`, links leading out) and skips it with a warning.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gauntlet import settings
from gauntlet.errors import RecordError
from gauntlet.task import Task, load_task

logger = logging.getLogger(__name__)

#: Left out of a task's bundle: byte code written by whoever imported the task's files.
_SKIPPED_NAMES = frozenset({"__pycache__"})


class TaskBundle(BaseModel):
    """A task folder as bytes, named by the digest of its content."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    digest: str
    """sha256 of `archive`: where a machine unpacks it, so each content is unpacked once."""
    archive: bytes


def pack_folder(folder: Path) -> bytes:
    """A folder's files, links and subfolders as an uncompressed tar archive (sorted names)."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if _SKIPPED_NAMES & set(Path(info.name).parts):
            return None
        # Who made the files and when is not content: the same folder packs to the same bytes.
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(folder.rglob("*")):
            archive.add(path, arcname=str(path.relative_to(folder)), recursive=False, filter=keep)
    return buffer.getvalue()


def empty_archive() -> bytes:
    """An archive of no files (an attempt that left none)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w"):
        pass
    return buffer.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    """Unpack an archive of `pack_folder` into `dest`; members that would leave it are skipped."""

    def inside(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError as err:
            logger.warning("not unpacked into %s: %s", dest, err)
            return None

    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
            archive.extractall(dest, filter=inside)
    except (tarfile.TarError, OSError) as err:
        raise RecordError(f"cannot unpack {len(data)} bytes of files into '{dest}': {err}") from err


def bundle_task(task: Task) -> TaskBundle:
    """The task's folder as a bundle."""
    archive = pack_folder(task.root)
    return TaskBundle(
        task_id=task.task_id, digest=hashlib.sha256(archive).hexdigest(), archive=archive
    )


def task_from_bundle(bundle: TaskBundle) -> Task:
    """The bundle's task, unpacked on this machine under the cache folder (once per digest).

    A bundle is unpacked to a temporary folder and renamed into place, so workers unpacking
    the same bundle at once never see half a folder.
    """
    root = settings.CACHE_DIR / "bundled-tasks"
    dest = root / bundle.digest
    if not dest.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{bundle.digest[:12]}-", dir=root))
        try:
            unpack(bundle.archive, staging)
            os.rename(staging, dest)
        except OSError:
            if not dest.is_dir():  # not another worker's rename that came first
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return load_task(dest, expected_id=bundle.task_id)
