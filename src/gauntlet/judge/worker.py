"""The judge's worker process: the only place a submission's Python code runs.

Started by `python_backend.py` as `python -m gauntlet.judge.worker REQUEST_FD RESULT_FD` in its own
session, with a scrubbed environment, a memory limit and its own temporary directory. It reads
one JSON request and answers with frames (`channel.py`) on the result pipe, a descriptor that
nothing the submission starts inherits.

Two roles, never mixed in one process:
- `reference` runs only trusted task code: it draws each trial's inputs, computes the float64
  reference (ground truth), the native-dtype reference (the expected output types) and the
  baseline's own error, and sends them back. A submission never shares memory with them.
- `candidate` imports the trusted measuring code first, then the submission; it checks that the
  functions it relies on are still the same objects, then runs the submission on the same
  trials (same seeds, so the same inputs), checking type, in-place changes, determinism and
  forbidden ATen operations, and sends the outputs back for the judge to compare.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gauntlet.judge import timing
from gauntlet.judge.channel import FrameReader, write_frame
from gauntlet.judge.overflow import rounds_to_infinity

if TYPE_CHECKING:
    import torch

#: ATen operations that allocate, view, move or convert data without doing a task's work.
STRUCTURAL_OPS = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros
    full full_like new_full fill_ zero_ ones ones_like new_ones arange
    view _unsafe_view reshape _reshape_alias as_strided expand expand_as t transpose permute
    contiguous clone copy_ _to_copy to detach alias lift_fresh unsqueeze squeeze flatten unflatten
    slice select narrow split split_with_sizes chunk unbind stride sym_size sym_stride
    sym_numel sym_storage_offset _local_scalar_dense resize_ set_ is_same_size result_type
    _has_compatible_shallow_copy_type view_as movedim numel dim size is_contiguous
    """.split()
)

#: Extra operations the autograd engine itself runs while calling a custom backward.
AUTOGRAD_OPS = frozenset({"ones_like", "add", "add_", "sum", "expand", "_to_copy"})


def _send(fd: int, header: dict[str, Any], tensors: list[torch.Tensor] | None = None) -> None:
    write_frame(fd, header, tensors)


