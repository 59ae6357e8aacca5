"""Sandboxes: what an agent process can see and reach, and that nothing outlives it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
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
from tests.support.fixtures import TASKS

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

needs_docker = pytest.mark.skipif(
    sandbox.availability("docker") is not None,
    reason=f"docker is not usable here: {sandbox.availability('docker')}",
)

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
        with sandbox.prepare(
            sandbox.SandboxSpec(kind=kind, network=network),  # type: ignore[arg-type]
            [sys.executable, "-c", code],
            workspace=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
        ) as launch:
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
    with launch:  # as the CLI agents do (docker: closing it ends the container)
        child = process.Child(launch.argv, env=launch.env, cwd=launch.cwd)

        def escapees() -> list[psutil.Process]:
            return [
                p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])
            ]

        deadline = time.monotonic() + 20
        while not escapees() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert escapees(), "the escapee never started"
        finished = child.wait(timeout_s=0.5, kill_tree=True)
        assert finished.timed_out
    deadline = time.monotonic() + 10
    while escapees() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in escapees() if p.status() != psutil.STATUS_ZOMBIE] == []


@pytest.mark.parametrize("network", [False, True])
def test_docker_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: bool) -> None:
    # The command line alone, without a daemon (CI has none): the same view as bwrap's.
    monkeypatch.setattr(sandbox, "availability", lambda kind: None)
    monkeypatch.setattr(sandbox, "_docker_root_image", lambda docker: "gauntlet-sandbox-root:x")
    monkeypatch.setattr(sandbox, "_reap_orphans", lambda docker: None)
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
    assert argv[1:3] == ["run", "--rm"]
    # The command runs under the tether, which ends the container when the launch closes.
    assert launch.tether is not None
    tether = launch.tether.socket_path
    command = sandbox.tether_argv(tether, [str(client), "-p", "hi"])
    assert argv[-len(command) - 1 :] == ["gauntlet-sandbox-root:x", *command]
    assert command[:2] == [sys.executable, "-I"]
    assert command[-6:] == [
        str(Path(sandbox.tether.__file__).resolve()),
        str(tether),
        "--",
        str(client),
        "-p",
        "hi",
    ]
    owner = argv[argv.index("--label") + 1]
    assert owner == f"gauntlet.owner={sandbox._owner()}"
    assert argv[argv.index("--network") + 1] == ("host" if network else "none")
    name = argv[argv.index("--name") + 1]
    assert name.startswith("gauntlet-attempt-1-") and len(name) == len("gauntlet-attempt-1-") + 8
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert {"--read-only", "--init", "--interactive"} <= set(argv)
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
    assert f"{tether.parent}:{tether.parent}:ro" in volumes
    assert not [v for v in volumes if v.startswith(("/sbin", "/etc/hosts", "/etc/resolv.conf"))]
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "--env"]
    assert envs == ["ANTHROPIC_API_KEY", "HOME", "PATH"]  # names only: values stay out of argv
    assert launch.env["ANTHROPIC_API_KEY"] == "k"
    assert launch.env["DOCKER_HOST"] == "unix:///run/other.sock"  # the client's own settings
    launch.close()
    assert not tether.parent.exists()


def test_docker_root_image_holds_only_the_hosts_top_level_links_and_tmp() -> None:
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(sandbox._docker_root_tar())) as tar:
        members = {m.name: m for m in tar.getmembers()}
    links = {name: (m.linkname) for name, m in members.items() if m.issym()}
    expected = {
        d.lstrip("/"): os.readlink(d) for d in sandbox.DOCKER_SYSTEM_DIRS if Path(d).is_symlink()
    }
    assert links == expected
    assert "sbin" not in members
    # /tmp open to every user: runc gives the container's tmpfs /tmp this folder's mode.
    assert set(members) - set(links) == {"tmp"}
    assert members["tmp"].isdir() and members["tmp"].mode == 0o1777


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


def docker_containers(*filters: str) -> list[str]:
    """`docker ps --all` with these filters: each container's id, labels and command."""
    argv = ["docker", "ps", "--all", "--no-trunc"]
    for item in filters:
        argv += ["--filter", item]
    listed = process.run(
        [*argv, "--format", "{{.ID}} {{.Labels}} {{.Command}}"], timeout_s=sandbox.PROBE_TIMEOUT_S
    )
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.splitlines()


