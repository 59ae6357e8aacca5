"""`python -m gauntlet.accel --write | --check`: regenerate or check the checked-in manuals.

The manual of each platform, with its default parameters, is generated from the ISA table into
docs/accel/<name>.md; CI (tests/accel/test_docs.py) fails when a checked-in copy is stale.
"""

from __future__ import annotations

import argparse
import sys

from gauntlet.accel.docs import GENERATOR, manual, manual_path
from gauntlet.accel.platform import get_platform, platform_names


def main(argv: list[str] | None = None) -> int:
    """Write or check the checked-in manuals of the default platforms."""
    parser = argparse.ArgumentParser(prog="python -m gauntlet.accel", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rewrite docs/accel/<name>.md")
    action.add_argument("--check", action="store_true", help="exit 1 if a manual is stale")
    parser.add_argument("--platform", action="append", help="only this platform (repeatable)")
    args = parser.parse_args(argv)
    stale = []
    for name in args.platform or platform_names():
        text = manual(get_platform(name))
        path = manual_path(name)
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(str(path))
    if stale:
        sys.stderr.write(f"stale manual(s), regenerate with '{GENERATOR}': {', '.join(stale)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
