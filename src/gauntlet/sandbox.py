"""Sandboxes for agent processes: `auto`, `bwrap`, `confine`, `docker` and `none`.

`prepare` turns an agent's command into the command that starts it inside the chosen sandbox:

- `auto` (the default): the strongest sandbox that works on this machine, `bwrap`, else
  `confine`, else `docker`, else `none` with a warning (`resolve` says which and why).
- `bwrap` (bubblewrap): a new mount, PID, IPC, UTS and user namespace (network too unless
  `network` is on). The file system holds only the workspace and the extra writable folders
  (read-write), the toolchain (read-only: `/usr`, a few files of `/etc`, the Python
  installation, the virtual environment, the `gauntlet` package for `gauntlet-ws`, the agent's
  own installation), and fresh `/tmp`, `/proc`, `/dev`. The task folder (hidden configs, expert
  solution), the run directory and other attempts' workspaces are not there. Killing bwrap kills
  everything inside: the agent runs as PID 1's child in its own PID namespace.
- `confine`: the same view through `gauntlet.confine`, the launcher the judge confines its
  candidate workers with (standard library only), for machines without bubblewrap: user, PID,
  mount, IPC, UTS and network namespaces, a non-root id inside, every process it leaves killed
  with the namespace.
- `docker`: the same view in a container, for machines where user namespaces are closed to
  unprivileged users but a Docker daemon answers: the host's toolchain and the agent's own
  installation mounted read-only at the same paths, the workspace and the extra folders
  writable, a fresh `/tmp`, no capabilities, a read-only root made by `docker import` from an
  almost empty tree (no registry is needed). The container runs as the harness's user. It
  lives only while its `Launch` is open: its first process, `gauntlet.tether`, ends it as soon
  as the process that prepared it closes the launch or dies (Ctrl-C's kill, `kill -9`), since
  Docker itself keeps a container running when its `docker run` client is killed. Each
  container is labelled with that owner, and containers whose owner is gone (one created but
  never started) are removed at the next docker sandbox this host prepares.
- `none`: the command itself, in the workspace, with the scrubbed environment it is given. It
  contains nothing: the agent reads and writes whatever the user can. Only when asked for (or
  when `auto` finds no sandbox), and recorded with the attempt as unsandboxed.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import os
import secrets
import shutil
import socket
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gauntlet import confine, process, tether
from gauntlet.errors import ConfigError

logger = logging.getLogger(__name__)

SandboxKind = Literal["auto", "bwrap", "confine", "docker", "none"]
SANDBOX_KINDS: tuple[str, ...] = SandboxKind.__args__  # type: ignore[attr-defined]
#: What `auto` tries, strongest first; `none` when none works.
AUTO_ORDER = ("bwrap", "confine", "docker")

#: The repository of the container root `docker` makes (tagged with a digest of its content).
DOCKER_ROOT_IMAGE = "gauntlet-sandbox-root"
#: The label naming a container's owner: the host's boot, the owner's PID namespace, its pid
#: and its start time (`_owner`), which no other process of this host ever shares.
DOCKER_OWNER_LABEL = "gauntlet.owner"

#: Read-only system folders of the toolchain; top-level symlinks (`/bin -> usr/bin`) are kept.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")

#: Files and folders of /etc that programs need (users, name resolution, TLS, the loader).
ETC_ENTRIES = (
    "passwd",
    "group",
    "hosts",
    "hostname",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "localtime",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "mime.types",
)

#: Files of /etc that Docker writes into every container itself (not mounted from the host).
DOCKER_ETC = ("hosts", "hostname", "resolv.conf")
#: Where Docker mounts its init (`/sbin/docker-init`): a mount or link there would hide it, so
#: it stays Docker's (the host's `/usr/sbin` is visible under `/usr`).
DOCKER_INIT_DIR = "/sbin"
#: The system folders a container shows, as links (`/bin -> usr/bin`) or read-only mounts.
DOCKER_SYSTEM_DIRS = tuple(d for d in SYSTEM_DIRS if d != DOCKER_INIT_DIR)

#: Seconds the usability probe of bwrap or docker may take.
PROBE_TIMEOUT_S = 20.0


class SandboxSpec(BaseModel):
    """Which sandbox an agent process runs in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SandboxKind = "auto"
    network: bool = True
    """Whether the agent can reach the network (CLI agents need it for their model's API): the
    host's network, as the harness sees it (a model server on 127.0.0.1 included)."""


