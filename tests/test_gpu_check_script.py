"""scripts/gpu_check.sh's handling of what a device call brings back (its steps need a GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.sh"


def _run(
    out: Path, step: str = "no-such-step", script: Path = SCRIPT, **env: str
) -> subprocess.CompletedProcess[str]:
    # This interpreter first on PATH: the script's `python3` must find pydantic, as on the device.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", str(script), str(out), step],
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_files_past_what_a_device_call_brings_back_are_packed_and_none_is_lost(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / "kbimport").mkdir(parents=True)
    for i in range(6):
        (out / "kbimport" / f"part{i}.jsonl").write_text(f"{i}\n")
    (out / "kb.log").write_text("log\n")
    (out / "kb.md").write_text("table\n")
    finished = _run(out)
    assert finished.returncode == 2, finished.stderr  # the unknown step
    assert sorted(p.name for p in out.iterdir()) == ["results.tar.gz", "summary.txt"]
    with tarfile.open(out / "results.tar.gz") as packed:
        names = sorted(Path(n).as_posix().removeprefix("./") for n in packed.getnames())
    assert [n for n in names if "." in Path(n).name] == sorted(
        [f"kbimport/part{i}.jsonl" for i in range(6)] + ["kb.log", "kb.md"]
    )
    assert "packed into" in (out / "summary.txt").read_text()


def test_a_call_within_the_limit_keeps_its_files_as_they_are(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "kb.md").write_text("table\n")
    assert _run(out, PACK_FILES="3").returncode == 2
    assert sorted(p.name for p in out.iterdir()) == ["kb.md", "summary.txt"]


def _kb_checkout(tmp_path: Path) -> Path:
    """A checkout holding the script, a kit of one case and a bench_judge.py that says its args."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "gpu_check.sh").write_text(SCRIPT.read_text())
    (root / "scripts" / "bench_judge.py").write_text(
        "import json, sys\nprint('ARGS ' + json.dumps(sys.argv[1:]))\n"
    )
    (root / ".kb-kit").mkdir()
    case = ["23", "tasks/l1/23", "submissions/l1_23", "kb/23_Softmax.py", "kernels/softmax.py"]
    (root / ".kb-kit" / "cases.tsv").write_text("\t".join(case) + "\n")
    return root


def _kb_args(root: Path, out: Path, **env: str) -> list[str]:
    finished = _run(out, "kb", root / "scripts" / "gpu_check.sh", KB_PROBLEMS="23", **env)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    line = next(x for x in (out / "kb.log").read_text().splitlines() if x.startswith("ARGS "))
    args: list[str] = json.loads(line.removeprefix("ARGS "))
    return args


def test_the_kb_step_judges_both_sides_or_ours_alone(tmp_path: Path) -> None:
    root = _kb_checkout(tmp_path)
    both = _kb_args(root, tmp_path / "both")
    assert both[both.index("--case") + 1 :][:2] == ["tasks/l1/23", "submissions/l1_23"]
    assert both[both.index("--kernelbench-eval") + 1] == ".kb-kit/kb_eval_one.py"
    assert both[both.index("--kernelbench-case") + 1 :][:2] == [
        "kb/23_Softmax.py",
        "kernels/softmax.py",
    ]
    ours = _kb_args(root, tmp_path / "ours", KB_THEIRS="0")
    assert "--case" in ours
    assert "--kernelbench-eval" not in ours and "--kernelbench-case" not in ours
