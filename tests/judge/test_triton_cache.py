"""The candidate's Triton cache manager: trusted kernels first, its own kept kernels found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gauntlet import settings
from gauntlet.judge.triton_cache import TrustedFirstCache


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    private, trusted = tmp_path / "private", tmp_path / "trusted"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(private))
    monkeypatch.setenv(settings.TRITON_TRUSTED_CACHE_ENV, str(trusted))
    return private, trusted


def group(folder: Path, recorded_in: Path) -> None:
    """A compiled kernel's files and its group, recorded where Triton first wrote them."""
    folder.mkdir(parents=True)
    (folder / "k.cubin").write_bytes(b"cubin")
    (folder / "k.json").write_text("{}")
    children = {name: str(recorded_in / name) for name in ("k.cubin", "k.json")}
    (folder / "__grp__k.json").write_text(json.dumps({"child_paths": children}))


def test_kept_kernels_copied_from_another_folder_are_found(
    caches: tuple[Path, Path], tmp_path: Path
) -> None:
    private, _ = caches
    group(private / "KEY", recorded_in=tmp_path / "an-earlier-judgment" / "KEY")
    found = TrustedFirstCache("KEY").get_group("k.json")
    assert found == {name: str(private / "KEY" / name) for name in ("k.cubin", "k.json")}


def test_a_group_missing_a_file_is_compiled_again(caches: tuple[Path, Path]) -> None:
    private, _ = caches
    group(private / "KEY", recorded_in=private / "KEY")
    (private / "KEY" / "k.cubin").unlink()
    assert TrustedFirstCache("KEY").get_group("k.json") is None


def test_the_trusted_cache_comes_first(caches: tuple[Path, Path]) -> None:
    private, trusted = caches
    group(private / "KEY", recorded_in=private / "KEY")
    group(trusted / "KEY", recorded_in=trusted / "KEY")
    cache = TrustedFirstCache("KEY")
    assert cache.get_group("k.json") == {
        name: str(trusted / "KEY" / name) for name in ("k.cubin", "k.json")
    }
    assert cache.get_file("k.cubin") == str(trusted / "KEY" / "k.cubin")
