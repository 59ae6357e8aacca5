"""The candidate worker's first filters on their own: its audit hook and its tamper check.

Each reach for the worker's state is run as a submission module in a small process that installs
the hook exactly as the worker does (`worker._install_audit_hook`), with no judgment around it,
so the cases stay cheap; `tests/exploits/corpus_runtime/` judges the same mechanisms whole.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gauntlet.judge import protocol, worker

#: Installs the hook as the candidate worker does, then imports the submission's module.
RUNNER = """
import sys
from pathlib import Path
from gauntlet.judge import worker
worker._install_audit_hook(Path(sys.argv[1]), Path(sys.argv[2]))
worker._load_module(Path(sys.argv[1]) / "kernel.py", worker.SUBMISSION_MODULE)
"""

#: Reaches for the worker's frames, objects or code that the hook must stop (each ends the
#: process with `protocol.BREACH_EXIT`).
REACHES = {
    "code compiled from a string": """
        exec(compile("import gc\\ngc.get_objects()", "<string>", "exec"))
    """,
    "source compiled under a library's file name": """
        import json
        compile("x = 1", json.__file__, "exec")
    """,
    "a module written to its own folder and imported": """
        import os, sys
        home = os.environ["HOME"]
        with open(os.path.join(home, "helper_mod.py"), "w") as f:
            f.write("import gc\\ngc.get_objects()\\n")
        sys.path.insert(0, home)
        import helper_mod
    """,
    "a traceback's frame": """
        try:
            raise ValueError
        except ValueError as err:
            err.__traceback__.tb_frame
    """,
    "a running generator's frame": """
        def walk():
            me = yield
            yield me.gi_frame
        gen = walk()
        next(gen)
        gen.send(gen)
    """,
    "the ban list emptied through sys.modules": """
        import gc, sys
        hooked = sys.modules["gauntlet.judge.worker"]
        hooked.BANNED_EVENTS = frozenset()
        hooked.BANNED_PREFIXES = ("nothing",)
        gc.get_objects()
    """,
    "a library function's code swapped under the submission's module name": """
        import json
        json.dumps.__module__ = "kernel_submission"
        json.dumps.__code__ = (lambda obj, **kw: "").__code__
    """,
    "code objects from marshal": """
        import marshal
        marshal.loads(marshal.dumps(1))
    """,
    "an audit hook of its own": """
        import sys
        sys.addaudithook(lambda event, args: None)
    """,
    "a tracer that threading installs in every thread started later": """
        import threading
        threading.settrace(lambda frame, event, arg: None)
        started = threading.Thread(target=lambda: None)
        started.start()
        started.join()
    """,
    "bytecode forged under a judge file's name, turned into code by importlib": """
        import importlib._bootstrap_external as external, marshal
        from gauntlet.judge import worker
        # Code whose file name is the worker's own, so that what it does passes for trusted.
        name = worker.__file__
        holder = "<" + "x" * (len(name) - 2) + ">"
        code = compile("import gc\\ngc.get_objects()\\n", holder, "exec")
        data = marshal.dumps(code).replace(holder.encode(), name.encode())
        exec(external._compile_bytecode(bytearray(data)), {})
    """,
    "a loader of its own handing importlib source under a judge file's name": """
        import importlib.machinery, importlib.util
        from gauntlet.judge import worker

        class Smuggler(importlib.machinery.SourceFileLoader):
            def get_data(self, path):
                return b"import gc\\ngc.get_objects()\\n"

        loader = Smuggler("smuggled", worker.__file__)
        spec = importlib.util.spec_from_loader("smuggled", loader)
        loader.exec_module(importlib.util.module_from_spec(spec))
    """,
    "a .pyc it wrote, loaded by importlib's own loader": """
        import importlib.machinery, importlib.util, marshal, os
        from gauntlet.judge import worker
        name = worker.__file__
        holder = "<" + "x" * (len(name) - 2) + ">"
        code = compile("import gc\\ngc.get_objects()\\n", holder, "exec")
        data = marshal.dumps(code).replace(holder.encode(), name.encode())
        path = os.path.join(os.environ["HOME"], "smuggled.pyc")
        with open(path, "wb") as handle:
            handle.write(importlib.util.MAGIC_NUMBER + bytes(12) + data)
        loader = importlib.machinery.SourcelessFileLoader("smuggled", path)
        spec = importlib.util.spec_from_loader("smuggled", loader)
        loader.exec_module(importlib.util.module_from_spec(spec))
    """,
    "a signal sent to one thread (the main one)": """
        import signal, threading
        signal.pthread_kill(threading.main_thread().ident, 0)
    """,
}

#: What legitimate submissions do that raises audit events: none may end the process.
ORDINARY = """
    import collections, ctypes, dataclasses, enum, functools, typing

    @dataclasses.dataclass(frozen=True)
    class Block:
        rows: int
        cols: int = 4

    Pair = collections.namedtuple("Pair", "a b")

    class Shape(typing.NamedTuple):
        n: int

    class Kind(enum.Enum):
        A = 1

    def wrapped(x, y=2):
        return x + y

    @functools.wraps(wrapped)
    def wrapper(*args):
        return wrapped(*args)

    import importlib, json.tool, xml.dom.minidom  # trusted modules imported lazily
    importlib.reload(json.tool)

    wrapped.__defaults__ = (3,)
    Block.__doc__ = "own class"
    assert wrapper(1) == 4 and Block(1).cols == 4 and Pair(1, 2).b == 2 and Shape(3).n == 3
    try:
        int("not a number")
    except ValueError:
        pass