class Tether:
    """The owner's end of a container's tether (`gauntlet.tether`).

    A Unix socket listening in a private folder, which the container's first process connects
    to and the owner never accepts: when it closes, by `close` or with this process, the
    pending connection is reset and the container ends. Not inherited by any child process.
    """

    def __init__(self) -> None:
        """Listen in a fresh folder under the temporary directory."""
        self.folder = Path(tempfile.mkdtemp(prefix="gauntlet-tether-"))
        self.socket_path = self.folder / "owner.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(str(self.socket_path))
            self._listener.listen(1)
        except OSError:
            self.close()
            raise

    def close(self) -> None:
        """Cut the tether: the container it holds ends."""
        self._listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class Launch:
    """How to start a sandboxed command; closing it ends what it started (`docker`).

    Use it as a context manager around the process it starts.
    """

    argv: list[str]
    env: dict[str, str]
    """The environment of the process started (bwrap or the docker client passes it on)."""
    cwd: Path
    tether: Tether | None = None
    """The container's tether (`docker`): the container lives while the launch is open."""

    def close(self) -> None:
        """End the sandbox's container, if it has one (at once, whatever runs inside)."""
        if self.tether is not None:
            self.tether.close()

    def __enter__(self) -> Launch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def prepare(
    spec: SandboxSpec,
    argv: Sequence[str],
    *,
    workspace: Path,
    env: Mapping[str, str],
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    name: str = "gauntlet-agent",
) -> Launch:
    """The command that runs `argv` in `workspace` inside the sandbox `spec`.

    Args:
        spec: The sandbox.
        argv: The agent's command; `argv[0]` is resolved on `env["PATH"]`.
        workspace: The attempt's workspace: the working directory, writable.
        env: The agent's whole (already scrubbed) environment.
        writable: Further folders the agent may write (its home, the tool server's socket).
        readable: Further folders it may read (beyond the toolchain and the agent's binary).
        hidden: Paths that must stay invisible (the task folder); `bwrap` refuses to start when
            one of its binds would show them.
        name: A name for the container (`docker`; a random suffix keeps it unique).

    Returns:
        The command, its environment and working directory; close it once the process is
        gone (a `docker` container lives until then, or until this process dies).

    Raises:
        ConfigError: The sandbox is not usable here, or it would show a `hidden` path.
    """
    workspace = Path(workspace).resolve()
    kind, _ = resolve(spec.kind)
    if kind == "none":
        return Launch(argv=list(argv), env=dict(env), cwd=workspace)
    problem = availability(kind)
    if problem is not None:
        raise ConfigError(f"sandbox '{kind}' is not usable here: {problem}")
    read_only = toolchain_paths() + binary_paths(argv[0], env.get("PATH", ""))
    read_only += [Path(p).resolve() for p in readable]
    read_write = [workspace, *(Path(p).resolve() for p in writable)]
    shown = [Path(d) for d in SYSTEM_DIRS if Path(d).is_dir() and not Path(d).is_symlink()]
    for secret in (Path(h).resolve() for h in hidden):
        exposed = next(
            (b for b in [*shown, *read_only, *read_write] if secret.is_relative_to(b)), None
        )
        if exposed is not None:
            raise ConfigError(
                f"sandbox '{kind}' would show '{secret}' to the agent: it lies under "
                f"'{exposed}', which the sandbox shows; move the task suite elsewhere "
                "(GAUNTLET_TASKS_DIR)"
            )
    if kind == "bwrap":
        return _bwrap(spec, argv, workspace, env, _outermost(read_only), read_write)
    if kind == "docker":
        return _docker(spec, argv, workspace, env, _outermost(read_only), read_write, name)
    return _confine(spec, argv, workspace, env, _outermost(read_only), read_write)


