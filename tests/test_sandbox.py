"""Sandboxes: what an agent process can see and reach, and that nothing outlives it."""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path

import psutil
import pytest

from gauntlet import process, sandbox
from gauntlet.agents import make_agent
from gauntlet.agents.base import AgentContext, Budget
from gauntlet.errors import ConfigError
from gauntlet.judge import judge
from gauntlet.task import load_task
from gauntlet.workspace import build_workspace, workspace_changes

TASK_DIR = Path(__file__).parent / "agents" / "task_scale"

needs_bwrap = pytest.mark.skipif(
    sandbox.availability("bwrap") is not None,
    reason=f"bwrap is not usable here: {sandbox.availability('bwrap')}",
)
#: The sandboxes that contain an agent, each skipped where it does not work (docker: where no
#: daemon answers, as in CI).
CONTAINING = [
    pytest.param(
        kind,
        marks=pytest.mark.skipif(
            sandbox.availability(kind) is not None,
            reason=f"{kind} is not usable here: {sandbox.availability(kind)}",
        ),
    )
    for kind in ("bwrap", "confine", "docker")
]

PROBE = """\
import json, subprocess, sys
results = {}
for label, path in json.loads(sys.argv[1]).items():
    try:
        with open(path, encoding="utf-8") as handle:
            handle.read()
        results[label] = "read"
    except OSError as err:
        results[label] = type(err).__name__
try:
    with open(sys.argv[2], "w") as handle:
        handle.write("escaped")
    results["write outside"] = "written"
except OSError as err:
    results["write outside"] = type(err).__name__
with open("probe-wrote.txt", "w") as handle:
    handle.write("x")
check = subprocess.run(["gauntlet-ws", "check"], capture_output=True, text=True)
results["gauntlet-ws check"] = check.stdout.strip().splitlines()[-1]
print(json.dumps({"type": "probe", "results": results}), flush=True)
"""


def probe_run(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Run the probe as a generic agent in an attempt's workspace; what it could read."""
    task = load_task(TASK_DIR)
    run_dir = tmp_path / "run"
    (run_dir / "attempts").mkdir(parents=True)
    (run_dir / "attempts.jsonl").write_text('{"kind": "attempt"}\n')
    (run_dir / "secret-seed").write_text("1234\n")
    budget = Budget(wall_s=120)
    other = build_workspace(task, tmp_path / "other" / "workspace", device="cpu", budget=budget)
    mine = build_workspace(task, tmp_path / "mine" / "workspace", device="cpu", budget=budget)
    targets = {
        "hidden configs (task.toml)": str(TASK_DIR / "task.toml"),
        "expert solution": str(TASK_DIR / "expert" / "kernel.py"),
        "input generator": str(TASK_DIR / "inputs.py"),
        "run record": str(run_dir / "attempts.jsonl"),
        "run secret": str(run_dir / "secret-seed"),
        "other attempt's workspace": str(other.path / "kernel.py"),
        "own brief": "TASK.md",
    }
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    outside = tmp_path / "outside.txt"
    command = f"{sys.executable} {script} {shlex.quote(json.dumps(targets))} {outside}"
    monkeypatch.setenv("GAUNTLET_SANDBOX", kind)
    ctx = AgentContext(
        task=task,
        workspace=mine.path,
        brief=mine.brief,
        budget=budget,
        transcript=tmp_path / "mine" / "transcript.jsonl",
    )
    result = make_agent(f"generic:{command}").run(ctx)
    assert result.status == "finished", result.message
    assert (mine.path / "probe-wrote.txt").read_text() == "x"
    for line in ctx.transcript.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "probe":
            return event["results"]
    raise AssertionError(f"no probe output in {ctx.transcript.read_text()}")


@pytest.mark.parametrize("kind", CONTAINING)
def test_sandbox_hides_the_task_the_run_and_other_attempts(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = probe_run(tmp_path, kind, monkeypatch)
    for secret in (
        "hidden configs (task.toml)",
        "expert solution",
        "input generator",
        "run record",
        "run secret",
        "other attempt's workspace",
    ):
        assert results[secret] == "FileNotFoundError", (secret, results)
    assert results["own brief"] == "read"
    # A write outside the workspace lands, at most, in the sandbox's private /tmp.
    assert not (tmp_path / "outside.txt").exists()
    # The tools still work: they run outside the sandbox, behind the socket.
    assert results["gauntlet-ws check"] == "All checks passed."


def test_without_a_sandbox_the_probe_sees_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control: the probe is able to find these files when nothing hides them.
    results = probe_run(tmp_path, "none", monkeypatch)
    assert set(results.values()) == {"read", "written", "All checks passed."}
    assert (tmp_path / "outside.txt").read_text() == "escaped"
    assert results["hidden configs (task.toml)"] == "read"


@pytest.mark.parametrize("kind", CONTAINING)
@pytest.mark.parametrize("network", [False, True])
def test_network_option(kind: str, tmp_path: Path, network: bool) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
            "    print('connected')\n"
            "except OSError as err:\n    print('refused', err)\n"
        )
        launch = sandbox.prepare(
            sandbox.SandboxSpec(kind=kind, network=network),  # type: ignore[arg-type]
            [sys.executable, "-c", code],
            workspace=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
        )
        finished = process.run(launch.argv, env=launch.env, cwd=launch.cwd, timeout_s=30)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.startswith("connected" if network else "refused")


@pytest.mark.parametrize("kind", CONTAINING)
def test_sandbox_kills_even_processes_that_left_the_session(kind: str, tmp_path: Path) -> None:
    token = f"gauntlet-escapee-{time.monotonic_ns()}"
    code = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)', "
        f"'{token}'], start_new_session=True)\n"
        "while True: time.sleep(1)\n"
    )
    launch = sandbox.prepare(
        sandbox.SandboxSpec(kind=kind, network=False),  # type: ignore[arg-type]
        [sys.executable, "-c", code],
        workspace=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    child = process.Child(launch.argv, env=launch.env, cwd=launch.cwd)

    def escapees() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]

    deadline = time.monotonic() + 20
    while not escapees() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert escapees(), "the escapee never started"
    finished = child.wait(timeout_s=0.5, kill_tree=True)
    assert finished.timed_out
    for command in launch.cleanup:  # as the CLI agents do (docker: its container is killed)
        process.run(command, timeout_s=30)
    deadline = time.monotonic() + 10
    while escapees() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in escapees() if p.status() != psutil.STATUS_ZOMBIE] == []


