"""The judge's worker process: the only place a submission's Python code runs.

Started by `python_backend.py` as `python -m gauntlet.judge.worker REQUEST_FD RESULT_FD` in its own
session, with a scrubbed environment, a memory limit and its own temporary directory. It reads
one JSON request and answers with frames (`channel.py`) on the result pipe, a descriptor that
nothing the submission starts inherits.

Two roles, never mixed in one process:
- `reference` runs only trusted task code: it draws each trial's inputs, computes the float64
  reference (ground truth), the native-dtype reference (the expected output types) and the
  baseline's own error, and sends them back. A submission never shares memory with them.
  It may serve one judgment after another (`_serve_references`: a `Judge` keeps it), reset
  between them (`resident.py`).
- `candidate` imports the trusted measuring code first, then the submission; it checks that the
  functions it relies on are still the same objects, then runs the submission on the same
  trials (same seeds, so the same inputs), checking type, in-place changes, determinism and
  forbidden ATen operations, and sends the outputs back for the judge to compare.
"""

from __future__ import annotations

import faulthandler
import functools
import importlib.util
import json
import math
import os
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import BuiltinFunctionType, CodeType, FrameType, ModuleType
from typing import TYPE_CHECKING, Any
from unittest import mock

from pydantic import BaseModel

from gauntlet.judge import priority, protocol, sampling, timing
from gauntlet.judge.channel import (
    ChannelClosed,
    FramePath,
    FrameReader,
    to_host,
    write_frame,
)
from gauntlet.judge.correctness import elements_per_chunk
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

#: Glue that legitimate kernels use around their own kernels: padding, joining, a scalar read.
GLUE_OPS = frozenset("cat stack pad constant_pad_nd item is_nonzero _local_scalar_dense".split())

#: Extra operations the autograd engine itself runs while calling a custom backward.
AUTOGRAD_OPS = frozenset({"ones_like", "add", "add_", "sum", "expand", "_to_copy"})


def _send(
    fd: int,
    event: BaseModel,
    tensors: list[torch.Tensor] | None = None,
    spent: dict[str, float] | None = None,
    *,
    share_device: bool = False,
) -> FramePath:
    return write_frame(fd, event.model_dump(), tensors, spent, share_device=share_device)


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

    On the reference's device: on the host, GPU-sized outputs cost seconds a trial. In chunks
    sized to the free memory (`correctness.elements_per_chunk`), as the judge's comparison, so a
    GPU-sized output's float64 temporaries fit. Values past the candidate dtype's range are
    skipped (their rounded infinity is no error of the code); a NaN or Inf elsewhere makes the
    L2 error infinite and is left out of the largest error.
    """
    import torch

    flat_ref = reference.detach().reshape(-1)
    flat_cand = candidate.detach().reshape(-1)
    step = max(elements_per_chunk(str(flat_ref.device), flat_ref.numel()), 1)
    num = denom = max_abs = 0.0
    for start in range(0, flat_ref.numel(), step):
        ref = flat_ref[start : start + step].to(torch.float64)
        diff = flat_cand[start : start + step].to(device=ref.device, dtype=torch.float64) - ref
        past = rounds_to_infinity(ref, candidate.dtype)
        if bool(past.any()):
            ref = torch.where(past, 0.0, ref)
            diff = torch.where(past, 0.0, diff)
        denom = math.hypot(denom, float(torch.linalg.vector_norm(ref)))
        num = math.hypot(num, float(torch.linalg.vector_norm(diff)))
        finite = torch.isfinite(diff)
        if bool(finite.any()):
            max_abs = max(max_abs, float(diff[finite].abs().max()))
    rel_l2 = math.inf if math.isnan(num) else (num / denom if denom > 0 else num)
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


def _describe(value: Any) -> protocol.TensorInfo:
    import torch

    exact = type(value) is torch.Tensor
    if not isinstance(value, torch.Tensor):
        return protocol.TensorInfo(exact=exact, type=type(value).__qualname__[:200])
    return protocol.TensorInfo(
        exact=exact,
        type=type(value).__qualname__[:200],
        dtype=str(value.dtype).removeprefix("torch."),
        shape=list(value.shape),
        device=value.device.type,
        layout=str(value.layout).removeprefix("torch."),
    )


def _describe_output(value: Any) -> protocol.OutputInfo:
    if isinstance(value, tuple | list):
        return protocol.OutputInfo(
            container=type(value).__qualname__[:200],
            items=[_describe(v) for v in value[: protocol.MAX_ITEMS]],
        )
    return protocol.OutputInfo(container=None, items=[_describe(value)])


_MISSING = object()
#: Globals the interpreter itself adds to a module (a warning issued from its code).
_REGISTRIES = frozenset({"__warningregistry__"})


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
            "torch.autograd.profiler.profile": lambda: torch.autograd.profiler.profile,
            "torch.autograd.profiler.profile.__enter__": (
                lambda: torch.autograd.profiler.profile.__enter__
            ),
            "torch.autograd.profiler.profile.__exit__": (
                lambda: torch.autograd.profiler.profile.__exit__
            ),
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
            "perturbed_inputs",
            "_perturb_into",
            "forward_outputs",
            "median_ci",
        ):
            self.watched[f"timing.{name}"] = functools.partial(getattr, timing, name)
        self.watched["torch.cuda.Event.elapsed_time"] = lambda: torch.cuda.Event.elapsed_time
        own = globals()
        for name, func in list(own.items()):
            if name.startswith("_") and callable(func) and name != "_Trusted":
                self.watched[f"worker.{name}"] = functools.partial(own.__getitem__, name)
        self.identities = {name: get() for name, get in self.watched.items()}
        import builtins

        from gauntlet.judge import channel, correctness, overflow

        # Every global of the modules whose code decides after the submission has loaded (and
        # the builtins they call): one `sys.modules[...].NAME = ...` needs no audit event, and
        # a wider allow-list or an emptied ban list would decide for the submission.
        self.modules: dict[str, tuple[ModuleType, bool]] = {
            "worker": (sys.modules[__name__], True),
            "timing": (timing, True),
            "channel": (channel, True),
            "protocol": (protocol, True),
            "correctness": (correctness, True),
            "overflow": (overflow, True),
            "builtins": (builtins, False),
            "math": (math, False),
        }
        """Module by label, and whether a global added to it counts (one that shadows a
        builtin in the worker's code does; additions to `builtins` itself shadow nothing)."""
        self.globals = {label: dict(vars(m)) for label, (m, _) in self.modules.items()}
        # The worker imports inside its functions (`import torch`, the watch's dispatch mode
        # and profiler): each import reads `sys.modules`, whose entries anyone may replace
        # without an audit event, so a stand-in module there would decide for the submission.
        # A module imported afresh is found through finders (and `sys.path`, packages'
        # `__path__`) that the submission can change too: `run_candidate` imports what the
        # watch needs before the submission loads, then records the modules again.
        self.module_table = sys.modules
        self.finders: dict[str, list[Any]] = {
            "sys.meta_path": sys.meta_path,
            "sys.path_hooks": sys.path_hooks,
        }
        for name, value in (("sys.modules", sys.modules), *self.finders.items()):
            self.watched[name] = functools.partial(getattr, sys, name.removeprefix("sys."))
            self.identities[name] = value
        self.module_entries: dict[str, ModuleType] = {}
        self.finder_entries: dict[str, list[Any]] = {}
        self.record_modules()

    def record_modules(self) -> None:
        """Take the modules imported so far and the finders as the ones to compare against.

        Not the modules loaded from the worker's own writable folders: code generated there
        (Inductor's compiled reference, which reloads its modules when it recompiles for a
        new weight or shape) is no code the judge relies on, and the audit hook already counts
        it as the submission's.
        """
        writable = _writable_folders()
        # A copy to iterate, and the module's own dict read: a lazy module's `__getattr__`
        # may import (and so add to `sys.modules`) when asked for `__file__`.
        self.module_entries = {
            name: module
            for name, module in list(self.module_table.items())
            if not str(getattr(module, "__dict__", {}).get("__file__") or "").startswith(writable)
        }
        self.finder_entries = {name: list(found) for name, found in self.finders.items()}

    def changed(self) -> list[str]:
        """Names whose object is no longer the one recorded."""
        found = []
        for name, get in self.watched.items():
            try:
                if get() is not self.identities[name]:
                    found.append(name)
            except (AttributeError, KeyError):
                found.append(name)
        for label, (module, additions) in self.modules.items():
            now = vars(module)
            before = self.globals[label]
            for key, value in before.items():
                if now.get(key, _MISSING) is not value and f"{label}.{key}" not in found:
                    found.append(f"{label}.{key}")
            if additions and len(now) != len(before):
                found += [f"{label}.{k}" for k in now if k not in before and k not in _REGISTRIES]
        table = self.module_table
        found += [
            f"sys.modules[{name!r}]"
            for name, module in self.module_entries.items()
            if table.get(name, _MISSING) is not module
        ]
        for name, entries in self.finder_entries.items():
            # By identity (`entries` keeps the originals alive, so no other object has their id).
            if [id(f) for f in self.finders[name]] != [id(f) for f in entries]:
                found.append(name)
        return found


class _Watch:
    """Records the ATen operations that run while entered, two ways.

    A dispatch mode sees operations as PyTorch dispatches them; the profiler's record-function
    callbacks see them in the dispatcher itself, so excluding the Python dispatch key, popping
    the mode or a `TorchFunctionMode` of the submission's own do not hide them from it. Both
    run in the submission's process (a first filter; the static guards and, on a GPU, the
    profiler's kernel list back them up). Entered once per call of the submission.
    """

    def __init__(self, allowed: frozenset[str], kernels: bool = False) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        self.allowed = allowed
        self.kernels = kernels
        """Also record the GPU kernels of each entry (CUPTI, through Kineto)."""
        self.calls: list[tuple[list[protocol.KernelTally], int]] = []
        """Per entry, when recording kernels: the kernels by name and how many names were cut."""
        seen: list[str] = []
        self.seen = seen
        counted = [0]
        self._counted = counted
        self.most = 0
        """The most operations one entry saw (the dispatch mode's or the profiler's count)."""

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                counted[0] += 1
                name = func.overloadpacket.__name__.split(".")[-1]
                if name not in allowed and name not in seen:
                    seen.append(name)
                return func(*args, **(kwargs or {}))

        self._mode_type = _Mode
        self._stack: list[Any] = []

    def __enter__(self) -> _Watch:
        from torch.autograd import profiler

        # Kineto on every device: its raw events are read below without the profiler's own
        # post-processing into a tree of `FunctionEvent`s, which cost more than the call itself
        # on small configs (30 ms for 250 operations).
        recorder = profiler.profile(
            use_kineto=True, use_device="cuda" if self.kernels else None, record_shapes=False
        )
        mode = self._mode_type()
        self._counted[0] = 0
        recorder.__enter__()
        mode.__enter__()
        self._stack = [recorder, mode]
        return self

    def __exit__(self, *exc: object) -> None:
        from torch.autograd import DeviceType  # type: ignore[attr-defined]

        recorder, mode = self._stack
        self._stack = []
        mode.__exit__(None, None, None)
        recorder.__exit__(None, None, None)
        recorded = 0
        kernels: dict[str, list[int]] = {}
        for event in recorder.kineto_results.events():
            name = event.name()
            if event.device_type() == DeviceType.CPU:
                if name.startswith("aten::"):
                    recorded += 1
                    op = name.removeprefix("aten::")
                    if op not in self.allowed and op not in self.seen:
                        self.seen.append(op)
            elif event.device_type() == DeviceType.CUDA and not name.lower().startswith(
                ("memcpy", "memset")
            ):
                tally = kernels.setdefault(name[:2000], [0, 0])
                tally[0] += 1
                tally[1] += max(int(event.duration_ns()), 0)
        self.most = max(self.most, self._counted[0], recorded)
        if self.kernels:
            self.calls.append(_kernel_tally(kernels))

    def forbidden(self) -> list[str]:
        """The operations seen that are not allowed, in the order first seen."""
        return list(self.seen)


def _kernel_tally(totals: dict[str, list[int]]) -> tuple[list[protocol.KernelTally], int]:
    """A call's GPU kernels by name (launches, nanoseconds), longest in all first."""
    ranked = sorted(totals.items(), key=lambda item: -item[1][1])
    kept = [
        protocol.KernelTally(name=name, launches=count, total_ns=ns)
        for name, (count, ns) in ranked[: protocol.MAX_ITEMS]
    ]
    return kept, max(len(ranked) - protocol.MAX_ITEMS, 0)


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
    request: protocol.WorkerRequest,
    make: Callable[..., Any],
    config: protocol.ConfigSpec,
    trial: protocol.TrialSpec,
) -> dict[str, Any]:
    inputs = make(dict(config.params), int(trial.seed), trial.distribution, request.device)
    if not isinstance(inputs, dict):
        raise TypeError(f"make_inputs returned {type(inputs).__name__}, expected a dict")
    return inputs