def availability(kind: str) -> str | None:
    """None when sandbox `kind` works here, else why not (with the remedy)."""
    if kind in ("none", "auto"):
        return None
    if kind == "bwrap":
        return _bwrap_problem()
    if kind == "confine":
        return confine.available()
    if kind == "docker":
        return _docker_problem()
    raise ConfigError(f"unknown sandbox '{kind}' (known: {', '.join(SANDBOX_KINDS)})")


def resolve(kind: str) -> tuple[str, str]:
    """The sandbox that `kind` stands for here, and a note when `auto` found none that works.

    Every kind but `auto` stands for itself. `auto` is the first of `AUTO_ORDER` that works,
    else `none`, with the note saying why each failed (a warning is logged once).
    """
    if kind not in SANDBOX_KINDS:
        raise ConfigError(f"unknown sandbox '{kind}' (known: {', '.join(SANDBOX_KINDS)})")
    if kind != "auto":
        return kind, ""
    problems = []
    for candidate in AUTO_ORDER:
        problem = availability(candidate)
        if problem is None:
            return candidate, ""
        problems.append(f"{candidate}: {problem}")
    note = "no sandbox works here, so agents run unsandboxed (" + "; ".join(problems) + ")"
    _warn_unsandboxed(note)
    return "none", note


@functools.cache
def _warn_unsandboxed(note: str) -> None:
    logger.warning("%s", note)


def toolchain_paths() -> list[Path]:
    """Folders outside the system ones that programs in the sandbox need, read-only.

    The Python installation, the virtual environment and the folder holding the `gauntlet`
    package (for `gauntlet-ws`); never the task suite or a run directory.
    """
    import gauntlet

    package_root = Path(gauntlet.__file__).resolve().parent.parent
    paths = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), package_root]
    return _outermost([p for p in paths if not _under_system(p)])


def binary_paths(argv0: str, path_env: str) -> list[Path]:
    """Folders holding an agent's executable and its script interpreter, for read-only binds.

    Follows the symlink (`codex` -> `.../node_modules/@openai/codex/bin/codex.js`) and the `#!`
    line (`/usr/bin/env node` -> the `node` found on PATH). An executable inside a
    `node_modules` tree brings the whole tree (npm installs a client's platform binary as a
    package beside it: `@openai/codex-linux-x64`); one inside a Python virtual environment
    brings the environment and the Python installation it was made from.
    """
    found: list[Path] = []
    resolved = shutil.which(argv0, path=path_env)
    if resolved is None:
        return found
    for executable in (Path(resolved), Path(resolved).resolve()):
        found.append(executable.parent)
        found += _install_roots(executable)
    interpreter = _shebang_interpreter(Path(resolved).resolve(), path_env)
    if interpreter is not None:
        found += [interpreter.parent, interpreter.resolve().parent]
        found += _install_roots(interpreter)
    return _outermost([p for p in found if not _under_system(p)])


def _install_roots(executable: Path) -> list[Path]:
    """Where a client is installed, beyond the folder of its executable.

    The outermost `node_modules` above `executable`, or the virtual environment it is in and
    that environment's Python installation (`home` in its `pyvenv.cfg`).
    """
    modules = [p for p in executable.parents if p.name == "node_modules"]
    if modules:
        return [modules[-1]]
    venv = executable.parent.parent
    config = venv / "pyvenv.cfg"
    if not config.is_file():
        return []
    roots = [venv]
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            roots.append(Path(value.strip()).resolve().parent)
    return roots


