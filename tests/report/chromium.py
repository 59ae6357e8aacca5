"""Headless Chromium for report tests: the DOM after scripts ran, console messages, a screenshot.

Chromium logs every console message of the page (`console.*`, uncaught exceptions, CSP
violations, failed loads) to stderr as `...:CONSOLE...] "message", source: ...` when started
with `--enable-logging=stderr`. The report never writes to the console, so any such line is a
failure; `tests/report/test_chromium.py` proves the detector catches a deliberate error.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    # Any attempt to reach the network fails at once: the page must need none.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
)
_CONSOLE = re.compile(r":CONSOLE[(:]\d*\)?\]? ?(.*)")


def require_chromium() -> str:
    """Chromium's path, or skip the test when it is not installed."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/test_setup.sh installs it)")
    return CHROMIUM


@dataclass(frozen=True)
class PageLoad:
    """What Chromium made of a page."""

    dom: str
    """The serialized DOM after the page's scripts ran."""
    console: list[str]
    """Console messages: errors, warnings and logs."""
    screenshot: Path


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    command = [require_chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def console_messages(stderr: str) -> list[str]:
    """Console messages found in Chromium's log."""
    return [match.group(1) for match in map(_CONSOLE.search, stderr.splitlines()) if match]


def load(
    page: Path, workdir: Path, *, width: int = 1280, height: int = 2000, fragment: str = ""
) -> PageLoad:
    """Open a local page (at `#fragment`) in headless Chromium: DOM, console and screenshot."""
    workdir.mkdir(parents=True, exist_ok=True)
    shot = workdir / "screenshot.png"
    args = ["--dump-dom", f"--screenshot={shot}", f"--window-size={width},{height}"]
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = _chromium([*args, url], workdir / "profile")
    assert done.returncode == 0 and shot.exists(), done.stderr[-3000:]
    return PageLoad(dom=done.stdout, console=console_messages(done.stderr), screenshot=shot)


def ink_fraction(path: Path) -> float:
    """Share of the screenshot's pixels that differ visibly from its top-left (background) one."""
    from matplotlib.image import imread

    pixels = np.asarray(imread(path))[..., :3].astype(float)
    distance = np.abs(pixels - pixels[0, 0]).sum(axis=2)
    return float((distance > 0.1).mean())