def _entry(root: Path, spec: protocol.EntrySpec, module_name: str) -> Callable[..., Any]:
    function: Callable[..., Any] = getattr(_load_module(root / spec.file, module_name), spec.entry)
    return function


class _ReferenceRun:
    """A judgment's reference computations: the task's code, and one result at a time.

    The reference runs on the inputs upcast to float64 (the ground truth), or as drawn in
    `native` mode; beside it, the expected types (the reference on the inputs as drawn) and the
    baseline's error against it.
    """

    def __init__(self, request: protocol.WorkerRequest, laps: timing.Laps) -> None:
        root = Path(request.task_root)
        self.request = request
        self.laps = laps
        self.ref = _entry(root, request.reference, "_gauntlet_reference")
        self.make = _entry(root, request.inputs, "_gauntlet_inputs")
        self.base: Callable[..., Any] = self.ref
        if request.baseline is not None:
            self.base = _entry(root, request.baseline, "_gauntlet_baseline")
        self.native_mode = request.reference_mode == "native"
        self.lift = _clone if self.native_mode else _upcast
        self.configs = {c.name: c for c in request.configs}

    def sample_inputs(self, config: protocol.ConfigSpec, position: int) -> dict[str, Any]:
        """A timed call's input: the base input with the call's per-element factors.

        Made exactly as the timing loop makes it, so the float64 reference matches that call.
        """
        sample = next(s for s in config.samples if s.position == position)
        base = _make_inputs(self.request, self.make, config, sample)
        return timing.perturbed_inputs(base, sample.call_seed)

    def trial_inputs(self, config: protocol.ConfigSpec, index: int) -> dict[str, Any]:
        """A trial's inputs, drawn from its seed."""
        return _make_inputs(self.request, self.make, config, config.trials[index])

    def sample(
        self, config: protocol.ConfigSpec, position: int
    ) -> tuple[protocol.ReferenceSample, list[torch.Tensor]]:
        """The reference of a sampled timed call, and the baseline's error on it.

        Of the elements the judge checks (`sampling.gather` with the call's `elements`), or
        whole where it checks whole outputs.
        """
        import torch

        laps, computing = self.laps, time.perf_counter()
        spec = next(s for s in config.samples if s.position == position)
        inputs = self.sample_inputs(config, position)
        laps.lap("inputs")
        with torch.no_grad():
            expected64 = _as_tuple(self.ref(*(self.lift(v) for v in inputs.values())))
            laps.lap("reference")
            base_out = _as_tuple(self.base(*(_clone(v) for v in inputs.values())))
        laps.lap("baseline")
        shapes = [list(e.shape) for e in expected64]
        if spec.elements is not None:
            seed = spec.elements
            where = self.request.device
            expected64 = tuple(sampling.gather(e, seed, i, where) for i, e in enumerate(expected64))
            base_out = tuple(sampling.gather(b, seed, i, where) for i, b in enumerate(base_out))
        event = protocol.ReferenceSample(
            event="sample",
            config=config.name,
            position=position,
            baseline_rel_l2=[_errors(b, e)[0] for b, e in zip(base_out, expected64, strict=True)],
            shapes=shapes,
            compute_s=time.perf_counter() - computing,
        )
        return event, [_for_judge(e, b) for e, b in zip(expected64, base_out, strict=True)]

    def trial(
        self, config: protocol.ConfigSpec, index: int
    ) -> tuple[protocol.ReferenceTrial, list[torch.Tensor]]:
        """The reference of one trial: expected types, outputs, gradients, the baseline's error."""
        import torch

        request, laps, wrt = self.request, self.laps, self.request.wrt
        computing = time.perf_counter()
        inputs = self.trial_inputs(config, index)
        unknown = [n for n in request.outputs if n not in inputs]
        if unknown:
            raise ValueError(
                f"[submission] outputs names {unknown}, which {request.inputs.file} does "
                f"not return (its inputs: {list(inputs)})"
            )
        laps.lap("inputs")
        wide = {k: self.lift(v) for k, v in inputs.items()}
        for name in wrt:
            wide[name].requires_grad_(True)
        with torch.enable_grad() if wrt else torch.no_grad():
            raw = self.ref(*wide.values())
            expected64 = _as_tuple(raw)
        # Each copy of a GPU-sized trial's inputs is let go as soon as nothing needs it: at
        # KernelBench's softmax (6 GiB inputs) all of them held at once with the references
        # and the baseline's outputs came to 54 GiB, and ran out beside the candidate.
        if not wrt:
            wide.clear()
        native = raw
        if not self.native_mode:
            # The expected types: the reference on the inputs as drawn.
            with torch.no_grad():
                native = self.ref(*(_clone(v) for v in inputs.values()))
        expected = _describe_output(native)
        natives = _as_tuple(native)
        tensors = [
            _for_judge(e, natives[i] if i < len(natives) else None)
            for i, e in enumerate(expected64)
        ]
        del native, natives
        laps.lap("reference")
        base_args = {k: _clone(v) for k, v in inputs.items()}
        for name in wrt:
            base_args[name].requires_grad_(True)
        if not wrt:
            inputs.clear()
        with torch.enable_grad() if wrt else torch.no_grad():
            base_out = _as_tuple(self.base(*base_args.values()))
        if not wrt:
            base_args.clear()
        base_err, base_abs = _per_output_errors(base_out, expected64)
        laps.lap("baseline")
        grad_errs: list[float] = []
        grad_abs: list[float] = []
        if wrt:
            upstream = _upstream(base_out, int(config.trials[index].seed))
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
        event = protocol.ReferenceTrial(
            event="reference_trial",
            config=config.name,
            trial=index,
            expected=expected,
            baseline_rel_l2=base_err,
            baseline_grad_rel_l2=grad_errs,
            baseline_max_abs=base_abs,
            baseline_grad_max_abs=grad_abs,
            compute_s=time.perf_counter() - computing,
        )
        return event, tensors

    def release(self) -> None:
        """Give the GPU memory the last result held back to the device.

        After the references are sent, and between a streamed config's results, the candidate
        runs on the same GPU: what this worker's allocator caches of a GPU-sized float64
        reference (tens of GB) would crowd it.
        """
        import torch

        if self.request.device != "cpu" and torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def _nbytes(tensors: Sequence[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def run_reference(request: protocol.WorkerRequest, fd: int, commands: FrameReader) -> bool:
    """Send each config's references, or stream those past the judge's budget.

    Per config, the first trial's reference is computed first: with its sizes, what the config
    holds on the judge's host is known (its trials and sampled timed calls). Where that, with
    what was sent before, passes `reference_budget_bytes`, the config is streamed: the worker
    sends `ReferenceStreamed` instead and computes each of its results only when the judge asks
    (`_serve_orders`). Then, until the orchestrator's `stop`, it serves those orders and the
    task's checker if it has one. Returns False where the orchestrator closed the channel
    instead.
    """
    laps = timing.Laps()
    run = _ReferenceRun(request, laps)
    laps.lap("setup")
    # Of the `send` laps (each result staged to the host, then written): the memory files
    # made and filled, and their passing to the judge.
    spent: dict[str, float] = {}
    held_bytes = 0
    streamed: set[str] = set()

    def waiting() -> None:
        if streamed:
            _serve_waiting(request, fd, commands, run, streamed)
            laps.lap("answered")  # streamed results asked for meanwhile

    for config in request.configs:
        waiting()
        first = run.trial(config, 0)
        trial_bytes = _nbytes(first[1])
        outputs = first[1][: len(first[0].baseline_rel_l2)]
        # A sampled call's reference: its checked elements, or whole (a task with a checker).
        gathered = any(s.elements is not None for s in config.samples)
        output_bytes = sum(
            (min(t.numel(), sampling.ELEMENTS) if gathered else t.numel()) * t.element_size()
            for t in outputs
        )
        needed = trial_bytes * len(config.trials) + output_bytes * len(config.samples)
        budget = request.reference_budget_bytes
        if budget and held_bytes + needed > budget:
            expected = first[0].expected
            del first  # its tensors: the worker holds one result at a time
            _send(
                fd,
                protocol.ReferenceStreamed(
                    event="reference_streamed",
                    config=config.name,
                    trial_bytes=trial_bytes,
                    output_bytes=output_bytes,
                    expected=expected,
                ),
                spent=spent,
            )
            laps.lap("send")
            streamed.add(config.name)
            continue
        held_bytes += needed
        _send(fd, *first, spent)
        laps.lap("send")
        del first
        for index in range(1, len(config.trials)):
            waiting()
            _send(fd, *run.trial(config, index), spent)
            laps.lap("send")
        for sample in config.samples:
            waiting()
            _send(fd, *run.sample(config, sample.position), spent)
            laps.lap("send")
    # The cached GPU memory goes back to the device before the judge reads on: the candidate
    # runs on beside this worker, which resets after the judgment, in the background.
    run.release()
    for step, seconds in spent.items():
        laps.add(f"send.{step}", seconds)
    _send(fd, protocol.Done(event="done", phases=laps.totals))
    return _serve_orders(request, fd, commands, run, streamed)


def _serve_streamed(
    request: protocol.WorkerRequest,
    fd: int,
    run: _ReferenceRun,
    streamed: set[str],
    order: protocol.ReferenceOrder,
) -> None:
    """Compute and send one result of a streamed config, then let go of it."""
    began = time.monotonic()
    if order.config not in streamed:
        raise ValueError(f"asked for a reference of config {order.config}, not streamed")
    config = run.configs[order.config]
    result: tuple[protocol.ReferenceTrial | protocol.ReferenceSample, list[torch.Tensor]]
    if order.trial is not None:
        result = run.trial(config, order.trial)
    elif order.position is not None:
        result = run.sample(config, order.position)
    else:
        raise ValueError(f"asked for a reference of config {order.config}, but which?")
    event = result[0].model_copy(update={"began_at": began})
    # Held by the judge one at a time and never kept past the judgment (unlike the results
    # sent whole, which it caches): they may stay on the GPU.
    _send(fd, event, result[1], share_device=request.share_device)
    run.release()


def _serve_waiting(
    request: protocol.WorkerRequest,
    fd: int,
    commands: FrameReader,
    run: _ReferenceRun,
    streamed: set[str],
) -> None:
    """Between the results sent whole, the streamed ones the judge already waits for.

    A candidate's first trials are compared as they come, a streamed config's against results
    computed on demand: made to wait for every other config's results first, the judge sat
    idle for seconds (6.4 s of a warm KernelBench softmax judgment on an H200). Only such
    orders may come before `Done` (the judge sends any other once it has every result).
    """
    while commands.ready():
        header, _ = commands.read(None)
        order = protocol.parse_order(header)
        if not isinstance(order, protocol.ReferenceOrder):
            raise ValueError(f"a reference worker was sent '{header}' before its results")
        _serve_streamed(request, fd, run, streamed, order)


def _serve_orders(
    request: protocol.WorkerRequest,
    fd: int,
    commands: FrameReader,
    run: _ReferenceRun,
    streamed: set[str],
) -> bool:
    """Serve the judge until its `stop`: streamed configs' results, the task's checker.

    A streamed config's result is computed when asked (`ReferenceOrder`) and sent, then
    dropped. The checker is task code, so it runs here, in the trusted process, on inputs
    rebuilt from the trial's seed (or the sampled timed call's), never on anything of the
    candidate's but the output bytes the orchestrator forwards. Without a checker or a
    streamed config only `stop` may come. Returns False where the orchestrator closed the
    channel instead.
    """
    import torch

    check = None
    if request.check is not None:
        check = _entry(Path(request.task_root), request.check, "_gauntlet_check")
    while True:
        try:
            header, tensors = commands.read(None)
        except ChannelClosed:
            return False
        order = protocol.parse_order(header)
        if isinstance(order, protocol.Command):
            if order.command != "stop":
                raise ValueError(f"a reference worker was told to '{order.command}'")
            return True
        config = run.configs[order.config]
        if isinstance(order, protocol.ReferenceOrder):
            _serve_streamed(request, fd, run, streamed, order)
            continue
        if check is None:
            raise ValueError(f"an output to check, and '{request.task_root}' has no checker")
        if order.trial is not None:
            inputs = run.trial_inputs(config, order.trial)
        else:
            assert order.position is not None, "a checked output is a trial's or a timed call's"
            inputs = run.sample_inputs(config, order.position)
        try:
            # Copies on the judged device: the checker may write, and the frame's bytes are
            # shared. An output that cannot be copied there is refused like one the checker
            # cannot read, never a failure of this worker.
            found = [t.to(request.device, copy=True) for t in tensors]
            output = found[0] if order.container is None else tuple(found)
            with torch.no_grad():
                ok, message = check(inputs, output)
            ok, message = bool(ok), str(message)
        except Exception as err:  # noqa: BLE001 - a checker failing on an output judges it
            # The checker met an output it cannot read (a dtype or shape it assumes): that is
            # the output's failure, told in the checker's words.
            ok, message = False, f"the task's checker failed on this output: {err!r}"
        _send(
            fd,
            protocol.CheckResult(
                event="check_result",
                config=order.config,
                trial=order.trial,
                position=order.position,
                ok=ok,
                message=message[:4000],
            ),
        )


#: The name the submission's module is imported under.
SUBMISSION_MODULE = "kernel_submission"

#: Audit events the submission's own code may not raise: raw memory (ctypes), the interpreter's
#: object graph and frames (how a submission finds the worker's state and channel), swapped
#: code or attributes of classes, new processes, signals and sockets.
BANNED_EVENTS = frozenset(
    """
    gc.get_objects gc.get_referrers gc.get_referents sys._getframe sys._current_frames
    sys.setprofile sys.settrace object.__setattr__ object.__delattr__ code.__new__
    function.__new__ os.system os.fork os.forkpty os.kill os.killpg os.posix_spawn
    os.spawn os.exec subprocess.Popen socket.connect socket.bind socket.sendto pty.spawn
    marshal.loads sys.addaudithook signal.pthread_kill
    """.split()
)
BANNED_PREFIXES = ("ctypes.", "os.exec", "os.spawn", "os.posix_spawn", "_posixsubprocess.")
#: Banned events that a new thread raises with only the standard library on its stack: a
#: tracer or profiler stored with `threading.settrace`/`setprofile` is installed by `threading`
#: itself in every thread started later, trusted ones too, and handed their frames.
THREAD_TRACER_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})
#: Where importlib's own code comes from (frozen into the interpreter).
IMPORTLIB_FILES = ("<frozen importlib",)
#: Attributes whose read (`object.__getattr__`) hands out a frame without `sys._getframe`: an
#: exception's traceback, a generator's or coroutine's own frame, whose `f_back` and
#: `f_locals` lead to the worker's watch, counters and channel.
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})