def _bwrap(
    spec: SandboxSpec,
    argv: Sequence[str],
    workspace: Path,
    env: Mapping[str, str],
    read_only: Sequence[Path],
    read_write: Sequence[Path],
) -> Launch:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None  # availability() checked it
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
    if spec.network:
        args.append("--share-net")
    args += _system_binds()
    # Fresh /tmp first: the binds that follow may lie under /tmp and must stay visible.
    args += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in read_write:
        args += ["--bind", str(path), str(path)]
    args += ["--chdir", str(workspace), "--", *argv]
    return Launch(argv=args, env=dict(env), cwd=workspace)


def _confine(
    spec: SandboxSpec,
    argv: Sequence[str],
    workspace: Path,
    env: Mapping[str, str],
    read_only: Sequence[Path],
    read_write: Sequence[Path],
) -> Launch:
    # The launcher shows confine.SYSTEM_DIRS itself; the other system folders (/opt, where
    # agents' runtimes are often installed) are shown read-only like the rest of the toolchain.
    extra = [Path(d) for d in SYSTEM_DIRS if d not in confine.SYSTEM_DIRS and Path(d).is_dir()]
    confinement = confine.Confinement(
        readonly=tuple(_outermost([*extra, *read_only])),
        writable=tuple(read_write),
        network=spec.network,
        cwd=workspace,
    )
    return Launch(argv=confine.confined_argv(argv, confinement), env=dict(env), cwd=workspace)


def _docker(
    spec: SandboxSpec,
    argv: Sequence[str],
    workspace: Path,
    env: Mapping[str, str],
    read_only: Sequence[Path],
    read_write: Sequence[Path],
    name: str,
) -> Launch:
    docker = shutil.which("docker")
    assert docker is not None  # availability() checked it
    # Two runs may hold attempts of the same name; a container's name must be unique.
    safe = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in name)
    container = f"{safe}-{secrets.token_hex(4)}"
    # The tether runs on this interpreter, as a file of this package (both in toolchain_paths);
    # a script, so that it imports nothing but the standard library wherever the package is.
    read_only = _outermost([*read_only, *toolchain_paths()])
    volumes = [
        (Path(d), True) for d in DOCKER_SYSTEM_DIRS if Path(d).is_dir() and not Path(d).is_symlink()
    ]
    volumes += [
        (Path("/etc", e), True)
        for e in ETC_ENTRIES
        if e not in DOCKER_ETC and Path("/etc", e).exists()
    ]
    volumes += [(p, True) for p in read_only] + [(p, False) for p in read_write]
    for path, _ in volumes:
        if ":" in str(path):
            raise ConfigError(f"sandbox 'docker' cannot mount '{path}': its path holds a ':'")
    image = _docker_root_image(docker)
    _reap_orphans(docker)
    owner_end = Tether()
    # --interactive: the client streams its stdin into the container (a generic agent's
    # prompt); without it the command reads an empty stdin.
    args = [docker, "run", "--rm", "--init", "--interactive", "--name", container]
    args += ["--label", f"{DOCKER_OWNER_LABEL}={_owner()}"]
    # The host's network when on, as bwrap and confine share it: a model server on 127.0.0.1
    # answers (a bridge network would not reach it).
    args += ["--network", "host" if spec.network else "none"]
    args += ["--user", f"{os.getuid()}:{os.getgid()}", "--read-only", "--cap-drop", "ALL"]
    args += ["--security-opt", "no-new-privileges"]
    args += ["--tmpfs", "/tmp:rw,exec,mode=1777"]
    for path, ro in [*volumes, (owner_end.folder, True)]:
        args += ["--volume", f"{path}:{path}" + (":ro" if ro else "")]
    args += ["--workdir", str(workspace)]
    for key in sorted(env):
        args += ["--env", key]  # the value comes from the docker client's environment
    args += [image, *tether_argv(owner_end.socket_path, argv)]
    # The client itself needs the user's Docker settings (another daemon, a context).
    client_env = {k: v for k, v in os.environ.items() if k.startswith("DOCKER_")}
    return Launch(argv=args, env=dict(env) | client_env, cwd=workspace, tether=owner_end)