@needs_docker
def test_docker_tmp_is_open_to_every_user(tmp_path: Path) -> None:
    # Docker makes the working directory (here under /tmp) in the root before the tmpfs is
    # mounted, and runc gives the tmpfs that folder's mode: the root image's /tmp is 1777.
    with sandbox.prepare(
        sandbox.SandboxSpec(kind="docker", network=False),
        ["stat", "-c", "%a", "/tmp"],
        workspace=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    ) as launch:
        finished = process.run(launch.argv, env=launch.env, cwd=launch.cwd, timeout_s=60)
    assert (finished.returncode, finished.stdout) == (0, "1777\n"), finished.stderr


@needs_docker
@pytest.mark.slow  # a whole run each, about 30 s
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_no_container_outlives_a_stopped_or_killed_run(stop: int, tmp_path: Path) -> None:
    # A real run whose agent sleeps in a container: Ctrl-C (the run kills its agents) and
    # kill -9 (the agents die with the harness, PR_SET_PDEATHSIG) both cut the tether.
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\nsleep 600\n")
    script.chmod(0o755)
    env = {**os.environ, "GAUNTLET_TASKS_DIR": str(TASKS)}
    argv = [sys.executable, "-m", "gauntlet", "run", "--out", str(tmp_path / "run")]
    argv += ["--device", "cpu", "--tasks", "triton2triton/scale_add"]
    argv += ["--agent", f"generic:sandbox=docker,network=off:{script}"]
    harness = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: TID251

    def ours() -> list[str]:
        return [c for c in docker_containers("label=gauntlet.owner") if str(script) in c]

    deadline = time.monotonic() + 120
    while not ours() and time.monotonic() < deadline:
        assert harness.poll() is None, harness.stderr.read().decode() if harness.stderr else ""
        time.sleep(0.2)
    assert ours(), "the agent's container never started"
    harness.send_signal(stop)
    harness.communicate(timeout=60)
    stopped = time.monotonic()
    while ours() and time.monotonic() < stopped + 20:
        time.sleep(0.2)
    assert ours() == []
    assert time.monotonic() - stopped < 20


@needs_docker
def test_containers_whose_owner_is_gone_are_removed() -> None:
    # The tether cannot end a container that was created and never started (its client
    # killed in between): the next docker sandbox prepared here removes it. Containers of a
    # live owner, or of an owner this host cannot see, stay.
    boot, namespace, pid, started = sandbox._owner().split("/")
    gone = process.Child(["true"])  # a pid whose process has ended
    gone.wait()
    owners = {
        "gone": f"{boot}/{namespace}/{gone.pid}/{started}",
        "restarted": f"{boot}/{namespace}/{pid}/{int(started) - 1}",  # the pid reused since
        "alive": sandbox._owner(),
        "other boot": f"00000000-0000-0000-0000-000000000000/{namespace}/{gone.pid}/{started}",
        "other namespace": f"{boot}/1/{gone.pid}/{started}",
    }
    image = sandbox._docker_root_image("docker")
    made = {}
    try:
        for who, owner in owners.items():
            created = process.run(
                ["docker", "create", "--label", f"gauntlet.owner={owner}", image, "/usr/bin/true"],
                timeout_s=sandbox.PROBE_TIMEOUT_S,
            )
            assert created.returncode == 0, created.stderr
            made[who] = created.stdout.strip()
        sandbox._reap_orphans.cache_clear()
        sandbox._reap_orphans("docker")
        left = {line.split()[0] for line in docker_containers("label=gauntlet.owner")}
        assert {who for who, container in made.items() if container in left} == {
            "alive",
            "other boot",
            "other namespace",
        }
    finally:
        process.run(["docker", "rm", "--force", *made.values()], timeout_s=60)