def _class_makers() -> frozenset[CodeType]:
    """Standard library code that makes a class for its caller, with events of its own.

    `collections.namedtuple` reads its caller's module name (`sys._getframe`) and sets the new
    class's `__module__`; `typing.TypeVar` (through `typing._caller`) and the functional
    `Enum("Name", "A B")` read the module name too. Each keeps the frame to itself and changes
    only the class it makes: a submission's namedtuple is no reach for frames or classes.
    """
    import collections
    import enum
    import typing

    found = [collections.namedtuple, getattr(typing, "_caller", None)]
    found.append(getattr(getattr(enum, "EnumType", enum.EnumMeta), "_create_", None))
    return frozenset(f.__code__ for f in found if f is not None and hasattr(f, "__code__"))


def _writable_folders() -> tuple[str, ...]:
    """The worker's own writable folders: its working directory, HOME and TMPDIR.

    Resolved, each ending in a separator. Code found there is nobody's the judge relies on.
    """
    found = (os.getcwd(), os.environ.get("HOME", ""), os.environ.get("TMPDIR", ""))
    return tuple(sorted({str(Path(p).resolve()) + os.sep for p in found if p}))


def _install_audit_hook(submission_dir: Path, task_root: Path) -> None:
    """Stop the process when the submission's own code raises a banned audit event.

    An audit hook cannot be removed from Python, and it runs before the operation: the process
    ends (status `protocol.BREACH_EXIT`) before raw memory is read, a frame is handed out or code is
    swapped. The event is the submission's when the innermost frame that is not the standard
    library's is not trusted code (the standard library's own wrappers, such as `ctypes` or
    `inspect`, are looked through, and so is code compiled from a string, `<string>`: whoever
    ran it is asked; PyTorch and Triton doing the same for themselves are not the submission;
    nor is a module's code run while it is imported). Trusted code is a file under the import
    path the worker started with or the task's folder; the submission's folder, the worker's
    own writable folders (a module the submission wrote there and imported) and any other file
    are the submission's. A `compile` of source under a file name (not `<...>`) is the
    submission's forging one, and so banned.

    Everything the hook reads is bound here, in its closure: the worker's module globals can
    be rebound by the submission (through `sys.modules`), the hook's closure cannot be reached.
    A first filter like the rest of the worker, and a strong one: what it stops is how every
    in-process forgery found so far began.
    """
    import sysconfig

    def folder(path: str | Path) -> str:
        return str(Path(path or ".").resolve()) + os.sep

    paths = sysconfig.get_paths()
    library = tuple(folder(paths[key]) for key in ("stdlib", "platstdlib"))
    # In a virtual environment the packages lie under `platstdlib` too, and are looked through
    # like the standard library; a read of a frame attribute is asked of PyTorch's and
    # Triton's own code instead (their exception handling reads tracebacks).
    packages = tuple(folder(paths[key]) for key in ("purelib", "platlib"))
    ours = (folder(submission_dir), *_writable_folders())
    trusted = (
        tuple(
            entry
            for entry in dict.fromkeys([folder(task_root), *(folder(p) for p in sys.path)])
            if not any(entry.startswith(o) or o.startswith(entry) for o in ours)
        )
        + library
    )
    banned, prefixes, frame_attributes = BANNED_EVENTS, BANNED_PREFIXES, FRAME_ATTRIBUTES
    thread_tracers = THREAD_TRACER_EVENTS
    busy: list[bool] = []
    write, leave, getframe, breach = os.write, os._exit, sys._getframe, protocol.BREACH_EXIT
    get_type_name, get_attribute = type.__getattribute__, object.__getattribute__
    module_name = SUBMISSION_MODULE
    makers = _class_makers()
    read_file, as_bytes, importers = open, bytes, IMPORTLIB_FILES

    def untrusted(filename: str) -> bool:
        """Whether code from this file is the submission's (not trusted code)."""
        return filename.startswith(ours) or not filename.startswith(trusted)

    def own(target: object) -> bool:
        """Whether a function or class the event changes is the submission's own.

        A function by where its code comes from (its `__module__` can be set without an
        audit event, so it proves nothing), a class by its module's name (which cannot).
        """
        try:
            kind = get_type_name(type(target), "__name__")
            if kind == "function":
                return untrusted(get_attribute(target, "__code__").co_filename)
            return kind == "type" and bool(get_attribute(target, "__module__") == module_name)
        except AttributeError:
            return False

    def imported_as_is(event: str, args: tuple[Any, ...], frame: FrameType) -> bool:
        """Whether importlib makes code of exactly a trusted file's bytes (source or `.pyc`)."""
        try:
            path: object = str(args[1]) if event == "compile" else None
            if event != "compile":  # `_compile_bytecode(data, name, bytecode_path, ...)`
                path = frame.f_locals.get("bytecode_path")
            data, skip = args[0], 0 if event == "compile" else 16  # a .pyc's header is cut off
            if not isinstance(path, str) or untrusted(path):
                return False
            if not isinstance(data, bytes | bytearray | memoryview):
                return False
            with read_file(path, "rb") as handle:
                return bool(handle.read()[skip:] == as_bytes(data))
        except (OSError, ValueError, TypeError, IndexError):
            return False

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy:
            return
        if event == "object.__getattr__":
            if len(args) < 2 or args[1] not in frame_attributes:
                return
        elif event == "compile":
            # Source compiled under a trusted file's name passes for that file's code (Triton's
            # interpreter compiling a kernel under the submission's own name is no forgery).
            if len(args) < 2 or str(args[1]).startswith("<") or untrusted(str(args[1])):
                return
        elif not (event in banned or event.startswith(prefixes)):
            return
        busy.append(True)
        try:
            if event.startswith("object.__set") or event.startswith("object.__del"):
                if own(args[0]):
                    return  # the submission's own classes and functions (a dataclass, an Enum)
            frame: FrameType | None = getframe(1)
            if frame is not None and frame.f_code in makers:
                return  # the standard library making a class for its caller (a namedtuple)
            reads = event == "object.__getattr__"
            # importlib turning bytes into code (`compile` under a trusted file's name, or a
            # `.pyc`'s `marshal.loads`) is that file being imported only when the bytes are the
            # file's own; else a loader or a direct call handed it forged bytes, and the code
            # would pass for the trusted file's: whoever asked importlib answers for it.
            forged = (
                event in ("compile", "marshal.loads")
                and frame is not None
                and frame.f_code.co_filename.startswith(importers)
                and not imported_as_is(event, args, frame)
            )
            while frame is not None:
                name = frame.f_code.co_filename
                if name.startswith(importers) and not forged:
                    return  # a module's own code while it is imported (a lazy import)
                looked_through = name.startswith(library) and not (
                    reads and name.startswith(packages)
                )
                if not (looked_through or name.startswith("<")):
                    break
                frame = frame.f_back
            if frame is None:
                if event not in thread_tracers:
                    return
                # Only the standard library below: `threading` starting a thread installs the
                # tracer that `threading.settrace` stored, which nothing trusted sets here.
                where = "the start of a thread (threading.settrace or setprofile)"
            elif untrusted(frame.f_code.co_filename):
                shown = frame.f_code.co_filename.rsplit(os.sep, 1)[-1]
                where = f"{shown}, line {frame.f_lineno}"
            else:
                return
            write(2, f"\ngauntlet: the submission raised '{event}' at {where}\n".encode())
            leave(breach)
        finally:
            busy.clear()

    sys.addaudithook(hook)


