"""Confinement of a command in Linux namespaces: a small bubblewrap without dependencies.

`confined_argv` turns a command into one that runs it confined, and `available` says whether
that works here. The launcher (this file run as a script, or `python -m gauntlet.confine`) uses
only the standard library and `ctypes`, and does, in order:

1. Outside: resolve and check every path, then unshare the user, PID, IPC and UTS namespaces
   (and the network one unless `network`), map a non-zero id inside (the caller's own uid, or
   1000 for root) to the caller's uid and gid, so that the capabilities the new user namespace
   grants are dropped at `execve`; then fork.
2. The child is PID 1 of the new PID namespace (`init`; it dies with the launcher through
   `PR_SET_PDEATHSIG`). It unshares the mount namespace, mounts a tmpfs as the new root,
   `pivot_root`s into it (never `chroot`: a chroot can be escaped), fills it (below), detaches
   the old root, forbids further user namespaces, makes `/` read-only and forks the command.
3. The command (PID 2) starts a new session, sets `PR_SET_NO_NEW_PRIVS` and `execve`s. When it
   ends, `init` reports its status to the launcher and exits; the kernel then kills whatever is
   left in the namespace (double forks and `setsid` included). The launcher exits with the
   command's code, or dies of the same signal, so the caller sees what it would see unconfined.

`launch` does the same in the calling process with a callable as PID 2's command: a zygote's
forked child (`gauntlet.zygote`) runs a module of the interpreter it already has, and since
no `execve` drops the capabilities the user namespace granted, `drop_capabilities` does.

Inside, by default: the toolchain read-only (`SYSTEM_DIRS`, with top-level symlinks such as
`/bin -> usr/bin` kept as symlinks, and `ETC_ENTRIES` of `/etc`), the `readonly` paths read-only
and the `writable` ones read-write (each at its resolved host path), a fresh `/proc` showing only
the namespace's processes, a minimal `/dev` (`DEV_NODES`, `/dev/shm` as tmpfs, plus `devices`),
a fresh tmpfs `/tmp`, `/sys` read-only only when `sysfs` is set, loopback only (up) unless
`network`, hostname `HOSTNAME`. Nothing else: no `/home`, `/root`, `/work`, `/run` or `/var`.

Memory that no address-space limit (`RLIMIT_AS`) counts: the pages of a tmpfs file and of a
System V shared-memory segment belong to no process, so the kernel's OOM killer, looking for
whom to kill, finds some other process (the judge). With `shared_memory_bytes`, the command's
`/tmp` and `/dev/shm` are each a tmpfs of that size (a write past it fails with `ENOSPC`) and
its IPC namespace's System V segments hold at most that much in all (`kernel.shmall`,
`kernel.shmmax`). A memory file (`memfd_create`) is bounded by the caller, per file
(`RLIMIT_FSIZE`). This launcher makes no memory cgroup, which would bound them all; the judge
puts a GPU candidate's confined tree in one of its own where the machine allows it
(`gauntlet.memcg`; off by default, `settings.MEMORY_CGROUP`), since its cap, the data
segment, counts no shared mapping either.

Signals `FORWARDED_SIGNALS` sent to the launcher are passed on to the command. File descriptors
the caller passes stay open into the command. A setup failure prints one line,
`confine: cannot <step> '<path>': <reason>`, and exits with `SETUP_FAILED`.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import glob
import json
import os
import resource
import signal
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

TYPE_CHECKING = False  # mypy reads this as True; the launcher starts faster without `typing`
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Literal, NoReturn

# Everything the launcher uses is imported above: after `pivot_root` the standard library's
# files may not be visible any more.

#: Exit code of the launcher when confinement could not be set up (as `docker run` uses it).
SETUP_FAILED = 125
#: Exit code when the command cannot be executed, and when it is not found (as a shell's).
EXEC_FAILED = 126
NOT_FOUND = 127

#: Top-level system folders shown read-only (or as the symlinks they are).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Entries of /etc that programs need (users, name resolution, TLS, time zone, the loader).
ETC_ENTRIES = (
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "resolv.conf",
    "localtime",
    "timezone",
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "mime.types",
)
#: Device nodes always shown in /dev.
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
#: Device globs a CUDA program needs (pass them as `devices`, with `sysfs=True`).
NVIDIA_DEVICES = ("/dev/nvidia*", "/dev/dri")
#: Signals the launcher and `init` pass on to the command.
FORWARDED_SIGNALS = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
#: The uid and gid inside when the caller is root (never 0: capabilities must not survive exec).
ROOT_INSIDE_ID = 1000
HOSTNAME = "gauntlet"
#: Seconds the `available` probe may take.
PROBE_TIMEOUT_S = 20.0

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REMOUNT = 0x20
_MS_NOATIME = 0x400
_MS_NODIRATIME = 0x800
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_MS_RELATIME = 0x200000
#: statvfs flags that a read-only remount must repeat (the kernel refuses to clear locked ones).
_KEPT_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_NOATIME | _MS_NODIRATIME | _MS_RELATIME
_MNT_DETACH = 0x2
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_SYSCALLS = {"x86_64": {"pivot_root": 155, "mount_setattr": 442}}
_SYSCALLS["aarch64"] = {"pivot_root": 41, "mount_setattr": 442}
#: Where the new root's tmpfs is mounted before `pivot_root`, and the old root's name in it.
_BASE = "/tmp"
_OLD_ROOT = "/.confine-old-root"
_LAUNCHER = str(Path(__file__).resolve())


@dataclass(frozen=True)
class Confinement:
    """What a confined command sees besides the toolchain, `/proc`, `/dev` and a fresh `/tmp`."""

    readonly: tuple[Path, ...] = ()
    """Paths shown read-only at their (resolved) host path: the Python installation, the venv."""
    writable: tuple[Path, ...] = ()
    """Paths shown read-write at their (resolved) host path: the worker's private folder."""
    devices: tuple[str, ...] = ()
    """Further entries of /dev, as globs (`NVIDIA_DEVICES` for a GPU); none matching is fine."""
    network: bool = False
    """Share the caller's network namespace (else only a loopback of its own)."""
    sysfs: bool = False
    """Show /sys read-only (CUDA reads the PCI topology there)."""
    cwd: Path | None = None
    """Working directory inside (None: the caller's when visible, else `/`)."""
    shared_memory_bytes: int = 0
    """Bytes that `/tmp`, `/dev/shm` and System V shared memory may each hold (0: the kernel's
    defaults, half the host's memory for a tmpfs)."""

    def to_json(self) -> str:
        """The spec the launcher reads."""
        return json.dumps(
            {
                "readonly": [str(p) for p in self.readonly],
                "writable": [str(p) for p in self.writable],
                "devices": list(self.devices),
                "network": self.network,
                "sysfs": self.sysfs,
                "cwd": None if self.cwd is None else str(self.cwd),
                "shared_memory_bytes": self.shared_memory_bytes,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Confinement:
        """Read a spec written by `to_json`; raises `ValueError` when it is not one."""
        data = json.loads(text)
        if not isinstance(data, dict) or set(data) != set(_SPEC_KEYS):
            raise ValueError(f"the spec needs exactly the keys {', '.join(_SPEC_KEYS)}")
        lists = {k: data[k] for k in ("readonly", "writable", "devices")}
        for key, value in lists.items():
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"'{key}' must be a list of strings")
        if not isinstance(data["network"], bool) or not isinstance(data["sysfs"], bool):
            raise ValueError("'network' and 'sysfs' must be booleans")
        if data["cwd"] is not None and not isinstance(data["cwd"], str):
            raise ValueError("'cwd' must be a string or null")
        shared = data["shared_memory_bytes"]
        if type(shared) is not int or shared < 0:
            raise ValueError("'shared_memory_bytes' must be a non-negative integer")
        return cls(
            readonly=tuple(Path(p) for p in lists["readonly"]),
            writable=tuple(Path(p) for p in lists["writable"]),
            devices=tuple(lists["devices"]),
            network=data["network"],
            sysfs=data["sysfs"],
            cwd=None if data["cwd"] is None else Path(data["cwd"]),
            shared_memory_bytes=shared,
        )


_SPEC_KEYS = ("readonly", "writable", "devices", "network", "sysfs", "cwd", "shared_memory_bytes")


def confined_argv(argv: Sequence[str], confinement: Confinement) -> list[str]:
    """The command that runs `argv` confined by `confinement` (start it with `process.Child`).

    The launcher runs in isolated mode (`-I -S`): the environment given to the command does not
    change the launcher, and it passes that environment on unchanged.
    """
    if not argv:
        raise ValueError("confined_argv needs a command")
    return [sys.executable, "-I", "-S", _LAUNCHER, "--spec", confinement.to_json(), "--", *argv]


def python_paths() -> tuple[Path, ...]:
    """The read-only paths a Python program of this interpreter needs to import `gauntlet`.

    The Python installation, the virtual environment and the folder holding the package (`src`),
    never the repository around them (the task suite lives there).
    """
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    paths.add(Path(__file__).resolve().parent.parent)
    system = [Path(d) for d in SYSTEM_DIRS]
    return tuple(sorted(p for p in paths if not any(p.is_relative_to(d) for d in system)))


@functools.cache
def available() -> str | None:
    """None when confinement works here, else why not (probed once per process)."""
    if sys.platform != "linux":
        return f"confinement needs Linux namespaces (this is {sys.platform})"
    if os.uname().machine not in _SYSCALLS:
        return f"confinement knows no syscall numbers for '{os.uname().machine}'"
    from gauntlet import process

    argv = confined_argv(["true"], Confinement())
    try:
        finished = process.run(argv, timeout_s=PROBE_TIMEOUT_S, env={"PATH": "/usr/bin:/bin"})
    except OSError as err:
        return f"the confinement launcher cannot start: {err}"
    if finished.returncode == 0:
        return None
    lines = finished.stderr.strip().splitlines()
    detail = lines[-1] if lines else f"exit code {finished.returncode}"
    return f"{detail} (are user namespaces enabled? see /proc/sys/user/max_user_namespaces)"


# ---- the launcher: standard library only, no exceptions escape as tracebacks ----


class SetupError(Exception):
    """A step of setting up the confinement failed."""

    def __init__(self, step: str, path: str, reason: str) -> None:
        super().__init__(f"cannot {step} '{path}': {reason}")


@dataclass(frozen=True)
class _Step:
    kind: Literal["bind", "symlink", "tmpfs", "proc"]
    path: str
    source: str = ""
    readonly: bool = True


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, step: str, path: str) -> None:
    if result < 0:
        err = ctypes.get_errno()
        raise SetupError(step, path, os.strerror(err))


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> int:
    enc = os.fsencode
    return int(
        _libc.mount(
            None if source is None else enc(source),
            enc(target),
            None if fstype is None else enc(fstype),
            ctypes.c_ulong(flags),
            enc(data) if data else None,
        )
    )