@pytest.mark.parametrize("network", [False, True])
def test_docker_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: bool) -> None:
    # The command line alone, without a daemon (CI has none): the same view as bwrap's.
    monkeypatch.setattr(sandbox, "availability", lambda kind: None)
    monkeypatch.setattr(sandbox, "_docker_root_image", lambda docker: "gauntlet-sandbox-root:x")
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/other.sock")
    home = tmp_path / "home"
    home.mkdir()
    client = tmp_path / "clients" / "node_modules" / ".bin" / "claude"
    client.parent.mkdir(parents=True)
    client.write_text("#!/bin/sh\n")
    client.chmod(0o755)
    launch = sandbox.prepare(
        sandbox.SandboxSpec(kind="docker", network=network),
        [str(client), "-p", "hi"],
        workspace=tmp_path,
        env={"PATH": f"{client.parent}:/usr/bin", "ANTHROPIC_API_KEY": "k", "HOME": str(home)},
        writable=[home],
        name="gauntlet-attempt/1",
    )
    argv = launch.argv
    docker = argv[0]
    assert argv[1:3] == ["run", "--rm"]
    assert argv[-4:] == ["gauntlet-sandbox-root:x", str(client), "-p", "hi"]
    assert argv[argv.index("--network") + 1] == ("host" if network else "none")
    name = argv[argv.index("--name") + 1]
    assert name.startswith("gauntlet-attempt-1-") and len(name) == len("gauntlet-attempt-1-") + 8
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert {"--read-only", "--init"} <= set(argv)
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    volumes = [argv[i + 1] for i, a in enumerate(argv) if a == "--volume"]
    # The toolchain and the client's whole node_modules tree read-only, HOME writable, never
    # /sbin (Docker's init lives there) nor the /etc files Docker writes itself.
    assert "/usr:/usr:ro" in volumes
    assert (
        f"{tmp_path / 'clients' / 'node_modules'}:{tmp_path / 'clients' / 'node_modules'}:ro"
        in volumes
    )
    assert f"{home}:{home}" in volumes
    assert not [v for v in volumes if v.startswith(("/sbin", "/etc/hosts", "/etc/resolv.conf"))]
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "--env"]
    assert envs == ["ANTHROPIC_API_KEY", "HOME", "PATH"]  # names only: values stay out of argv
    assert launch.env["ANTHROPIC_API_KEY"] == "k"
    assert launch.env["DOCKER_HOST"] == "unix:///run/other.sock"  # the client's own settings
    assert launch.cleanup == [[docker, "kill", name]]