def _frame_hook_switches() -> tuple[Callable[[Any], Any], ...]:
    """TorchDynamo's setters of the callbacks it hands frames to (PEP 523), to switch them off.

    A callback set there (no audit event) is handed every frame run after it, with its live
    locals, and may run other code in its place. Each setter is a C function: called from a
    frame already running, it starts no frame that a callback could see or replace, so the
    worker calls them, bound before the submission loads, right after each of its calls.
    """
    try:
        from torch._C._dynamo import eval_frame
    except ImportError:
        return ()
    names = ("set_eval_frame", "set_bytecode_debugger_callback")
    found = (getattr(eval_frame, name, None) for name in names)
    return tuple(f for f in found if isinstance(f, BuiltinFunctionType))


class _Launches:
    """Counts launches of the submission's own Triton kernels (defined in its own files).

    Installed on Triton's launch paths before the submission loads. A first filter like the
    identity checks (it runs in the submission's process); on a GPU the profiler's kernel list
    is the second.
    """

    def __init__(self, submission_dir: Path) -> None:
        self.root = str(submission_dir.resolve())
        self.count = 0
        self.patched: list[tuple[type, Callable[..., Any]]] = []

    def install(self) -> None:
        from triton.runtime import jit

        classes: list[type] = [jit.JITFunction]
        try:
            from triton.runtime import interpreter

            classes.append(interpreter.InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            original = cls.run  # type: ignore[attr-defined]

            @functools.wraps(original)
            def run(
                self: Any, *args: Any, _original: Any = original, _of: Any = self, **kwargs: Any
            ) -> Any:
                code = getattr(getattr(self, "fn", None), "__code__", None)
                if code is not None and code.co_filename.startswith(_of.root):
                    _of.count += 1
                return _original(self, *args, **kwargs)

            cls.run = run  # type: ignore[attr-defined]
            self.patched.append((cls, run))

    def intact(self) -> bool:
        """Whether the wrappers are still in place."""
        return all(getattr(cls, "run", None) is run for cls, run in self.patched)


def _mapped_bytes() -> int:
    """This process's address space now (`/proc/self/statm`)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _data_bytes() -> int:
    """This process's data segment now (`VmData` in `/proc/self/status`).

    What `RLIMIT_DATA` counts: the heap and every private writable mapping.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) << 10
    raise OSError("/proc/self/status has no VmData line")


