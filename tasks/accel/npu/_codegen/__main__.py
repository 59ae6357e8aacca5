"""Write (or, with --check, compare) every task's task.toml, baseline.asm and expert.asm."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import GENERATORS, generate
from .catalog import TASKS
from .taskfiles import knobs, render

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m _codegen")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("tasks", nargs="*", help="task folder names (default: all)")
    args = parser.parse_args()
    stale = []
    for name in args.tasks or sorted(GENERATORS):
        files = dict(zip(("baseline.asm", "expert.asm"), generate(name), strict=True))
        files["task.toml"] = render(TASKS[name], knobs(files["expert.asm"]))
        for file, text in files.items():
            path = ROOT / name / file
            if args.check:
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    stale.append(str(path))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"stale: {path}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