def test_docker_root_image_holds_only_the_hosts_top_level_links() -> None:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(sandbox._docker_root_tar())) as tar:
        members = {m.name: (m.issym(), m.linkname) for m in tar.getmembers()}
    expected = {
        d.lstrip("/"): (True, os.readlink(d))
        for d in sandbox.DOCKER_SYSTEM_DIRS
        if Path(d).is_symlink()
    }
    assert members == expected
    assert "sbin" not in members


@pytest.mark.parametrize("kind", CONTAINING)
def test_sandbox_refuses_to_show_a_hidden_path(kind: str, tmp_path: Path) -> None:
    inside_the_toolchain = Path(sys.prefix) / "tasks" / "softmax"
    with pytest.raises(ConfigError, match="would show .* under"):
        sandbox.prepare(
            sandbox.SandboxSpec(kind=kind),  # type: ignore[arg-type]
            [sys.executable, "-c", "pass"],
            workspace=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            hidden=[inside_the_toolchain],
        )


@pytest.mark.parametrize("kind", CONTAINING)
def test_a_linked_submission_does_not_smuggle_in_the_expert(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = load_task(TASK_DIR)
    budget = Budget(wall_s=60)
    ws = build_workspace(task, tmp_path / "ws", device="cpu", budget=budget)
    expert = TASK_DIR / "expert" / "kernel.py"
    monkeypatch.setenv("GAUNTLET_SANDBOX", kind)
    ctx = AgentContext(
        task=task,
        workspace=ws.path,
        brief=ws.brief,
        budget=budget,
        transcript=tmp_path / "transcript.jsonl",
    )
    command = f"sh -c 'rm kernel.py && ln -s {expert} kernel.py && test ! -e kernel.py'"
    result = make_agent(f"generic:{command}").run(ctx)
    assert result.status == "finished", result.message  # the link leads nowhere inside
    assert workspace_changes(ws) == {"kernel.py": "modified"}
    verdict = judge(task, ws.path, device="cpu", seed=3, mode="final")
    assert verdict.status != "pass"


def test_auto_takes_the_strongest_sandbox_that_works(monkeypatch: pytest.MonkeyPatch) -> None:
    works = {"bwrap": None, "confine": None, "docker": None}
    monkeypatch.setattr(sandbox, "availability", lambda kind: works.get(kind))
    assert sandbox.resolve("auto") == ("bwrap", "")
    works["bwrap"] = "the 'bwrap' command is missing"
    assert sandbox.resolve("auto") == ("confine", "")
    works["confine"] = "user namespaces are disabled"
    assert sandbox.resolve("auto") == ("docker", "")
    works["docker"] = "the Docker daemon is not reachable"
    kind, note = sandbox.resolve("auto")
    assert kind == "none"
    assert "bwrap: the 'bwrap' command is missing" in note
    assert "confine: user namespaces are disabled" in note
    # Asked for by name, a kind is itself (and an unusable one fails where it is used).
    assert sandbox.resolve("none") == ("none", "")


def test_cli_agents_default_to_auto_and_record_what_it_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GAUNTLET_SANDBOX", raising=False)
    made = make_agent("generic:true")
    assert made.sandbox_kind == sandbox.resolve("auto")[0]  # type: ignore[attr-defined]
    assert made.sandbox_kind != "auto"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "kind", "network", "command"),
    [
        ("generic:sandbox=none:echo hi", "none", True, ["echo", "hi"]),
        (
            "generic:sandbox=none,network=off:sh a.sh --x=1",
            "none",
            False,
            ["sh", "a.sh", "--x=1"],
        ),
        ("generic:echo sandbox=none:x", None, True, ["echo", "sandbox=none:x"]),
    ],
)
def test_generic_takes_the_sandbox_options_before_its_command(
    spec: str, kind: str | None, network: bool, command: list[str]
) -> None:
    made = make_agent(spec)
    assert made.command == command  # type: ignore[attr-defined]
    assert made.sandbox.network is network  # type: ignore[attr-defined]
    if kind is not None:
        assert made.sandbox_kind == kind  # type: ignore[attr-defined]


def test_generic_rejects_an_unknown_sandbox() -> None:
    with pytest.raises(ConfigError, match="unknown sandbox 'jail'.*known: auto"):
        make_agent("generic:sandbox=jail:echo hi")