#: The resource limit of each cap (`protocol.MEMORY_CAPS` gives a candidate's by device). On the
#: CPU its address space, which counts everything it maps. On a GPU that cannot be used (CUDA
#: reserves virtual ranges of many GiB as it starts), so its data segment: the heap and private
#: writable mappings (host tensors, NumPy arrays, Python objects). Measured on an H200: CUDA,
#: cuBLAS, Triton, `torch.compile` and the profiler all work under it, and a host allocation
#: past it fails; what it does not count (pinned memory from `cudaHostAlloc`, shared mappings)
#: the candidate's memory cgroup counts, where the machine allows one (`memcg.py`;
#: tests/exploits/README.md, known limits). ROCm taken to be as CUDA (not measured).
MEMORY_CAPS: dict[protocol.MemoryCap, int] = {
    "address_space": resource.RLIMIT_AS,
    "data_segment": resource.RLIMIT_DATA,
}

#: What each cap counts, measured now.
_IN_USE = {resource.RLIMIT_AS: _mapped_bytes, resource.RLIMIT_DATA: _data_bytes}


def memory_cap(cap: protocol.MemoryCap, limit_bytes: int) -> tuple[int, int]:
    """The resource limit of `cap` that caps a candidate's host memory, and its value.

    The value is the task's limit on top of what the limit already counts (the trusted imports:
    a CUDA build of PyTorch maps gigabytes of libraries a CPU judgment never touches, and holds
    1.4 GB of data segment after `import torch`), so a task's limit is what its candidate may
    add, the same on any machine.
    """
    kind = MEMORY_CAPS[cap]
    return kind, limit_bytes + _IN_USE[kind]()


def _cap_memory(cap: protocol.MemoryCap, limit_bytes: int) -> int:
    """Cap this process's host memory (`memory_cap`), soft and hard; the cap's value."""
    kind, limit = memory_cap(cap, limit_bytes)
    resource.setrlimit(kind, (limit, limit))
    return limit


#: Descriptors a candidate on a memory cap may open beyond the highest the worker holds when
#: the submission loads (it holds about a dozen): room for a compiler pool's pipes and the
#: submission's own files.
CANDIDATE_FD_HEADROOM = 64


def _bound_memory_files() -> None:
    """Bound the memory a candidate can hold in files, outside its memory cap.

    A memory file (`memfd_create`) that is not mapped is counted by no memory limit, only by
    the file-size limit, one file at a time, and a process can hold as many as it has
    descriptors, plus as many again queued unread on a socket (the kernel bounds those by the
    same descriptor limit). With the worker's file-size limit at its memory cap and the host's
    descriptor limit (tens of thousands), that was tens of thousands of times the task's
    memory cap. Here the descriptors are capped (soft and hard, so the submission cannot raise
    them again) and each file may hold a share of the memory cap (`memory_cap`: the
    address-space limit on the CPU, the data-segment limit on a GPU), so that all of them
    together hold no more than that cap once more. The worker's own frames too large for one
    file go in several, each holding a descriptor until it is sent (`channel.write_frame`).
    """
    highest = max(int(name) for name in os.listdir("/proc/self/fd"))
    descriptors = highest + 1 + CANDIDATE_FD_HEADROOM
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY:
        descriptors = min(descriptors, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))
    caps = [resource.getrlimit(kind)[1] for kind in MEMORY_CAPS.values()]
    bounded = [cap for cap in caps if cap != resource.RLIM_INFINITY]
    if bounded:
        per_file = min(bounded) // (2 * descriptors)
        resource.setrlimit(resource.RLIMIT_FSIZE, (per_file, per_file))