def _load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _upcast(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(torch.float64)
    return value


def _for_judge(expected: torch.Tensor, like: Any) -> torch.Tensor:
    """The float64 result as sent to the judge: float32 where the checked tensor is half precision.

    A float32 rounding (6e-8 relative) is far below any half-precision tolerance, and it halves
    what GPU-sized references cost to send and keep.
    """
    import torch

    low = isinstance(like, torch.Tensor) and like.dtype in (torch.float16, torch.bfloat16)
    out = expected.detach()
    return out.to(torch.float32) if low and out.dtype == torch.float64 else out


def _clone(value: Any) -> Any:
    import torch

    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors hold the same shape, dtype and bytes (NaN payloads included).

    Compared where they are: copying GPU-sized tensors to the host to hash them took seconds a
    trial.
    """
    import torch

    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    raw_a = a.detach().contiguous().reshape(-1).view(torch.uint8)
    raw_b = b.detach().contiguous().reshape(-1).view(torch.uint8)
    return bool(torch.equal(raw_a, raw_b))


def _errors(candidate: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    """The relative L2 error and the largest element-wise error of `candidate`.

    On the reference's device: on the host, GPU-sized outputs cost seconds a trial. Values past
    the candidate dtype's range are skipped (their rounded infinity is no error of the code); a
    NaN or Inf elsewhere makes the L2 error infinite and is left out of the largest error.
    """
    import torch

    ref = reference.detach().to(torch.float64)
    diff = candidate.detach().to(device=ref.device, dtype=torch.float64) - ref
    past = rounds_to_infinity(ref, candidate.dtype)
    if bool(past.any()):
        ref = torch.where(past, 0.0, ref)
        diff = torch.where(past, 0.0, diff)
    denom = float(torch.linalg.vector_norm(ref))
    num = float(torch.linalg.vector_norm(diff))
    rel_l2 = math.inf if math.isnan(num) else (num / denom if denom > 0 else num)
    finite = torch.isfinite(diff)
    max_abs = float(diff[finite].abs().max()) if bool(finite.any()) else 0.0
    return rel_l2, max_abs


def _per_output_errors(
    outputs: Sequence[torch.Tensor], references: Sequence[torch.Tensor]
) -> tuple[list[float], list[float]]:
    """Each output's relative L2 and largest element-wise errors, as two lists."""
    pairs = [_errors(o, r) for o, r in zip(outputs, references, strict=True)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _upstream(outputs: Sequence[torch.Tensor], seed: int) -> list[torch.Tensor]:
    """The upstream gradient for a backward check, drawn from the trial's seed."""
    import torch

    # Drawn where the outputs are: GPU-sized gradients drawn on the host took ~30 s a trial.
    # Reference and candidate draw them alike (same seed, shapes and device), so they agree.
    gens: dict[torch.device, torch.Generator] = {}
    drawn = []
    for o in outputs:
        if o.device not in gens:
            gens[o.device] = torch.Generator(device=o.device).manual_seed(seed ^ 0x5EED)
        gen = gens[o.device]
        values = torch.randn(o.shape, generator=gen, dtype=torch.float32, device=o.device)
        drawn.append(values.to(o.dtype))
    return drawn


def _describe(value: Any) -> dict[str, Any]:
    import torch

    exact = type(value) is torch.Tensor
    item: dict[str, Any] = {"exact": exact, "type": type(value).__qualname__}
    if isinstance(value, torch.Tensor):
        item.update(
            dtype=str(value.dtype).removeprefix("torch."),
            shape=list(value.shape),
            device=value.device.type,
            layout=str(value.layout).removeprefix("torch."),
        )
    return item


def _describe_output(value: Any) -> dict[str, Any]:
    if isinstance(value, tuple | list):
        return {"container": type(value).__qualname__, "items": [_describe(v) for v in value]}
    return {"container": None, "items": [_describe(value)]}


class _Trusted:
    """Identities of the functions the worker relies on, taken before the submission loads."""

    def __init__(self) -> None:
        import torch

        self.watched: dict[str, Callable[[], object]] = {
            "time.perf_counter": lambda: time.perf_counter,
            "time.monotonic": lambda: time.monotonic,
            "torch.cuda.synchronize": lambda: torch.cuda.synchronize,
            "torch.cuda.memory_snapshot": lambda: torch.cuda.memory_snapshot,
            "torch.cuda.Event.elapsed_time": lambda: torch.cuda.Event.elapsed_time,
            "torch.cuda.Event.record": lambda: torch.cuda.Event.record,
            "torch.Tensor.clone": lambda: torch.Tensor.clone,
            "torch.Tensor.detach": lambda: torch.Tensor.detach,
            "torch.Tensor.view": lambda: torch.Tensor.view,
            "torch.autograd.grad": lambda: torch.autograd.grad,
            "torch.equal": lambda: torch.equal,
            "os.write": lambda: os.write,
            "json.dumps": lambda: json.dumps,
            "gauntlet.judge.channel.write_frame": lambda: (
                sys.modules["gauntlet.judge.channel"].write_frame
            ),
        }
        for name in (
            "measure",
            "_call",
            "_cross_check",
            "escaped_work",
            "_host_clock_pass",
            "_profile",
            "scaled_inputs",
            "median_ci",
        ):
            self.watched[f"timing.{name}"] = functools.partial(getattr, timing, name)
        self.watched["torch.cuda.Event.elapsed_time"] = lambda: torch.cuda.Event.elapsed_time
        own = globals()
        for name, func in list(own.items()):
            if name.startswith("_") and callable(func) and name != "_Trusted":
                self.watched[f"worker.{name}"] = functools.partial(own.__getitem__, name)
        self.identities = {name: get() for name, get in self.watched.items()}

    def changed(self) -> list[str]:
        """Names whose object is no longer the one recorded."""
        found = []
        for name, get in self.watched.items():
            try:
                if get() is not self.identities[name]:
                    found.append(name)
            except (AttributeError, KeyError):
                found.append(name)
        return found


class _DispatchWatch:
    """Records the ATen operations run while active (the candidate must not do the work there)."""

    def __init__(self, allowed: frozenset[str]) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        allowed_ops = allowed
        seen: list[str] = []

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                name = func.overloadpacket.__name__.split(".")[-1]
                if name not in allowed_ops and name not in seen:
                    seen.append(name)
                return func(*args, **(kwargs or {}))

        self.mode = _Mode()
        self.forbidden = seen


def _poison_free_memory(device: str) -> None:
    """Fill memory a later allocation may reuse with NaN, so unwritten outputs show up."""
    import torch

    if device == "cuda":
        # Every free block of this process's cache, each taken at its own size (best fit), so
        # the cache does not grow. Asking for one block larger than the cache every trial, as
        # before, added a segment a trial up to half the GPU and starved the reference worker
        # beside it (suspected cause of seconds per trial on an H100; unconfirmed).
        sizes = sorted(
            (
                block["size"]
                for segment in torch.cuda.memory_snapshot()
                for block in segment["blocks"]
                if block["state"] == "inactive"
            ),
            reverse=True,
        )
        held = []
        for size in sizes:
            poison = torch.empty(size // 4, dtype=torch.float32, device="cuda")
            poison.fill_(math.nan)
            held.append(poison)
        del held
    else:
        block = torch.empty(1 << 22, dtype=torch.float32)
        block.fill_(math.nan)
        del block


def _make_inputs(
    request: dict[str, Any], config: dict[str, Any], trial: dict[str, Any]
) -> dict[str, Any]:
    make = request["_make_inputs"]
    inputs = make(
        dict(config["params"]), int(trial["seed"]), trial["distribution"], request["device"]
    )
    if not isinstance(inputs, dict):
        raise TypeError(f"make_inputs returned {type(inputs).__name__}, expected a dict")
    return inputs


def run_reference(request: dict[str, Any], fd: int) -> None:
    """Draw inputs, compute the float64 reference, expected types and the baseline's error."""
    import torch

    laps = timing.Laps()
    root = Path(request["task_root"])
    ref = getattr(
        _load_module(root / request["reference"]["file"], "_gauntlet_reference"),
        request["reference"]["entry"],
    )
    request["_make_inputs"] = getattr(
        _load_module(root / request["inputs"]["file"], "_gauntlet_inputs"),
        request["inputs"]["entry"],
    )
    base: Callable[..., Any] = ref
    if request.get("baseline"):
        base = getattr(
            _load_module(root / request["baseline"]["file"], "_gauntlet_baseline"),
            request["baseline"]["entry"],
        )
    wrt: list[str] = request.get("wrt") or []
    laps.lap("setup")
    for config in request["configs"]:
        for sample in config.get("samples", []):
            # A timed call's input: the base input times the call's scale, made exactly as the
            # timing loop makes it, so the float64 reference matches that call.
            inputs = timing.scaled_inputs(_make_inputs(request, config, sample), sample["scale"])
            laps.lap("inputs")
            with torch.no_grad():
                expected64 = _as_tuple(ref(*(_upcast(v) for v in inputs.values())))
                laps.lap("reference")
                base_out = _as_tuple(base(*(_clone(v) for v in inputs.values())))
            laps.lap("baseline")
            _send(
                fd,
                {
                    "event": "sample",
                    "config": config["name"],
                    "position": sample["position"],
                    "baseline_rel_l2": [
                        _errors(b, e)[0] for b, e in zip(base_out, expected64, strict=True)
                    ],
                },
                [_for_judge(e, b) for e, b in zip(expected64, base_out, strict=True)],
            )
            laps.lap("send")
        for index, trial in enumerate(config["trials"]):
            inputs = _make_inputs(request, config, trial)
            laps.lap("inputs")
            names = list(inputs)
            wide = {k: _upcast(v) for k, v in inputs.items()}
            for name in wrt:
                wide[name].requires_grad_(True)
            with torch.enable_grad() if wrt else torch.no_grad():
                expected64 = _as_tuple(ref(*wide.values()))
            native_args = {k: _clone(v) for k, v in inputs.items()}
            with torch.no_grad():
                native = ref(*native_args.values())
            laps.lap("reference")
            base_args = {k: _clone(v) for k, v in inputs.items()}
            for name in wrt:
                base_args[name].requires_grad_(True)
            with torch.enable_grad() if wrt else torch.no_grad():
                base_out = _as_tuple(base(*base_args.values()))
            base_err, base_abs = _per_output_errors(base_out, expected64)
            laps.lap("baseline")
            natives = _as_tuple(native)
            tensors = [
                _for_judge(e, natives[i] if i < len(natives) else None)
                for i, e in enumerate(expected64)
            ]
            grad_errs: list[float] = []
            grad_abs: list[float] = []
            if wrt:
                upstream = _upstream(base_out, int(trial["seed"]))
                laps.lap("gradients.upstream")
                grads64 = torch.autograd.grad(
                    expected64, [wide[n] for n in wrt], [g.to(torch.float64) for g in upstream]
                )
                laps.lap("gradients.reference")
                base_grads = torch.autograd.grad(base_out, [base_args[n] for n in wrt], upstream)
                laps.lap("gradients.baseline")
                grad_errs, grad_abs = _per_output_errors(base_grads, grads64)
                tensors += [_for_judge(g, inputs[n]) for g, n in zip(grads64, wrt, strict=True)]
                laps.lap("gradients.errors")
            _send(
                fd,
                {
                    "event": "trial",
                    "config": config["name"],
                    "trial": index,
                    "input_names": names,
                    "expected": _describe_output(native),
                    "baseline_rel_l2": base_err,
                    "baseline_grad_rel_l2": grad_errs,
                    "baseline_max_abs": base_abs,
                    "baseline_grad_max_abs": grad_abs,
                },
                tensors,
            )
            laps.lap("send")
    _send(fd, {"event": "done", "phases": laps.totals})


def _baseline_callable(request: dict[str, Any]) -> Callable[..., Any]:
    """The trusted baseline: the task's baseline kernel, or the reference for `torch2*`."""
    root = Path(request["task_root"])
    spec = request["baseline"] or request["reference"]
    module = _load_module(root / spec["file"], "_gauntlet_timing_baseline")
    baseline: Callable[..., Any] = getattr(module, spec["entry"])
    return baseline


def run_candidate(
    request: dict[str, Any], fd: int, trusted: _Trusted, commands: FrameReader
) -> None:
    """Import the submission and run it on every trial, checking as it goes; then time it."""
    import torch

    root = Path(request["task_root"])
    baseline = _baseline_callable(request) if request.get("timing") else None
    request["_make_inputs"] = getattr(
        _load_module(root / request["inputs"]["file"], "_gauntlet_inputs"),
        request["inputs"]["entry"],
    )
    submission = request["submission"]
    try:
        module = _load_module(Path(submission["dir"]) / submission["file"], "kernel_submission")
        entry = getattr(module, submission["entry"])
        if isinstance(entry, type):
            # A KernelBench-style `ModelNew` class: built once, with no arguments, then called.
            entry = entry()
    except BaseException:  # noqa: BLE001 - anything the submission raises on import is its failure
        _send(fd, {"event": "build_error", "traceback": _short_traceback()})
        return
    changed = trusted.changed()
    if changed:
        _send(fd, {"event": "tampered", "what": changed})
        return
    _send(fd, {"event": "loaded"})
    wrt: list[str] = request.get("wrt") or []
    device = request["device"]
    allowed = STRUCTURAL_OPS | frozenset(request.get("allowed_ops") or [])
    for config in request["configs"]:
        _send(fd, {"event": "config_start", "config": config["name"]})
        for index, trial in enumerate(config["trials"]):
            # The submission gets clones; `pristine` is never passed to it.
            pristine = _make_inputs(request, config, trial)
            args = {k: _clone(v) for k, v in pristine.items()}
            for name in wrt:
                args[name].requires_grad_(True)
            _poison_free_memory(device)
            watch = _DispatchWatch(allowed)
            try:
                with torch.enable_grad() if wrt else torch.no_grad(), watch.mode:
                    out = entry(*args.values())
                if device == "cuda":
                    torch.cuda.synchronize()
            except BaseException:  # noqa: BLE001 - the submission's failure becomes a verdict
                _send(
                    fd,
                    {
                        "event": "call_error",
                        "config": config["name"],
                        "trial": index,
                        "traceback": _short_traceback(),
                    },
                )
                return
            if watch.forbidden and request.get("watch_dispatch", True):
                _send(
                    fd, {"event": "forbidden_ops", "config": config["name"], "ops": watch.forbidden}
                )
                return
            described = _describe_output(out)
            outputs = [o for o in _as_tuple(out) if type(o) is torch.Tensor]
            mutated = [
                k
                for k, v in args.items()
                if isinstance(v, torch.Tensor) and not _same_bits(v, pristine[k])
            ]
            tensors = [o.detach() for o in outputs]
            header: dict[str, Any] = {
                "event": "trial",
                "config": config["name"],
                "trial": index,
                "output": described,
                "mutated": mutated,
            }
            if wrt and len(outputs) == len(described["items"]):
                upstream = _upstream(outputs, int(trial["seed"]))
                try:
                    grads = torch.autograd.grad(
                        outputs, [args[n] for n in wrt], upstream, allow_unused=True
                    )
                except BaseException:  # noqa: BLE001 - the submission's backward failed
                    _send(
                        fd,
                        {
                            "event": "call_error",
                            "config": config["name"],
                            "trial": index,
                            "traceback": _short_traceback(),
                        },
                    )
                    return
                header["grads"] = [g is not None for g in grads]
                header["grad_meta"] = [_describe(g) for g in grads if g is not None]
                tensors += [g.detach() for g in grads if g is not None]
            if index == 0 and request.get("check_determinism", True):
                again = {k: _clone(v) for k, v in pristine.items()}
                with torch.no_grad():
                    repeat = _as_tuple(entry(*again.values()))
                header["repeat_max_diff"] = _max_diff(outputs, repeat)
            _send(fd, header, tensors)
        _send(fd, {"event": "config_done", "config": config["name"]})
    changed = trusted.changed()
    if changed:
        _send(fd, {"event": "tampered", "what": changed})
        return
    if baseline is not None:
        _send(fd, {"event": "checked"})
        command, _ = commands.read(None)
        if command.get("command") == "time":
            _time_configs(request, fd, entry, baseline, command["configs"])
            changed = trusted.changed()
            if changed:
                _send(fd, {"event": "tampered", "what": changed})
                return
    _send(fd, {"event": "done"})


def _time_configs(
    request: dict[str, Any],
    fd: int,
    entry: Callable[..., Any],
    baseline: Callable[..., Any],
    names: list[str],
) -> None:
    import torch

    by_name = {c["name"]: c for c in request["configs"]}
    l2_bytes = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    for name in names:
        config = by_name[name]
        spec = request["timing"][name]
        _send(fd, {"event": "timing_start", "config": name})
        base = _make_inputs(request, config, spec["inputs"])
        plan = timing.TimingPlan(**spec["plan"])
        clocks_before = _clocks()
        compiled = (
            _compiled_reference(request) if name in request.get("compile_reference", []) else None
        )
        try:
            result = timing.measure(
                entry, baseline, base, request.get("wrt") or [], plan, l2_bytes, compiled
            )
        except BaseException:  # noqa: BLE001 - the submission failed while being timed
            _send(
                fd,
                {
                    "event": "call_error",
                    "config": name,
                    "trial": "timing",
                    "traceback": _short_traceback(),
                },
            )
            return
        tensors: list[torch.Tensor] = []
        positions = []
        for position, outputs in result.samples:
            positions.append([position, len(outputs)])
            tensors += outputs
        _send(
            fd,
            {
                "event": "timed",
                "config": name,
                "summary": result.summary(),
                "samples": positions,
                "clocks": {"before": clocks_before, "after": _clocks()},
            },
            tensors,
        )


def _compiled_reference(request: dict[str, Any]) -> Callable[..., Any] | None:
    """`torch.compile` of the reference (compiled at its first call, in the warm-up)."""
    import torch

    root = Path(request["task_root"])
    spec = request["reference"]
    module = _load_module(root / spec["file"], "_gauntlet_compiled_reference")
    compiled: Callable[..., Any] = torch.compile(getattr(module, spec["entry"]), dynamic=False)
    return compiled


def _clocks() -> dict[str, float]:
    """SM and memory clocks, temperature and power of the judged GPU, where NVML can be read."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        handle = _nvml_handle()
        return {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "temp_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        }
    except (pynvml.NVMLError, AttributeError, RuntimeError):
        # No NVML for this GPU (ROCm, a driver without it) or no UUID to find it by: the
        # verdict then records no clocks.
        return {}


@functools.cache
def _nvml_handle() -> Any:
    """NVML's handle of this worker's GPU, found by its UUID.

    NVML numbers every GPU of the host and ignores CUDA_VISIBLE_DEVICES, so its index 0 is not
    the GPU of a worker for `cuda:3`.
    """
    import pynvml
    import torch

    pynvml.nvmlInit()
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")


def _max_diff(first: Sequence[torch.Tensor], second: Sequence[Any]) -> float | None:
    """Largest difference between two calls on the same input (0.0: bitwise equal)."""
    import torch

    if len(first) != len(second):
        return None
    worst = 0.0
    for a, b in zip(first, second, strict=True):
        if type(b) is not torch.Tensor or a.shape != b.shape or a.dtype != b.dtype:
            return None
        if _same_bits(a, b):
            continue
        diff = (a.detach().to(torch.float64) - b.detach().to(torch.float64)).abs()
        nan_mismatch = bool((a.isnan() != b.isnan()).any()) if a.is_floating_point() else False
        worst = max(worst, math.inf if nan_mismatch else float(diff.nan_to_num(0.0).max()))
        worst = max(worst, 1e-300)
    return worst


def _short_traceback(limit_chars: int = 6000) -> str:
    text = traceback.format_exc()
    return text if len(text) <= limit_chars else "...\n" + text[-limit_chars:]


def main(argv: Sequence[str] | None = None) -> int:
    """Worker entry point: read the request, run the role, answer on the result pipe."""
    args = list(sys.argv[1:] if argv is None else argv)
    request_fd, result_fd = int(args[0]), int(args[1])
    # Nothing the submission starts may inherit either end of the judge's channel.
    os.set_inheritable(request_fd, False)
    os.set_inheritable(result_fd, False)
    commands = FrameReader(request_fd)
    request, _ = commands.read(None)
    if request["device"] == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    torch.manual_seed(0)
    if request.get("language") == "triton":
        import triton  # noqa: F401 - the trusted import comes before the submission's
    if request["device"] == "cuda":
        import torch.profiler  # noqa: F401 - trusted before the submission, like timing
    if request.get("language") == "cuda":
        from gauntlet.judge import cuda_build

        cuda_build.prepare_run(Path(request["submission"]["dir"]))
    trusted = _Trusted()
    try:
        # Imports done and the GPU untouched: the judge starts the role once it holds the GPU.
        _send(result_fd, {"event": "ready"})
        command, _ = commands.read(None)
        if command.get("command") != "start":
            return 0
        if request["role"] == "reference":
            run_reference(request, result_fd)
        else:
            run_candidate(request, result_fd, trusted, commands)
    except BaseException:  # noqa: BLE001 - the worker's one catch-all: report, then exit
        try:
            _send(result_fd, {"event": "worker_error", "traceback": _short_traceback()})
        except OSError:
            pass
        return 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