def _syscall(name: str, *args: object) -> int:
    number = _SYSCALLS[os.uname().machine][name]
    return int(_libc.syscall(ctypes.c_long(number), *args))


def _make_readonly(path: str, *, recursive: bool) -> None:
    """Make the mount at `path` (and those under it if `recursive`) read-only."""

    class MountAttr(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ("set", "clr", "prop", "userns_fd")]

    attr = MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    flags = _AT_RECURSIVE if recursive else 0
    at_fdcwd = ctypes.c_int(-100)
    size = ctypes.c_size_t(ctypes.sizeof(attr))
    args = (at_fdcwd, os.fsencode(path), ctypes.c_uint(flags), ctypes.byref(attr), size)
    if _syscall("mount_setattr", *args) == 0:
        return
    if ctypes.get_errno() != 38:  # ENOSYS: kernels before 5.12 remount, mounts under it stay
        _check(-1, "make read-only", path)
    kept = os.statvfs(path).f_flag & _KEPT_FLAGS
    _check(_mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept), "remount", path)


def _plan(confinement: Confinement) -> list[_Step]:
    """The mounts that build the new root, from paths resolved and checked on the host."""
    steps: list[_Step] = []
    for entry in SYSTEM_DIRS:
        if os.path.islink(entry):
            steps.append(_Step("symlink", entry, os.readlink(entry)))
        elif os.path.isdir(entry):
            steps.append(_Step("bind", entry, entry))
    for name in ETC_ENTRIES:
        if os.path.exists(f"/etc/{name}"):
            steps.append(_Step("bind", f"/etc/{name}", os.path.realpath(f"/etc/{name}")))
    bounded = f",size={confinement.shared_memory_bytes}" if confinement.shared_memory_bytes else ""
    steps.append(_Step("tmpfs", "/tmp", "mode=1777" + bounded))
    steps.append(_Step("tmpfs", "/dev", "mode=0755"))
    for name in DEV_NODES:
        if os.path.exists(f"/dev/{name}"):
            steps.append(_Step("bind", f"/dev/{name}", f"/dev/{name}", readonly=False))
    for index, name in enumerate(("stdin", "stdout", "stderr")):
        steps.append(_Step("symlink", f"/dev/{name}", f"/proc/self/fd/{index}"))
    steps.append(_Step("symlink", "/dev/fd", "/proc/self/fd"))
    steps.append(_Step("tmpfs", "/dev/shm", "mode=1777" + bounded))
    for pattern in confinement.devices:
        for found in sorted(glob.glob(pattern)):
            real = os.path.realpath(found)
            if not real.startswith("/dev/"):
                raise SetupError("show device", found, "it is not under /dev")
            steps.append(_Step("bind", real, real, readonly=False))
    steps.append(_Step("proc", "/proc"))
    if confinement.sysfs:
        steps.append(_Step("bind", "/sys", "/sys"))
    shown = [(p, True) for p in confinement.readonly] + [(p, False) for p in confinement.writable]
    user: list[_Step] = []
    for path, readonly in shown:
        kind = "readonly" if readonly else "writable"
        if not path.is_absolute():
            raise SetupError(f"show {kind} path", str(path), "it is not absolute")
        real = os.path.realpath(path)
        if not os.path.exists(real):
            raise SetupError(f"show {kind} path", str(path), "it does not exist")
        if real == "/":
            raise SetupError(f"show {kind} path", str(path), "that is the whole file system")
        user.append(_Step("bind", real, real, readonly))
    # Outer paths first, so that a path inside another one is mounted on top of it.
    steps += sorted(user, key=lambda s: s.path.count("/"))
    return steps