def run_candidate(
    request: protocol.WorkerRequest, fd: int, trusted: _Trusted, commands: FrameReader
) -> None:
    """Import the submission and run it on every trial, checking as it goes; then time it."""
    import torch

    root = Path(request.task_root)
    baseline = _baseline_callable(request) if request.timing else None
    make = _entry(root, request.inputs, "_gauntlet_inputs")
    submission = request.submission
    assert submission is not None
    launches = _Launches(Path(submission.dir)) if request.language == "triton" else None
    if launches is not None:
        launches.install()
    # The task's adapter (trusted task code, loaded before the submission) binds the entry per
    # config: it builds a KernelBench `ModelNew` with the config's init inputs.
    adapter = _entry(root, request.adapter, "_gauntlet_adapter") if request.adapter else None
    # What the watch admits is fixed before the submission loads: it can rebind the module's
    # globals (a wider allow-list), never this local.
    allowed = STRUCTURAL_OPS | GLUE_OPS | frozenset(request.allowed_ops)
    compiled = _compile_references(request, make) if baseline is not None else {}
    # The watch's first entry imports TorchDynamo and more: done now, not in the first judged
    # call, so that no module the worker relies on is imported after the submission loads,
    # through finders and paths it could have changed (`_Trusted.record_modules`).
    with _Watch(frozenset()):
        torch.zeros(1).add_(1)
    trusted.record_modules()
    # Called inline (`for off in hooks: off(None)`) the moment the submission's code returns,
    # before any frame of the worker's own starts (`_frame_hook_switches`).
    hooks = _frame_hook_switches()
    if request.memory_limit_bytes:
        if request.device == "cuda":
            # CUDA's own descriptors (its device files, its threads' pipes) opened before the
            # descriptor cap counts the worker's, not out of the submission's headroom.
            torch.zeros(1, device="cuda")
        _bound_memory_files()
    _install_audit_hook(Path(submission.dir), root)
    try:
        module = _load_module(Path(submission.dir) / submission.file, SUBMISSION_MODULE)
        entry = getattr(module, submission.entry)
        if isinstance(entry, type) and adapter is None:
            # A KernelBench-style `ModelNew` class: built once, with no arguments, then called.
            entry = entry()
        for off in hooks:
            off(None)
    except BaseException:  # noqa: BLE001 - anything the submission raises on import is its failure
        for off in hooks:
            off(None)
        _send(fd, protocol.BuildFailed(event="build_error", traceback=_short_traceback()))
        return
    if _report_tampering(fd, trusted, launches):
        return
    _send(fd, protocol.Loaded(event="loaded"))
    wrt = request.wrt
    device = request.device
    for config in request.configs:
        _send(fd, protocol.ConfigStart(event="config_start", config=config.name))
        call = entry
        for index, trial in enumerate(config.trials):
            # The submission gets clones; `pristine` is never passed to it.
            pristine = _make_inputs(request, make, config, trial)
            args = {k: _clone(v) for k, v in pristine.items()}
            for name in wrt:
                args[name].requires_grad_(True)
            _poison_free_memory(device)
            watch = _Watch(allowed, kernels=device == "cuda")
            backward_watch = _Watch(allowed | AUTOGRAD_OPS, kernels=device == "cuda")
            launched = launches.count if launches is not None else 0
            try:
                if adapter is not None and index == 0:
                    # Built outside the watch: constructing the module is not the call.
                    call = adapter(entry, dict(config.params), device)
                    for off in hooks:
                        off(None)
                # Forward, backward and the repeat each run under a watch: work moved into
                # `backward` or into a second call is work like any other.
                with watch, torch.enable_grad() if wrt else torch.no_grad():
                    out = call(*args.values())
                    for off in hooks:
                        off(None)
                    if device == "cuda":
                        torch.cuda.synchronize()
                described = _describe_output(out)
                outputs = [o for o in _as_tuple(out) if type(o) is torch.Tensor]
                tensors = [o.detach() for o in outputs]
                grads_present: list[bool] | None = None
                if wrt and len(outputs) == len(described.items):
                    upstream = _upstream(outputs, int(trial.seed))
                    with backward_watch:
                        grads = torch.autograd.grad(
                            outputs, [args[n] for n in wrt], upstream, allow_unused=True
                        )
                        for off in hooks:
                            off(None)
                        if device == "cuda":
                            torch.cuda.synchronize()
                    grads_present = [g is not None for g in grads]
                    tensors += [g.detach() for g in grads if g is not None]
                repeat_diff: float | None = None
                repeated = index == 0 and request.check_determinism
                if repeated:
                    again = {k: _clone(v) for k, v in pristine.items()}
                    with watch, torch.no_grad():
                        repeated_out = call(*again.values())
                        for off in hooks:
                            off(None)
                        repeat = _as_tuple(repeated_out)
                        if device == "cuda":
                            torch.cuda.synchronize()
                    repeat_diff = _max_diff(outputs, repeat)
            except BaseException:  # noqa: BLE001 - the submission's failure becomes a verdict
                for off in hooks:
                    off(None)
                _send(
                    fd,
                    protocol.CallFailed(
                        event="call_error",
                        config=config.name,
                        trial=index,
                        traceback=_short_traceback(),
                    ),
                )
                return
            # Checked after every trial's calls, before anything is judged on them: a global of
            # the worker's modules rebound inside a call and put back later would otherwise
            # decide this trial (the mutation check, the watch's report) and leave no trace.
            if _report_tampering(fd, trusted, launches):
                return
            forbidden = watch.forbidden() + [
                op for op in backward_watch.forbidden() if op not in watch.forbidden()
            ]
            if forbidden and request.watch_dispatch:
                _send(
                    fd,
                    protocol.ForbiddenOps(
                        event="forbidden_ops", config=config.name, ops=forbidden[:64]
                    ),
                )
                return
            # Destination buffers the task gives it to fill are its to write; nothing else is.
            mutated = [
                k
                for k, v in args.items()
                if isinstance(v, torch.Tensor)
                and k not in request.outputs
                and not _same_bits(v, pristine[k])
            ]
            header = protocol.CandidateTrial(
                event="trial",
                config=config.name,
                trial=index,
                output=described,
                mutated=mutated[:64],
                grads=grads_present,
                repeat_max_diff=repeat_diff,
                repeated=repeated,
                own_kernels=launches.count - launched if launches is not None else None,
                kernels=_call_kernels(watch, backward_watch) if device == "cuda" else None,
                most_ops=max(watch.most, backward_watch.most),
            )
            _send(fd, header, tensors)
        _send(fd, protocol.ConfigDone(event="config_done", config=config.name))
    if _report_tampering(fd, trusted, launches):
        return
    if baseline is not None:
        _send(fd, protocol.Checked(event="checked"))
        command = protocol.parse_command(commands.read(None)[0])
        if command.command == "time":
            _time_configs(
                request, fd, entry, adapter, baseline, command.configs, commands, compiled
            )
            # The timing loop's own frames stay in a callback's reach while it runs (the
            # judge's clock around every call decides there); not this check's.
            for off in hooks:
                off(None)
            if _report_tampering(fd, trusted, launches):
                return
    _send(fd, protocol.Done(event="done"))


def _call_kernels(watch: _Watch, backward_watch: _Watch) -> list[protocol.CallKernels]:
    """A trial's kernels per call: forward, then backward and the repeat where they ran."""
    tally = protocol.CallKernels
    calls = [tally(call="forward", kernels=k, more=more) for k, more in watch.calls[:1]]
    calls += [tally(call="backward", kernels=k, more=more) for k, more in backward_watch.calls[:1]]
    calls += [tally(call="repeat", kernels=k, more=more) for k, more in watch.calls[1:2]]
    return calls


