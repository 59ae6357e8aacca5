"""The public API: every name in `gauntlet.__all__` resolves, and `import gauntlet` stays light."""

from __future__ import annotations

import subprocess
import sys

import gauntlet


def test_every_public_name_resolves() -> None:
    for name in gauntlet.__all__:
        assert getattr(gauntlet, name) is not None, name


def test_import_touches_no_torch() -> None:
    code = "import sys, gauntlet; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_command_line_starts_without_torch() -> None:
    # Every command's module is loaded to build the CLI: `gauntlet --help` (or a usage error)
    # must not wait seconds for PyTorch (it did, through `tasks check`'s importers).
    code = "import sys, gauntlet.cli; print([m for m in ('torch', 'ray') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