def _apply(step: _Step) -> None:
    """Carry out one step inside the new root, with the host's root at `_OLD_ROOT`."""
    path = step.path
    if step.kind == "symlink":
        try:
            os.symlink(step.source, path)
        except OSError as err:
            raise SetupError("make symlink", path, err.strerror or str(err)) from err
        return
    try:
        source_is_dir = step.kind != "bind" or os.path.isdir(_OLD_ROOT + step.source)
        if source_is_dir:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.exists(path):
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError as err:
        raise SetupError("make mount point", path, err.strerror or str(err)) from err
    if step.kind == "tmpfs":
        flags = _MS_NOSUID | _MS_NODEV
        _check(_mount("tmpfs", path, "tmpfs", flags, step.source), "mount tmpfs on", path)
    elif step.kind == "proc":
        flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        _check(_mount("proc", path, "proc", flags), "mount proc on", path)
    else:
        _check(_mount(_OLD_ROOT + step.source, path, None, _MS_BIND | _MS_REC), "bind", path)
        if step.readonly:
            _make_readonly(path, recursive=True)


def _write(path: str, text: str, step: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError as err:
        raise SetupError(step, path, err.strerror or str(err)) from err


def _enter_namespaces(network: bool) -> None:
    """Unshare all but the mount namespace and map a non-zero id inside to ours."""
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
    if not network:
        flags |= _CLONE_NEWNET
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare namespaces for", "self")
    _write("/proc/self/setgroups", "deny", "deny setgroups in")
    _write("/proc/self/uid_map", f"{uid or ROOT_INSIDE_ID} {uid} 1\n", "map uid in")
    _write("/proc/self/gid_map", f"{gid or ROOT_INSIDE_ID} {gid} 1\n", "map gid in")


def _build_root(steps: Sequence[_Step]) -> None:
    """In a new mount namespace: a tmpfs root holding what `steps` show, and nothing else."""
    _check(_libc.unshare(ctypes.c_int(_CLONE_NEWNS)), "unshare the mount namespace of", "/")
    _check(_mount(None, "/", None, _MS_REC | _MS_PRIVATE), "make private", "/")
    flags = _MS_NOSUID | _MS_NODEV
    _check(_mount("tmpfs", _BASE, "tmpfs", flags, "mode=0755"), "mount the new root on", _BASE)
    os.mkdir(_BASE + _OLD_ROOT)
    base, old = os.fsencode(_BASE), os.fsencode(_BASE + _OLD_ROOT)
    _check(_syscall("pivot_root", base, old), "pivot_root into", _BASE)
    os.chdir("/")
    for step in steps:
        _apply(step)
    _check(_libc.umount2(os.fsencode(_OLD_ROOT), _MNT_DETACH), "detach the old root", _OLD_ROOT)
    os.rmdir(_OLD_ROOT)
    # No nested user namespace: its capabilities would let the command remount what we built.
    _write("/proc/sys/user/max_user_namespaces", "0", "forbid user namespaces in")
    _make_readonly("/dev", recursive=False)
    _make_readonly("/", recursive=False)


def _bound_shared_memory(limit_bytes: int) -> None:
    """Bound the System V shared memory of this IPC namespace (init owns it, so it may).

    A segment's pages stay allocated after it is detached, outside any address-space limit.
    """
    pages = max(limit_bytes // os.sysconf("SC_PAGE_SIZE"), 1)
    _write("/proc/sys/kernel/shmmax", str(limit_bytes), "bound shared memory in")
    _write("/proc/sys/kernel/shmall", str(pages), "bound shared memory in")


def _loopback_up() -> None:
    sock = int(_libc.socket(2, 2, 0))  # AF_INET, SOCK_DGRAM (the `socket` module is slow to load)
    _check(sock, "open a socket to bring up", "lo")
    try:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | _IFF_UP))
    finally:
        os.close(sock)