def _report_tampering(fd: int, trusted: _Trusted, launches: _Launches | None) -> bool:
    changed = trusted.changed()
    if launches is not None and not launches.intact():
        changed.append("triton's kernel launch")
    if changed:
        _send(fd, protocol.Tampered(event="tampered", what=changed[:64]))
    return bool(changed)


def _baseline_callable(request: protocol.WorkerRequest) -> Callable[..., Any]:
    """The trusted baseline: the task's baseline kernel, or the reference for `torch2*`."""
    spec = request.baseline or request.reference
    return _entry(Path(request.task_root), spec, "_gauntlet_timing_baseline")


def _time_configs(
    request: protocol.WorkerRequest,
    fd: int,
    entry: Callable[..., Any],
    adapter: Callable[..., Any] | None,
    baseline: Callable[..., Any],
    names: list[str],
    commands: FrameReader,
    compiled: dict[str, Callable[..., Any] | str],
) -> None:
    import torch

    by_name = {c.name: c for c in request.configs}
    l2_bytes = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    make = _entry(Path(request.task_root), request.inputs, "_gauntlet_timing_inputs")
    backward = bool(request.wrt)

    def after_call(role: str, position: int, out: Any) -> dict[str, float]:
        return _report_call(fd, commands, role, position, out, backward, request.device)

    for index, name in enumerate(names):
        if index:
            # The judge checks the last config's samples on the GPU, and this one's first
            # calls would run beside that work: its go-ahead comes once the GPU is quiet.
            if protocol.parse_command(commands.read(None)[0]).command != "next":
                return
        config = by_name[name]
        spec = request.timing[name]
        _send(fd, protocol.TimingStart(event="timing_start", config=name))
        base = _make_inputs(request, make, config, spec.inputs)
        plan = timing.TimingPlan(**spec.plan.model_dump())
        clocks_before = _clocks()
        reference = compiled.get(name)
        try:
            call = entry if adapter is None else adapter(entry, dict(config.params), request.device)
            result = timing.measure(
                call, baseline, base, request.wrt, plan, l2_bytes, after_call, reference
            )
        except BaseException:  # noqa: BLE001 - the submission failed while being timed
            _send(
                fd,
                protocol.CallFailed(
                    event="call_error", config=name, trial="timing", traceback=_short_traceback()
                ),
            )
            return
        _send(
            fd,
            protocol.Timed(
                event="timed",
                config=name,
                summary=protocol.TimingSummary(**result.summary()),
                clocks={"before": clocks_before, "after": _clocks()},
            ),
        )


def _report_call(
    fd: int,
    commands: FrameReader,
    role: str,
    position: int,
    out: Any,
    backward: bool,
    device: str,
) -> dict[str, float]:
    """Report a timed call to the judge, wait for its go-ahead, send the output if it asks.

    The judge's clock brackets the call (from its previous go-ahead to this report); only then
    does it say whether the call is one of its secret samples, and which of its elements to
    send (`sampling.gather`, drawn on the judgment's `device`, where the go-ahead names a seed;
    else the whole outputs). Returns the seconds spent sending the output, which the judge's
    clock leaves out too, by step (none for a call not sampled): `gather` (the elements
    chosen, on the device, where it chose), `stage` (to the host, through pinned memory for a
    GPU output), then the way the frame went (`channel.FramePath`): `file` (one memory file),
    `parts` (several, each within the largest file this process may make,
    `_bound_memory_files`) or `inline` (on the socket: a frame under 1 MiB, or one no memory
    file could be made for); of a file's or the parts' seconds, `.make` (the files made and
    filled) and `.send` (passed to the judge).
    """
    _send(fd, protocol.CallMade(event="call_made", role=role, position=position))  # type: ignore[arg-type]
    command = protocol.parse_command(commands.read(None)[0])
    if not command.keep:
        return {}
    started = time.perf_counter()
    forward = timing.forward_outputs(out, backward)
    shapes = [list(o.shape) for o in forward]
    if command.elements is not None:
        seed = command.elements
        forward = [sampling.gather(o, seed, i, device) for i, o in enumerate(forward)]
    gathered = time.perf_counter()
    outputs = [to_host(o) for o in forward]
    staged = time.perf_counter()
    spent: dict[str, float] = {}
    sampled = protocol.SampledOutput(
        event="sampled_output", position=position, count=len(outputs), shapes=shapes
    )
    path = _send(fd, sampled, outputs, spent)
    steps = {"stage": staged - gathered, path: time.perf_counter() - staged}
    if command.elements is not None:
        steps["gather"] = gathered - started
    return steps | {f"{path}.{step}": seconds for step, seconds in spent.items()}