"""


def _run(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    submission, task, home = tmp_path / "submission", tmp_path / "task", tmp_path / "home"
    for folder in (submission, task, home):
        folder.mkdir()
    (submission / "kernel.py").write_text(textwrap.dedent(source))
    env = {"HOME": str(home), "TMPDIR": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(submission), str(task)],
        cwd=home,
        env={**env, "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("source", list(REACHES.values()), ids=list(REACHES))
def test_the_audit_hook_stops_a_reach_for_the_workers_state(source: str, tmp_path: Path) -> None:
    ran = _run(source, tmp_path)
    assert ran.returncode == protocol.BREACH_EXIT, ran.stderr[-2000:]
    assert "gauntlet: the submission raised" in ran.stderr


def test_the_audit_hook_lets_ordinary_python_through(tmp_path: Path) -> None:
    ran = _run(ORDINARY, tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]


def test_a_rebound_global_of_the_workers_modules_is_tampering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gauntlet.judge import timing

    trusted = worker._Trusted()
    assert trusted.changed() == []
    # A wider allow-list, a replaced timing helper and a builtin shadowed in the worker's module:
    # rebinding needs no audit event, so the check compares every global.
    monkeypatch.setattr(worker, "GLUE_OPS", worker.GLUE_OPS | {"mul"})
    monkeypatch.setattr(timing, "median_ci", lambda *args: None)
    monkeypatch.setattr(worker, "isinstance", lambda *args: False, raising=False)
    changed = trusted.changed()
    assert {"worker.GLUE_OPS", "timing.median_ci", "worker.isinstance"} <= set(changed)


def test_the_worker_works_off_the_main_thread_where_no_signal_handler_can_be_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A signal handler is handed the main thread's running frame: the worker's whole work
    # (imports, the submission, the watch, the timing) runs in another thread, where neither
    # `signal.signal` nor the C module's own `_signal.signal` installs one.
    import _signal
    import signal
    import threading

    seen: dict[str, object] = {}

    def serve(args: list[str], spare: object = None) -> int:
        seen["args"] = args
        seen["main thread"] = threading.current_thread() is threading.main_thread()
        for install in (signal.signal, _signal.signal):
            try:
                install(signal.SIGALRM, lambda signum, frame: None)
            except ValueError as err:
                seen.setdefault("refused", []).append(str(err))  # type: ignore[union-attr]
        return 7

    monkeypatch.setattr(worker, "_serve", serve)
    stack_before = threading.stack_size()
    assert worker.main(["5", "6", "cpu"]) == 7
    assert seen["args"] == ["5", "6", "cpu"]
    assert seen["main thread"] is False
    assert len(seen["refused"]) == 2  # type: ignore[arg-type]
    assert all("main thread" in message for message in seen["refused"])  # type: ignore[attr-defined]
    # The working thread's stack size was set for it alone.
    assert threading.stack_size() == stack_before


@pytest.mark.parametrize(
    ("raised", "status"),
    [(SystemExit(0), 0), (SystemExit(4), 4), (SystemExit("wrong device"), 1), (KeyError(), 1)],
)
def test_the_working_threads_exit_is_the_workers(
    raised: BaseException, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def serve(args: list[str], spare: object = None) -> int:
        raise raised

    monkeypatch.setattr(worker, "_serve", serve)
    assert worker.main(["5", "6", "cpu"]) == status


def test_a_module_or_finder_put_in_place_of_the_judges_is_tampering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker imports inside its functions: a stand-in in `sys.modules`, or a finder that
    # answers for a module imported afresh, would decide what those imports give.
    import json
    import types

    for variable in ("HOME", "TMPDIR"):  # the worker's own, not the test's (stdlib under ~)
        monkeypatch.setenv(variable, str(tmp_path))
    trusted = worker._Trusted()
    assert trusted.changed() == []
    monkeypatch.setitem(sys.modules, "json", types.ModuleType("json"))
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path])  # a new list, same finders
    assert trusted.changed() == ["sys.meta_path", "sys.modules['json']"]
    monkeypatch.setitem(sys.modules, "json", json)
    monkeypatch.undo()
    sys.path_hooks.insert(0, lambda path: None)
    try:
        assert trusted.changed() == ["sys.path_hooks"]
    finally:
        del sys.path_hooks[0]
    assert trusted.changed() == []


def test_code_generated_in_the_workers_own_folders_may_be_reloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inductor's compiled reference reloads its generated modules (new module objects under
    # the same names) when it recompiles for a trial's weights: they lie in the worker's TMPDIR,
    # code the judge never relies on, so replacing them is no tampering. A module of the
    # judge's own replaced the same way still is.
    import json
    import types

    generated = tmp_path / "torchinductor" / "c1.py"
    generated.parent.mkdir()
    generated.write_text("VALUE = 1\n")
    first = types.ModuleType("torch._inductor.runtime.compile_tasks.c1")
    first.__file__ = str(generated)
    # The worker's environment: its own HOME, TMPDIR and working directory.
    for variable in ("HOME", "TMPDIR"):
        monkeypatch.setenv(variable, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, first.__name__, first)
    trusted = worker._Trusted()
    again = types.ModuleType(first.__name__)
    again.__file__ = str(generated)
    monkeypatch.setitem(sys.modules, first.__name__, again)
    assert trusted.changed() == []
    monkeypatch.setitem(sys.modules, "json", types.ModuleType("json"))
    assert trusted.changed() == ["sys.modules['json']"]
    monkeypatch.setitem(sys.modules, "json", json)


def test_a_lazy_module_that_imports_when_asked_is_recorded_without_calling_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found on an H200: a module whose `__getattr__` imports when asked for `__file__` changed
    # `sys.modules` while the worker recorded it, and every candidate worker died at its start.
    import types

    class Lazy(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            sys.modules[f"lazy_{name}"] = types.ModuleType(f"lazy_{name}")
            raise AttributeError(name)

    monkeypatch.setitem(sys.modules, "lazy_package", Lazy("lazy_package"))
    trusted = worker._Trusted()
    assert "lazy___file__" not in sys.modules
    assert trusted.changed() == []


def _status_bytes(field: str) -> int:
    """A size from this process's `/proc/self/status` (`VmSize`, `VmData`), in bytes."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(f"{field}:"))
    return int(line.split()[1]) << 10