def tether_argv(socket_path: Path, argv: Sequence[str]) -> list[str]:
    """`argv` run under the tether (`gauntlet.tether`) held by the socket at `socket_path`."""
    return [
        sys.executable,
        "-I",
        str(Path(tether.__file__).resolve()),
        str(socket_path),
        "--",
        *argv,
    ]


def _owner() -> str:
    """This process as a container's owner: `boot/pidns/pid/start`, unique on this host.

    The boot id tells this boot from others, the PID namespace this process's pids from those
    of a harness in another container of the same kernel, the start time (clock ticks after
    boot) this process from a later one that reuses its pid.
    """
    pid = os.getpid()
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    return f"{boot}/{namespace}/{pid}/{_start_time(pid)}"


def _start_time(pid: int) -> str | None:
    """A process's start time in clock ticks after boot (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The fields after the command's name (which may hold spaces and parentheses); the 22nd
    # field of the line, starttime, is the 20th of these.
    return stat.rpartition(")")[2].split()[19]


def _owner_gone(owner: str) -> bool:
    """Whether the owner a label names has certainly ended.

    Never for another boot's or another PID namespace's owner: this process cannot see those.
    """
    here_boot, here_namespace, _, _ = _owner().split("/")
    boot, namespace, pid, started = (owner.split("/") + ["", "", "", ""])[:4]
    if (boot, namespace) != (here_boot, here_namespace) or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started


@functools.cache
def _reap_orphans(docker: str) -> None:
    """Remove this host's sandbox containers whose owner is gone; once per process.

    The tether ends a running container with its owner; this takes what it cannot: a
    container created but never started (its client killed in between), or one whose tether
    was kept from ending it.
    """
    listed = process.run(
        [
            docker,
            "ps",
            "--all",
            "--filter",
            f"label={DOCKER_OWNER_LABEL}",
            "--format",
            f'{{{{.ID}}}}\t{{{{.Label "{DOCKER_OWNER_LABEL}"}}}}',
        ],
        timeout_s=PROBE_TIMEOUT_S,
    )
    if listed.returncode != 0:
        logger.debug("cannot list sandbox containers: %s", listed.stderr.strip())
        return
    orphans = [
        container
        for container, _, owner in (line.partition("\t") for line in listed.stdout.splitlines())
        if _owner_gone(owner)
    ]
    if not orphans:
        return
    removed = process.run([docker, "rm", "--force", *orphans], timeout_s=PROBE_TIMEOUT_S)
    if removed.returncode != 0:
        logger.warning(
            "cannot remove sandbox containers %s, whose owners are gone: %s",
            ", ".join(orphans),
            removed.stderr.strip(),
        )
    else:
        logger.info("removed sandbox containers whose owners are gone: %s", ", ".join(orphans))


def _docker_root_tar() -> bytes:
    """The container's root: the host's top-level links (`/bin -> usr/bin`) and `/tmp`.

    Every folder the agent sees is a mount; the links make paths such as `/bin/sh` and the
    loader's `/lib64/...` resolve as on the host. `/tmp` is there with mode 1777 because
    runc gives a tmpfs the mode of the folder it covers whenever that folder exists, whatever
    its `mode=` option says, and Docker makes the working directory (the workspace, often
    under `/tmp`) in the root before it mounts anything: a `/tmp` it made then (0755, root's)
    would leave the container's `/tmp` unwritable to any other user. (Claude Code 2.1.197
    makes `/tmp/claude-<uid>` at its start and exits 0 silently when it cannot.)
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for entry in DOCKER_SYSTEM_DIRS:
            path = Path(entry)
            if path.is_symlink():
                info = tarfile.TarInfo(entry.lstrip("/"))
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
                tar.addfile(info)
        tmp = tarfile.TarInfo("tmp")
        tmp.type = tarfile.DIRTYPE
        tmp.mode = 0o1777
        tar.addfile(tmp)
    return buffer.getvalue()