def _compile_references(
    request: protocol.WorkerRequest, make: Callable[..., Any]
) -> dict[str, Callable[..., Any] | str]:
    """`torch.compile` of the reference per config that times it, compiled and called once.

    This runs before the audit hook and the submission: Inductor imports the code it generates
    from files it writes under the worker's own writable folders, which the hook counts as the
    submission's (anyone there could have written them), so its compiler processes and
    autotuning would read as the submission's. Once compiled, a call runs the kernels only.
    A config whose compile failed maps to the error, a record-only note beside the timing.
    """
    import torch

    if not request.compile_reference:
        return {}
    reference = _entry(Path(request.task_root), request.reference, "_gauntlet_compiled_reference")
    by_name = {c.name: c for c in request.configs}
    compiled: dict[str, Callable[..., Any] | str] = {}
    for name in request.compile_reference:
        spec = request.timing[name]
        function: Callable[..., Any] = torch.compile(reference, dynamic=False)
        try:
            # The inputs live only for the call: the next config's are drawn without them.
            inputs = _make_inputs(request, make, by_name[name], spec.inputs)
            timing.warm_up(function, inputs, request.wrt, spec.plan.call_seeds[0])
            compiled[name] = function
        except Exception as err:  # noqa: BLE001 - a record-only figure; the judgment goes on
            compiled[name] = f"torch.compile of the reference failed: {err}"[:500]
        finally:
            inputs = {}
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
    """The exception being handled, within `limit_chars`.

    The frames say where the submission failed, so a long message is what gets cut (a message
    of thousands of paths once pushed the submission's own frame out of a tail-cut text).
    """
    text = traceback.format_exc()
    if len(text) <= limit_chars:
        return text
    kind, value, tb = sys.exc_info()
    frames = "Traceback (most recent call last):\n" + "".join(traceback.format_tb(tb))
    if len(frames) > limit_chars // 2:
        frames = "...\n" + frames[-(limit_chars // 2) :]
    message = "".join(traceback.format_exception_only(kind, value))
    room = limit_chars - len(frames)
    if len(message) > room:
        message = message[: room - 20] + "\n[... message cut]\n"
    return frames + message


def _import_trusted(device: str, ahead: bool = False) -> None:
    """Import what every role relies on, before any request (and so any submission) arrives.

    Done first, so that a worker started ahead of its judgment (a spare, `spares.py`) has paid
    for its imports while it waits. The GPU is not touched: importing does not initialise CUDA.
    `ahead` (a candidate spare, or a cold candidate whose judgment runs no reference worker):
    also enter the watch once, which imports TorchDynamo and starts the profiler (seconds that
    a judgment would otherwise wait for in its first call, holding the GPU). The reference
    worker never needs it, and a cold candidate beside a reference worker pays it once started,
    just before the submission loads (`run_candidate`), while the judge still reads the
    reference's results.
    """
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    torch.manual_seed(0)
    if importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401 - the trusted import comes before the submission's
    if device == "cuda":
        import torch.profiler  # noqa: F401 - trusted before the submission, like timing

        _import_cpp_extension()
        from gauntlet.judge import cuda_build  # noqa: F401
    # The watch's pieces, trusted before the submission like the rest.
    import torch.autograd.profiler  # noqa: F401
    import torch.utils._python_dispatch  # noqa: F401

    if ahead:
        with _Watch(frozenset()):
            torch.zeros(1).add_(1)


def _import_cpp_extension() -> None:
    """Import what serves a CUDA submission's prebuilt units (`_load_prebuilt`), CUDA untouched.

    Imported after the request, it was 0.32-0.47 s of a warm judgment's wait for `ready` on an
    H200. Its import asks `torch.cuda.is_available()` only to log a warning where no CUDA
    runtime is found; asking initialises the CUDA driver, after which no worker forked from a
    zygote (`preload`) could use CUDA. So the question is answered yes while it imports.
    """
    import torch

    with mock.patch.object(torch.cuda, "is_available", return_value=True):
        import torch.utils.cpp_extension  # noqa: F401


def preload(device: str) -> None:
    """A zygote's imports (`gauntlet.zygote`, `workers.worker_zygote`).

    `_import_trusted`'s, and TorchDynamo, which the watch's first entry imports (1.75 s of
    CPU), so that no worker forked from it pays for either. Nothing here starts a thread or
    touches the GPU.
    """
    _import_trusted(device)
    import torch._dynamo  # noqa: F401


#: The stack of the thread that does the worker's work, where the main thread's would be
#: unbounded (`ulimit -s unlimited`): TorchDynamo, Inductor's sympy and Triton's compiler recurse
#: deeply. Otherwise the main thread's own limit, at least 8 MiB.
UNBOUNDED_STACK_BYTES = 64 << 20


def _stack_bytes() -> int:
    """The stack the main thread would have had (`RLIMIT_STACK`), for the thread that works."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    if soft == resource.RLIM_INFINITY:
        return UNBOUNDED_STACK_BYTES
    return max(int(soft), 8 << 20)


def main(argv: Sequence[str] | None = None) -> int:
    """Worker entry point: `REQUEST_FD RESULT_FD DEVICE [idle] [ahead]`; off the main thread.

    Only the main thread can install a signal handler (`signal.signal` raises `ValueError` in
    any other thread, `_signal` imported afresh as well: the check is in C, and installing one
    raises no audit event to ban), and a handler is handed the main thread's running frame,
    whose callers lead to the worker's watch, counters and channel. So everything from the
    trusted imports on (the submission, the watch, CUDA, Triton, the timing loop) runs in one
    thread started here, with the stack the main thread would have had, and the main thread
    only waits for it, holding nothing worth reaching: its frame holds these arguments and the
    thread, whose target's closure holds the exit status (the request, the trusted identities
    and the watch live in the working thread's frames only). Everything the worker does
    happens in that one thread, so per-thread state (the current CUDA device and stream, the
    dispatch-mode stack, the profiler's record-function callbacks, TorchDynamo's frame hook) is
    as it was on the main thread.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    # Where a worker the judge gave up on hung: its stacks on stderr (`WorkerHandle.dump_stacks`).
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    status = [1]
    # A spare imports at the lowest priority; this thread, never lowered, lifts it when asked.
    spare = priority.SpareLowering() if "idle" in args[3:] else None

    def work() -> None:
        try:
            status[0] = _serve(args, spare)
        except SystemExit as stop:  # as the interpreter would exit with it
            if stop.code is None or isinstance(stop.code, int):
                status[0] = stop.code or 0
            else:
                sys.stderr.write(f"{stop.code}\n")
                status[0] = 1
        except BaseException:  # noqa: BLE001 - as the interpreter would end on it
            traceback.print_exc()
            status[0] = 1

    previous = threading.stack_size(_stack_bytes())
    try:
        worker = threading.Thread(target=work, name="gauntlet-worker")
        worker.start()
    finally:
        threading.stack_size(previous)
    if spare is not None:
        spare.lift_when_due(int(args[0]), worker)
    worker.join()
    return status[0]


def _serve(args: list[str], spare: priority.SpareLowering | None = None) -> int:
    """Import, read the request, run its role: the worker's whole work, in its own thread.

    `spare` (a worker started ahead of its judgment): lowered while it imports, lifted back
    entirely before it reads its request, and then says so (`protocol.Imported`), which the
    judge's pool looks for.
    """
    request_fd, result_fd, device = int(args[0]), int(args[1]), args[2]
    ahead = "ahead" in args[3:]
    # Nothing the submission starts may inherit either end of the judge's channel.
    os.set_inheritable(request_fd, False)
    os.set_inheritable(result_fd, False)
    importing = time.monotonic()
    if spare is not None:
        spare.lower()
    _import_trusted(device, ahead)
    if spare is not None:
        if problem := spare.imported():
            raise SystemExit(f"worker: its priority could not be restored: {problem}")
        lowered = spare.state
        _send(
            result_fd,
            protocol.Imported(
                event="imported",
                lowered_autogroup=lowered is not None and lowered.autogroup_nice is not None,
                lowered_idle=lowered is not None and lowered.idle,
                import_s=time.monotonic() - importing,
            ),
        )
    commands = FrameReader(request_fd)
    header = commands.read(None)[0]
    # From here to `ready` the judgment waits: its steps are timed for its phases (CUDA is not
    # up yet, so the laps sync nothing).
    laps = timing.Laps()
    request = protocol.parse_request(header)
    laps.lap("request")
    if request.role == "reference":
        return _serve_references(request, device, result_fd, commands)
    if request.device != device:
        raise SystemExit(f"worker: started for {device}, asked to run on {request.device}")
    cap_bytes = 0
    if request.memory_limit_bytes:
        # Set here rather than at the process's start, so one spare serves any task's limit.
        # Memory held in files, outside the cap, is bounded from it just before the submission
        # loads (`_bound_memory_files`).
        cap_bytes = _cap_memory(request.memory_cap, request.memory_limit_bytes)
    laps.lap("memory_cap")
    _load_prebuilt(request)
    laps.lap("prebuilt")
    trusted = _Trusted()
    laps.lap("trusted")
    try:
        # Imports done and the GPU untouched: the judge starts the role once it holds the GPU
        # (and has moved this process into its memory cgroup, sized from the cap).
        _send(
            result_fd,
            protocol.Ready(event="ready", memory_cap_bytes=cap_bytes, phases=laps.totals),
        )
        command = protocol.parse_command(commands.read(None)[0])
        if command.command != "start":
            return 0
        run_candidate(request, result_fd, trusted, commands)
    except BaseException:  # noqa: BLE001 - the worker's one catch-all: report, then exit
        _report_failure(result_fd)
        return 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def _serve_references(
    request: protocol.WorkerRequest, device: str, fd: int, commands: FrameReader
) -> int:
    """Serve reference requests one after another, each from the state the first one found.

    A `Judge` keeps this worker across judgments (it only ever runs trusted task code); a
    judgment without one lets it go after its results. After each judgment's `stop` the worker
    resets the process (`resident.ProcessState`) and answers `Idle`; the next frame is the next
    judgment's request. A process that served references never runs a candidate.
    """
    from gauntlet.judge import resident

    clean = resident.ProcessState()
    while True:
        if request.role != "reference" or request.device != device:
            raise SystemExit(
                f"worker: a reference worker for {device} was asked for a {request.role} "
                f"worker on {request.device}"
            )
        try:
            with resident.memory_limited(request.memory_limit_bytes, _mapped_bytes()):
                laps = timing.Laps()
                _load_prebuilt(request)
                laps.lap("prebuilt")
                # The GPU untouched so far in a new worker: it starts once the judge holds it.
                _send(fd, protocol.Ready(event="ready", phases=laps.totals))
                command = protocol.parse_command(commands.read(None)[0])
                if command.command == "start":
                    if not run_reference(request, fd, commands):
                        return 0
                elif command.command != "stop":
                    raise ValueError(f"a reference worker was told to '{command.command}'")
        except ChannelClosed:
            return 0
        except BaseException:  # noqa: BLE001 - the worker's one catch-all: report, then exit
            _report_failure(fd)
            return 3
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        _send(fd, clean.restore(Path(request.task_root)))
        try:
            request = protocol.parse_request(commands.read(None)[0])
        except ChannelClosed:
            return 0


def _load_prebuilt(request: protocol.WorkerRequest) -> None:
    """Serve the CUDA build's units to `load_inline` (before any task or submission code)."""
    if request.language == "cuda" and request.prebuilt is not None:
        from gauntlet.judge import cuda_build

        cuda_build.prepare_run(Path(request.prebuilt))


def _report_failure(fd: int) -> None:
    """The exception being handled, to the judge, if the channel still takes it."""
    try:
        _send(fd, protocol.WorkerFailed(event="worker_error", traceback=_short_traceback()))
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
