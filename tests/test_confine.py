"""The namespace confinement (`gauntlet.confine`), with real confined processes."""

from __future__ import annotations

import os
import signal
import socket
import sys
import textwrap
import time
import uuid
from ast import literal_eval
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from gauntlet import confine
from gauntlet.confine import Confinement
from gauntlet.process import Child, Finished

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _needs_namespaces() -> None:
    problem = confine.available()
    if problem is not None:
        pytest.skip(f"confinement is not available here: {problem}")


def python(
    code: str,
    *,
    readonly: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    network: bool = False,
    cwd: Path | None = None,
    args: Sequence[str] = (),
    gpu: bool = False,
) -> list[str]:
    """The confined command that runs `code` in this interpreter, able to import gauntlet."""
    confinement = Confinement(
        readonly=(*confine.python_paths(), *readonly),
        writable=tuple(writable),
        devices=confine.NVIDIA_DEVICES if gpu else (),
        network=network,
        sysfs=gpu,
        cwd=cwd,
    )
    return confine.confined_argv([sys.executable, "-c", textwrap.dedent(code), *args], confinement)


def run(
    argv: list[str],
    *,
    pass_fds: Sequence[int] = (),
    cwd: Path | None = None,
    env: dict[str, str] = ENV,
    timeout_s: float = 60,
) -> Finished:
    return Child(argv, env=env, pass_fds=pass_fds, cwd=cwd).wait(timeout_s)


def ok(finished: Finished) -> str:
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique argument that tags a test's sleepers; any left over are killed at the end."""
    tag = f"confine-test-{uuid.uuid4().hex}"
    yield tag
    for proc in marked(tag):
        proc.kill()


def test_imports_gauntlet_and_torch_from_the_venv() -> None:
    out = ok(run(python("import gauntlet, torch; print(gauntlet.__name__, torch.__version__)")))
    assert out.startswith("gauntlet ")


@pytest.mark.gpu
def test_cuda_works_confined() -> None:
    cuda_env = {k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "NVIDIA_", "NCCL_"))}
    cuda_env.update(ENV, LD_LIBRARY_PATH=os.environ.get("LD_LIBRARY_PATH", ""))
    code = """
        import torch
        x = torch.arange(4.0, device="cuda")
        print(float((x * 2).sum()), torch.cuda.get_device_name())
    """
    out = ok(run(python(code, gpu=True), env=cuda_env, timeout_s=120))
    assert out.startswith("12.0 ")


def test_only_the_shown_paths_are_visible(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("hidden answer")
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "input.txt").write_text("input")
    (tmp_path / "rw").mkdir()
    code = f"""
        import errno, os
        root = {str(tmp_path)!r}
        assert sorted(os.listdir(root)) == ["ro", "rw"], os.listdir(root)
        assert not os.path.exists(root + "/secret.txt")
        assert open(root + "/ro/input.txt").read() == "input"
        for target in (root + "/ro/new.txt", root + "/ro/input.txt", "/usr/new", "/new"):
            try:
                open(target, "w")
            except OSError as err:
                assert err.errno == errno.EROFS, (target, err)
            else:
                raise AssertionError(target + " is writable")
        open(root + "/rw/out.txt", "w").write("written")
        open("/tmp/scratch", "w").write("fresh tmp")
        for absent in ({str(REPO / "tasks")!r}, "/home", "/root/.bashrc", "/var", "/run"):
            assert not os.path.exists(absent), absent
    """
    ok(run(python(code, readonly=[tmp_path / "ro"], writable=[tmp_path / "rw"])))
    assert (tmp_path / "rw" / "out.txt").read_text() == "written"


def test_default_view_is_minimal() -> None:
    code = """
        import os
        print(sorted(os.listdir("/")))
        print(sorted(os.listdir("/dev")))
        print(os.uname().nodename, os.getuid(), os.getgid(), os.getpid(), os.getppid())
        print(open("/proc/self/status").read().split("CapEff:")[1].split()[0])
    """
    root, dev, ids, caps = ok(run(python(code))).splitlines()
    python_tops = {path.parts[1] for path in confine.python_paths()}
    system = {"bin", "dev", "etc", "lib", "lib64", "proc", "sbin", "tmp", "usr"}
    assert set(literal_eval(root)) <= system | python_tops
    devices = set(literal_eval(dev))
    assert {"null", "zero", "urandom", "shm", "fd"} <= devices
    assert not any(name.startswith(("sd", "vd", "nvme", "kvm", "mem")) for name in devices)
    name, uid, gid, pid, ppid = ids.split()
    assert (name, pid, ppid) == (confine.HOSTNAME, "2", "1")
    assert uid != "0" and gid != "0"
    assert int(caps, 16) == 0