def _forward_signals(target: list[int], pending: list[int]) -> None:
    """Pass `FORWARDED_SIGNALS` on to `target[0]`; before it is set, keep them in `pending`."""

    def forward(signum: int, _frame: object) -> None:
        if not target:
            pending.append(signum)
            return
        try:
            os.kill(target[0], signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)


def enter_command() -> None:
    """In PID 2, before the command runs: default signals, a session, no new privileges.

    A session of its own, so that signals to a terminal's or the launcher's group miss it.
    """
    for signum in (*FORWARDED_SIGNALS, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(signum, signal.SIG_DFL)
    os.setsid()
    _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def drop_capabilities() -> None:
    """Give up every capability the new user namespace granted, as `execve` would.

    For a command run without `execve`, which drops them here (the id inside is never 0).
    The ambient set cleared, every capability dropped from the bounding set (so no later
    `execve` regains one), then the effective, permitted and inheritable sets emptied; and the
    process made dumpable again, as `execve` would (init is not: `_init`), so that its own
    `/proc/self` files are its own.

    Raises:
        SetupError: The kernel refused a step.
    """
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear", "ambient")
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "drop from the bounding set", str(cap))

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    header, data = Header(_LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "empty", "capabilities")
    _check(_libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "make dumpable", "self")


