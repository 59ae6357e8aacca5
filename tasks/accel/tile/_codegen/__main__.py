"""Write (or, with --check, compare) every tile task's task.toml, baseline.asm and expert.asm."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import GENERATORS, generate
from .catalog import TASKS
from .taskfiles import render

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    """Regenerate the programs; with --check, exit 1 when a checked-in copy is stale."""
    parser = argparse.ArgumentParser(prog="python -m _codegen")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("tasks", nargs="*", help="task folder names (default: all)")
    args = parser.parse_args()
    stale = []
    for name in args.tasks or sorted(GENERATORS):
        files = dict(zip(("baseline.asm", "expert.asm"), generate(name), strict=True))
        files["task.toml"] = render(TASKS[name])
        for file, text in files.items():
            path = ROOT / name / file
            if args.check:
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    stale.append(str(path))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    for path in stale:
        sys.stderr.write(f"stale: {path}\n")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