def test_the_parent_is_out_of_reach() -> None:
    code = """
        import os, sys
        parent = int(sys.argv[1])
        assert not os.path.exists(f"/proc/{parent}")
        try:
            open(f"/proc/{parent}/environ").read()
        except FileNotFoundError:
            pass
        else:
            raise AssertionError("read the parent's environment")
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            pass
        else:
            raise AssertionError("the parent can be signalled")
        print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    """
    out = ok(run(python(code, args=[str(os.getpid())])))
    assert out.split() == ["[1,", "2]"]


def test_no_new_privileges_or_user_namespaces() -> None:
    code = """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.unshare(0x10000000) == -1  # CLONE_NEWUSER
        assert libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == -1
        status = open("/proc/self/status").read()
        assert "NoNewPrivs:\\t1" in status, status
    """
    ok(run(python(code)))


GRANDCHILD = """
    import os, sys, time
    pid_file, marker = sys.argv[1], sys.argv[2]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            open(pid_file, "w").write(str(os.getpid()))
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", marker])
        os._exit(0)
    for _ in range(500):
        if os.path.exists(pid_file) and open(pid_file).read():
            break
        time.sleep(0.01)
    time.sleep(0.1)  # the grandchild is sleeping now
"""


def test_a_setsid_grandchild_dies_with_the_confined_child(tmp_path: Path, marker: str) -> None:
    # Unconfined, the same program leaves its grandchild behind: the check below can see it.
    pid_file = tmp_path / "unconfined.pid"
    code = textwrap.dedent(GRANDCHILD)
    ok(run([sys.executable, "-c", code, str(pid_file), marker]))
    assert pid_file.read_text() and marked(marker)
    for proc in marked(marker):
        proc.kill()

    pid_file = tmp_path / "confined.pid"
    ok(run(python(GRANDCHILD, writable=[tmp_path], args=[str(pid_file), marker])))
    assert pid_file.read_text()  # it ran, inside
    assert not marked(marker)


def test_killing_the_launcher_kills_everything_inside(marker: str) -> None:
    read_fd, write_fd = os.pipe()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)", marker]
    code = f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            os.execv(sys.executable, {sleeper!r})
        os.write({write_fd}, b"ready")
        time.sleep(60)
    """
    child = Child(python(code), env=ENV, pass_fds=[write_fd])
    os.close(write_fd)
    try:
        assert os.read(read_fd, 5) == b"ready"
        deadline = time.monotonic() + 10
        while not marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)  # the sleeper is still starting
        assert marked(marker)
        os.kill(child.pid, signal.SIGKILL)  # the launcher alone, not its group
        deadline = time.monotonic() + 10
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not marked(marker)
    finally:
        os.close(read_fd)
        child.wait(10)


def test_no_network(marker: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
            except OSError as err:
                print("refused", err.errno)
            else:
                print("connected")
        """
        assert ok(run(python(code))).startswith("refused")
        assert ok(run(python(code, network=True))).startswith("connected")


def test_an_inherited_fd_reaches_the_confined_program() -> None:
    read_fd, write_fd = os.pipe()
    try:
        code = f"import os; os.write({write_fd}, b'through the pipe')"
        ok(run(python(code), pass_fds=[write_fd]))
        os.close(write_fd)
        assert os.read(read_fd, 100) == b"through the pipe"
    finally:
        os.close(read_fd)


@pytest.mark.parametrize(
    ("code", "returncode"),
    [
        ("pass", 0),
        ("raise SystemExit(7)", 7),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL),
        ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
        ("import os; os.abort()", -signal.SIGABRT),
    ],
)
def test_exit_codes_and_signals_pass_through(code: str, returncode: int) -> None:
    finished = run(python(code))
    assert finished.returncode == returncode, finished.stderr