def _exec(argv: Sequence[str]) -> NoReturn:
    """In PID 2: become the command."""
    try:
        enter_command()
        os.execvpe(argv[0], list(argv), os.environ)
    except OSError as err:
        code = NOT_FOUND if isinstance(err, FileNotFoundError) else EXEC_FAILED
        print(f"confine: cannot execute '{argv[0]}': {err.strerror}", file=sys.stderr)
        os._exit(code)
    except BaseException:  # noqa: BLE001 - a forked child must never return into the launcher
        os._exit(EXEC_FAILED)


def _init(
    confinement: Confinement,
    steps: Sequence[_Step],
    command: Callable[[], NoReturn],
    cwd: str,
    report: int,
) -> int:
    """PID 1: build the root, run `command` as PID 2, reap, and report its wait status."""
    target: list[int] = []
    pending: list[int] = []
    _forward_signals(target, pending)
    _build_root(steps)
    if confinement.shared_memory_bytes:
        _bound_shared_memory(confinement.shared_memory_bytes)
    if not confinement.network:
        try:
            _loopback_up()
        except OSError as err:
            raise SetupError("bring up", "lo", err.strerror or str(err)) from err
    if _libc.sethostname(HOSTNAME.encode(), len(HOSTNAME)) < 0:
        _check(-1, "set the host name to", HOSTNAME)
    try:
        os.chdir(cwd)
    except OSError as err:
        if confinement.cwd is not None:
            raise SetupError("change to working directory", cwd, err.strerror or str(err)) from err
        os.chdir("/")  # the caller's working directory is not shown
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # the command cannot read init's memory or fds
    pid = os.fork()
    if pid == 0:
        command()
    target.append(pid)
    for signum in pending:
        os.kill(pid, signum)
    while True:
        reaped, status = os.waitpid(-1, 0)
        if reaped == pid:
            os.write(report, str(status).encode())
            return 0