@functools.cache
def _docker_root_image(docker: str) -> str:
    """The root image's tag, imported into the daemon when it is not there yet.

    Raises:
        ConfigError: Docker cannot import it.
    """
    content = _docker_root_tar()
    tag = f"{DOCKER_ROOT_IMAGE}:{hashlib.sha256(content).hexdigest()[:16]}"
    if process.run([docker, "image", "inspect", tag], timeout_s=PROBE_TIMEOUT_S).returncode == 0:
        return tag
    made = process.run([docker, "import", "-", tag], timeout_s=PROBE_TIMEOUT_S, stdin_data=content)
    if made.returncode != 0:
        raise ConfigError(
            f"sandbox 'docker' cannot make its root image '{tag}': {made.stderr.strip()}"
        )
    return tag


def _system_binds() -> list[str]:
    args: list[str] = []
    for entry in SYSTEM_DIRS:
        path = Path(entry)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), entry]
        elif path.is_dir():
            args += ["--ro-bind", entry, entry]
    for name in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def _under_system(path: Path) -> bool:
    return any(path.is_relative_to(d) for d in SYSTEM_DIRS if Path(d).is_dir())


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """The paths without those inside another one of them, in order, without duplicates."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if path.exists() and not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def _shebang_interpreter(script: Path, path_env: str) -> Path | None:
    try:
        with script.open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        found = shutil.which(rest[0], path=path_env) if rest else None
        return Path(found) if found else None
    return Path(words[0])


@functools.cache
def _bwrap_problem() -> str | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "the 'bwrap' command is missing; install it with 'apt-get install bubblewrap'"
    true = shutil.which("true") or "/usr/bin/true"
    argv = [bwrap, "--die-with-parent", "--unshare-all", *_system_binds()]
    argv += ["--proc", "/proc", "--dev", "/dev", "--", true]
    try:
        finished = process.run(argv, timeout_s=PROBE_TIMEOUT_S)
    except OSError as err:
        return f"'{bwrap}' cannot be started: {err}"
    if finished.returncode != 0:
        detail = finished.stderr.strip().splitlines()
        return (
            f"bwrap cannot create a sandbox ({detail[-1] if detail else finished.returncode}); "
            "unprivileged user namespaces may be disabled (sysctl "
            "kernel.unprivileged_userns_clone=1)"
        )
    return None


@functools.cache
def _docker_problem() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "the 'docker' command is missing; install Docker (https://docs.docker.com/engine/install/)"
    try:
        finished = process.run(
            [docker, "version", "--format", "{{.Server.Version}}"], timeout_s=PROBE_TIMEOUT_S
        )
    except OSError as err:
        return f"'{docker}' cannot be started: {err}"
    if finished.returncode != 0:
        detail = finished.stderr.strip().splitlines()
        return f"the Docker daemon is not reachable ({detail[-1] if detail else 'no answer'})"
    # A container must really start with the mounts: some daemons refuse a read-only root,
    # dropped capabilities or the host network.
    true = shutil.which("true") or "/usr/bin/true"
    with tempfile.TemporaryDirectory(prefix="gauntlet-docker-probe-") as tmp:
        try:
            launch = _docker(
                SandboxSpec(kind="docker", network=False),
                [true],
                Path(tmp),
                {"PATH": "/usr/bin:/bin"},
                [],
                [Path(tmp)],
                "gauntlet-probe",
            )
        except ConfigError as err:
            return str(err)
        with launch:
            started = process.run(launch.argv, env=launch.env, timeout_s=PROBE_TIMEOUT_S)
    if started.returncode != 0:
        detail = started.stderr.strip().splitlines()
        return f"docker cannot start a container ({detail[-1] if detail else started.returncode})"
    return None