def _ignored(status_line: str) -> set[int]:
    """The signals a `SigIgn:` line of /proc/PID/status names."""
    mask = int(status_line.split()[1], 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def test_ignored_signals_are_reset_as_subprocess_does() -> None:
    # Python ignores SIGPIPE and SIGXFSZ; the confined command must not inherit that. (What
    # the test runner itself was started ignoring, SIGINT in a background job, is not asked.)
    argv = ["grep", "SigIgn", "/proc/self/status"]
    python_ignores = {signal.SIGPIPE.value, signal.SIGXFSZ.value}
    unconfined = _ignored(ok(run(argv)))
    confined = _ignored(ok(run(confine.confined_argv(argv, Confinement()))))
    assert not unconfined & python_ignores
    assert not confined & python_ignores


def test_a_signal_to_the_launcher_reaches_the_program() -> None:
    read_fd, write_fd = os.pipe()
    code = f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, lambda *_: os._exit(3))
        os.write({write_fd}, b"ready")
        time.sleep(60)
    """
    child = Child(python(code), env=ENV, pass_fds=[write_fd])
    os.close(write_fd)
    try:
        assert os.read(read_fd, 5) == b"ready"
        os.kill(child.pid, signal.SIGTERM)
        assert child.wait(20).returncode == 3
    finally:
        os.close(read_fd)


def one_line_error(finished: Finished, code: int, *words: str) -> None:
    assert finished.returncode == code
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert lines[0].startswith("confine: cannot ")
    assert all(word in lines[0] for word in words), lines[0]


def test_setup_errors_are_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    finished = run(python("pass", readonly=[missing]))
    one_line_error(finished, confine.SETUP_FAILED, "readonly", str(missing), "does not exist")
    finished = run(python("pass", cwd=tmp_path))  # exists outside, not shown inside
    one_line_error(finished, confine.SETUP_FAILED, "working directory", str(tmp_path))
    finished = run(confine.confined_argv(["no-such-program"], Confinement()))
    one_line_error(finished, confine.NOT_FOUND, "execute", "no-such-program")
    finished = run([*confine.confined_argv(["true"], Confinement())[:4], "--spec", "{}", "--", "x"])
    one_line_error(finished, confine.SETUP_FAILED, "spec")


def test_the_working_directory(tmp_path: Path) -> None:
    code = "import os; print(os.getcwd())"
    assert ok(run(python(code, writable=[tmp_path], cwd=tmp_path))).strip() == str(tmp_path)
    assert ok(run(python(code), cwd=tmp_path)).strip() == "/"  # the caller's is not shown


def test_the_spec_round_trips() -> None:
    spec = Confinement(
        readonly=(Path("/a"),),
        writable=(Path("/b"),),
        devices=("/dev/x*",),
        cwd=Path("/b"),
        shared_memory_bytes=1 << 20,
    )
    assert Confinement.from_json(spec.to_json()) == spec
    with pytest.raises(ValueError):
        Confinement.from_json('{"readonly": []}')
    with pytest.raises(ValueError, match="shared_memory_bytes"):
        Confinement.from_json(spec.to_json().replace('": 1048576', '": -1'))


#: Writes 12 MiB to each tmpfs and asks for 12 MiB of System V shared memory, then two of 6 MiB
#: (8 MiB in all may be held): what each got, as "path: held" or "path: errno".
SHARED_MEMORY_PROBE = """
    import ctypes, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    for path in ("/tmp/hoard", "/dev/shm/hoard"):
        try:
            with open(path, "wb") as handle:
                for _ in range(12):
                    handle.write(b"x" * (1 << 20))
            print(path, "held")
        except OSError as err:
            print(path, errno.errorcode[err.errno])
        finally:
            if os.path.exists(path):
                os.remove(path)
    IPC_CREAT = 0o1000
    for size_mb in (12, 6, 6):
        made = libc.shmget(0, size_mb << 20, IPC_CREAT | 0o600)
        print(f"shm{size_mb}", "held" if made >= 0 else errno.errorcode[ctypes.get_errno()])
"""


@pytest.mark.parametrize("bound", [8 << 20, 0], ids=["bounded", "kernel-default"])
def test_shared_memory_outside_the_address_space_is_bounded(bound: int) -> None:
    # tmpfs pages and System V segments belong to no process's address space: bounded, a write
    # past the bound fails instead of leaving the OOM killer nobody large to kill but the judge.
    confinement = Confinement(readonly=confine.python_paths(), shared_memory_bytes=bound)
    argv = [sys.executable, "-c", textwrap.dedent(SHARED_MEMORY_PROBE)]
    got = ok(run(confine.confined_argv(argv, confinement))).split()
    if bound:
        assert got == [
            *("/tmp/hoard", "ENOSPC", "/dev/shm/hoard", "ENOSPC"),
            *("shm12", "EINVAL", "shm6", "held", "shm6", "ENOSPC"),
        ]
    else:
        assert got.count("held") == 5, got