def _die_like(status: int) -> NoReturn:
    """Exit as a process with wait status `status` did: same code, or the same signal."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command dumped core already, or not
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
    os.kill(os.getpid(), -code)
    os._exit(128 - code)


def _parse(args: Sequence[str]) -> tuple[Confinement, list[str]]:
    if len(args) < 4 or args[0] != "--spec" or args[2] != "--":
        raise SetupError("read the arguments", " ".join(args[:3]), "use --spec JSON -- COMMAND...")
    try:
        return Confinement.from_json(args[1]), list(args[3:])
    except ValueError as err:
        raise SetupError("read the spec", args[1][:200], str(err)) from err


def launch(confinement: Confinement, command: Callable[[], NoReturn]) -> NoReturn:
    """Run `command` confined as PID 2 (it must never return), and exit as it ends.

    The launcher's work in this process: `main` execs a command line; a zygote's fork
    (`gauntlet.zygote`) runs a module of the interpreter it already has.
    """
    try:
        steps = _plan(confinement)
        cwd = os.path.realpath(confinement.cwd if confinement.cwd is not None else os.getcwd())
        _enter_namespaces(confinement.network)
        alive_r, alive_w = os.pipe()
        report_r, report_w = os.pipe()
        init_pid = os.fork()
    except SetupError as err:
        print(f"confine: {err}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    except OSError as err:
        print(f"confine: cannot set up: {err}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    if init_pid == 0:
        code = SETUP_FAILED
        try:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.close(alive_w)
            os.close(report_r)
            os.set_blocking(alive_r, False)
            try:
                os.read(alive_r, 1)  # EOF: the launcher died before PR_SET_PDEATHSIG
            except BlockingIOError:
                code = _init(confinement, steps, command, cwd, report_w)
        except SetupError as err:
            print(f"confine: {err}", file=sys.stderr)
        except BaseException as err:  # noqa: BLE001 - init must exit, never return to main
            print(f"confine: cannot set up: {type(err).__name__}: {err}", file=sys.stderr)
        finally:
            os._exit(code)
    os.close(alive_r)
    os.close(report_w)
    _forward_signals([init_pid], [])
    _, init_status = os.waitpid(init_pid, 0)
    report = os.read(report_r, 32)
    _die_like(int(report) if report else init_status)


def main(args: Sequence[str] | None = None) -> NoReturn:
    """The launcher: `confine.py --spec JSON -- COMMAND...` runs COMMAND confined."""
    try:
        confinement, argv = _parse(sys.argv[1:] if args is None else args)
    except SetupError as err:
        print(f"confine: {err}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    launch(confinement, functools.partial(_exec, argv))


if __name__ == "__main__":
    main()