@pytest.mark.parametrize(
    ("device", "kind", "counted"),
    [("cpu", resource.RLIMIT_AS, "VmSize"), ("cuda", resource.RLIMIT_DATA, "VmData")],
)
def test_the_memory_cap_is_the_tasks_limit_past_what_it_already_counts(
    device: str, kind: int, counted: str
) -> None:
    # The address space on the CPU; on a GPU, where CUDA reserves virtual ranges of many GiB,
    # the data segment (heap and private writable mappings), which the imports fill in part.
    before = _status_bytes(counted)
    cap_kind, cap_bytes = worker.memory_cap(protocol.MEMORY_CAPS[device], 1 << 30)
    after = _status_bytes(counted)
    assert cap_kind == kind
    assert min(before, after) <= cap_bytes - (1 << 30) <= max(before, after)


#: A worker's process on a GPU past its trusted imports: the cap as `_serve` sets it and the
#: file bounds as set before the submission loads, then what the submission would try (the
#: probes of `c5_memory_outside_the_limit` and `c5_memory_files_past_the_descriptor_bound`).
GPU_CAPPED = """
import errno, json, os, resource
from gauntlet.judge import worker

worker._cap_memory("data_segment", 256 << 20)
worker._bound_memory_files()
cap = resource.getrlimit(resource.RLIMIT_DATA)
found = {"cap": cap, "address_space": resource.getrlimit(resource.RLIMIT_AS)[1]}
held = bytearray(128 << 20)
try:
    bytearray(320 << 20)
    found["past the cap"] = "allocated"
except MemoryError:
    found["past the cap"] = "refused"
memory = os.memfd_create("hoard")
try:
    os.pwrite(memory, b"\\x01", cap[0])
    found["memory file past the cap"] = "written"
except OSError as err:
    found["memory file past the cap"] = errno.errorcode[err.errno]
found["files"] = resource.getrlimit(resource.RLIMIT_NOFILE)
found["file_bytes"] = resource.getrlimit(resource.RLIMIT_FSIZE)
print(json.dumps(found))
"""


def test_a_gpu_candidates_cap_refuses_host_memory_and_memory_files_past_it() -> None:
    # The same limits a GPU candidate gets (`worker._cap_memory` of its data segment), in a
    # process of their own: they are set hard, for good. No GPU is needed to set or test them.
    ran = subprocess.run(
        [sys.executable, "-c", GPU_CAPPED],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    found = json.loads(ran.stdout)
    soft, hard = found["cap"]
    assert soft == hard != resource.RLIM_INFINITY
    assert found["address_space"] == resource.getrlimit(resource.RLIMIT_AS)[1]  # left alone
    assert found["past the cap"] == "refused"
    assert found["memory file past the cap"] == "EFBIG"
    # All the memory files it may hold, open or queued unread on a socket, within the cap.
    files, file_bytes = found["files"][1], found["file_bytes"][1]
    assert files != resource.RLIM_INFINITY and file_bytes != resource.RLIM_INFINITY
    assert 2 * files * file_bytes <= hard
