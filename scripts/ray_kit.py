"""Build `.ray-kit/`: Ray and its dependencies as wheels for a GPU machine with no network.

    python scripts/ray_kit.py [--python 3.12] [--out .ray-kit]

The lent GPU machines run Python 3.12 without Ray, reach no package index, and take at most
64 MiB of carried files per call. Ray's wheel is 79 MB, 32 MB of it `ray/jars/` (the Java
workers' jar, which a Python-only cluster never loads). This downloads Ray (the version
installed here, else `--ray`) and its dependencies for that Python on x86_64 Linux, and
rewrites Ray's wheel without the jar and the dashboard's JavaScript source maps, with its
RECORD to match, so the kit travels in one call beside `.whl/`:

    carry [".whl", ".ray-kit"];  scripts/gpu_check.sh "$OUT" env ray

(`gpu_check.sh` installs `.ray-kit/*.whl` where Ray is missing; docs/ray.md.)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import sys
import zipfile
from pathlib import Path

from gauntlet import process

#: Members a Python-only Ray never reads: the Java workers and source maps of the dashboard.
DROPPED = ("ray/jars/",)
DROPPED_SUFFIXES = (".js.map",)


def _dropped(name: str) -> bool:
    return name.startswith(DROPPED) or name.endswith(DROPPED_SUFFIXES)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def slim(wheel: Path) -> tuple[int, int]:
    """Rewrite `wheel` in place without the dropped members; (bytes before, bytes after)."""
    before = wheel.stat().st_size
    tmp = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(tmp, "w") as target:
        record_name = next(n for n in source.namelist() if n.endswith(".dist-info/RECORD"))
        lines: list[str] = []
        for info in source.infolist():
            if _dropped(info.filename) or info.filename == record_name:
                continue
            data = source.read(info)
            target.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            lines.append(_record_line(info.filename, data))
        lines.append(f"{record_name},,")
        target.writestr(record_name, "\n".join(lines) + "\n")
    tmp.replace(wheel)
    return before, wheel.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="3.12", help="the GPU machine's Python (X.Y)")
    parser.add_argument("--ray", default=None, help="Ray's version (default: the one here)")
    parser.add_argument("--out", type=Path, default=Path(".ray-kit"))
    args = parser.parse_args()
    try:
        version = args.ray or importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        parser.error("Ray is not installed here: name its version with --ray (or `make ray`)")
    tag = args.python.replace(".", "")
    args.out.mkdir(parents=True, exist_ok=True)
    platforms = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
    command += ["--python-version", args.python, "--implementation", "cp", "--abi", f"cp{tag}"]
    for platform in platforms:
        command += ["--platform", platform]
    command += ["--dest", str(args.out), f"ray=={version}"]
    finished = process.run(command, timeout_s=1800)
    if finished.returncode != 0:
        print(f"ray_kit: pip could not download ray=={version} for Python {args.python}:")
        print(finished.stderr.strip()[-2000:])
        return 1
    for wheel in args.out.glob(f"ray-{version}-*.whl"):
        before, after = slim(wheel)
        print(f"{wheel.name}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
    total = sum(p.stat().st_size for p in args.out.glob("*.whl"))
    print(f"{args.out}: {len(list(args.out.glob('*.whl')))} wheels, {total / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
