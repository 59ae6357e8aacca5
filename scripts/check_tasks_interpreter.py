"""Check GPU-suite tasks on this CPU machine, at tiny sizes: Triton's through its interpreter.

The GPU tasks (`devices = ["cuda"]`) have shapes that fill a GPU and would take hours in the
interpreter. This script loads each task as shipped (so its task.toml is validated), swaps its
configs for the tiny ones listed in TINY below (all visible, one trial each), and runs the task
checks (`gauntlet.taskcheck`) on the `cpu` device. Triton tasks get all of them: the baseline
and the expert pass the real judge against the float64 reference, under every distribution of
the task, with the static guards and the ATen dispatch watch, and the reference is
non-degenerate. CUDA tasks, whose kernels need a GPU, get the reference checks only (output not
constant, not near zero, changed by every input, zero and identity outputs fail, within the
dtype's range); their baselines and experts are judged by the GPU suite run. Nothing is timed:
speed is checked on a GPU. `tests/test_gpu_task_references.py` runs the reference checks of
every task in the `gpu` suite from the same TINY configs, in CI.

Triton 3.9's interpreter computes tl.dot on bfloat16 operands wrongly (it reads their bits as
float16), so tasks whose kernels use tl.dot are checked here in float16 (and float32) only; the
kernels are dtype-generic, and bfloat16 is checked on the GPU.

    .venv/bin/python scripts/check_tasks_interpreter.py                 # every task in TINY
    .venv/bin/python scripts/check_tasks_interpreter.py triton2triton/matmul ...
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gauntlet.errors import TaskFormatError
from gauntlet.suites import select
from gauntlet.task import Config, ConfigsSpec, HiddenSpec, Task, load_task
from gauntlet.taskcheck import CheckResult, check_task, reference_checks

ROOT = Path(__file__).resolve().parents[1] / "tasks"

#: Tiny configs per task id: small enough for the interpreter, odd where the kernels mask.
TINY: dict[str, list[dict[str, object]]] = {
    "triton2triton/matmul": [
        {"M": 40, "N": 72, "K": 48, "dtype": "float16"},
        {"M": 33, "N": 17, "K": 70, "dtype": "float16"},
        {"M": 1300, "N": 3000, "K": 20, "dtype": "float16"},  # the expert's 128 x 256 tiles
    ],
    "triton2triton/log_softmax": [
        {"rows": 5, "cols": 300, "dtype": "float32"},
        {"rows": 3, "cols": 9000, "dtype": "bfloat16"},
        {"rows": 2, "cols": 17, "dtype": "float16"},
        {"rows": 2, "cols": 9000, "dtype": "float32"},
    ],
    "triton2triton/add_layer_norm": [
        {"rows": 6, "cols": 200, "dtype": "float32"},
        {"rows": 3, "cols": 1500, "dtype": "bfloat16"},
        {"rows": 2, "cols": 17000, "dtype": "float16", "eps": 1e-6},
    ],
    "triton2triton/cumsum": [
        {"rows": 2, "length": 5000, "dtype": "float32"},
        {"rows": 3, "length": 77, "dtype": "bfloat16"},
        {"rows": 1, "length": 20000, "dtype": "float32"},
        {"rows": 512, "length": 4100, "dtype": "float32"},  # one program a row
    ],
    "triton2triton/moe_combine": [
        {"tokens": 7, "topk": 2, "dim": 100, "dtype": "float32"},
        {"tokens": 5, "topk": 3, "dim": 1500, "dtype": "bfloat16"},
    ],
    "triton2triton/conv2d": [
        {
            "batch": 2,
            "height": 5,
            "width": 6,
            "cin": 8,
            "cout": 16,
            "kernel": 3,
            "dtype": "float16",
        },
        {
            "batch": 1,
            "height": 4,
            "width": 3,
            "cin": 70,
            "cout": 130,
            "kernel": 1,
            "dtype": "float16",
        },
        {"batch": 1, "height": 6, "width": 5, "cin": 3, "cout": 5, "kernel": 5, "dtype": "float16"},
    ],
    "triton2triton/attention": [
        {"batch": 1, "heads": 2, "seq": 40, "head_dim": 32, "causal": True, "dtype": "float16"},
        {"batch": 2, "heads": 1, "seq": 19, "head_dim": 64, "causal": False, "dtype": "float16"},
        {"batch": 1, "heads": 1, "seq": 300, "head_dim": 96, "causal": True, "dtype": "float16"},
    ],
    "triton2triton/swiglu": [
        {"rows": 5, "ffn_dim": 300, "dtype": "float32"},
        {"rows": 3, "ffn_dim": 2100, "dtype": "bfloat16"},
    ],
    "triton2triton/layer_norm_backward": [
        {"rows": 6, "cols": 200, "dtype": "float32"},
        {"rows": 9, "cols": 1500, "dtype": "bfloat16"},
        {"rows": 300, "cols": 40, "dtype": "float16"},
        {"rows": 5, "cols": 9000, "dtype": "float32"},
    ],
    "triton2triton/rope": [
        {"batch": 2, "seq": 5, "q_heads": 4, "kv_heads": 2, "head_dim": 64, "dtype": "float32"},
        {"batch": 1, "seq": 3, "q_heads": 3, "kv_heads": 1, "head_dim": 128, "dtype": "bfloat16"},
    ],
    "torch2triton/moe_combine": [
        {"tokens": 7, "topk": 2, "dim": 100, "dtype": "float32"},
        {"tokens": 5, "topk": 3, "dim": 1500, "dtype": "bfloat16"},
    ],
    "torch2triton/rope": [
        {"batch": 2, "seq": 5, "q_heads": 4, "kv_heads": 2, "head_dim": 64, "dtype": "float32"},
        {"batch": 1, "seq": 3, "q_heads": 3, "kv_heads": 1, "head_dim": 128, "dtype": "bfloat16"},
    ],
    "torch2triton/swiglu_backward": [
        {"rows": 5, "ffn_dim": 300, "dtype": "float32"},
        {"rows": 3, "ffn_dim": 2100, "dtype": "bfloat16"},
    ],
    "torch2triton/log_softmax_backward": [
        {"rows": 5, "cols": 300, "dtype": "float32"},
        {"rows": 3, "cols": 9000, "dtype": "bfloat16"},
        {"rows": 2, "cols": 17, "dtype": "float16"},
        {"rows": 2, "cols": 9000, "dtype": "float32"},
    ],
    "torch2triton/bias_gelu_backward": [
        {"rows": 70, "cols": 300, "dtype": "float32"},
        {"rows": 3, "cols": 2100, "dtype": "bfloat16"},
    ],
    "torch2triton/cross_entropy_backward": [
        {"rows": 5, "vocab": 300, "dtype": "float32"},
        {"rows": 3, "vocab": 9000, "dtype": "bfloat16"},
        {"rows": 2, "vocab": 9000, "dtype": "float32"},
        {"rows": 4, "vocab": 17, "dtype": "float16"},
    ],
    "torch2triton/group_norm_silu": [
        {"batch": 2, "channels": 8, "height": 5, "width": 7, "groups": 4, "dtype": "float32"},
        {"batch": 1, "channels": 6, "height": 40, "width": 50, "groups": 2, "dtype": "bfloat16"},
        {"batch": 1, "channels": 4, "height": 1, "width": 1, "groups": 1, "dtype": "float16"},
    ],
    "torch2triton/causal_conv1d": [
        {"batch": 2, "dim": 3, "seqlen": 70, "width": 4, "dtype": "float32"},
        {"batch": 1, "dim": 2, "seqlen": 1500, "width": 3, "dtype": "bfloat16"},
        {"batch": 1, "dim": 2, "seqlen": 1, "width": 2, "dtype": "float16"},
    ],
    "torch2triton/causal_conv1d_backward": [
        {"batch": 2, "dim": 3, "seqlen": 70, "width": 4, "dtype": "float32"},
        {"batch": 2, "dim": 2, "seqlen": 2100, "width": 3, "dtype": "bfloat16"},
        {"batch": 1, "dim": 2, "seqlen": 2, "width": 4, "dtype": "float32"},
    ],
    "torch2triton/linear_gelu": [
        {"M": 40, "N": 72, "K": 48, "dtype": "float16"},
        {"M": 33, "N": 17, "K": 70, "dtype": "float16"},
    ],
    "torch2triton/linear_backward": [
        {"M": 40, "N": 72, "K": 48, "dtype": "float16"},
        {"M": 33, "N": 17, "K": 70, "dtype": "float16"},
        {"M": 200, "N": 40, "K": 24, "dtype": "float16"},
    ],
    "torch2triton/gqa_attention": [
        {
            "batch": 2,
            "kv_heads": 2,
            "group": 3,
            "seq": 40,
            "head_dim": 32,
            "causal": True,
            "dtype": "float16",
        },
        {
            "batch": 1,
            "kv_heads": 1,
            "group": 2,
            "seq": 150,
            "head_dim": 96,
            "causal": False,
            "dtype": "float16",
        },
    ],
    "torch2triton/mlp_block": [
        {"tokens": 20, "model_dim": 48, "ffn": 80, "dtype": "float16"},
        {"tokens": 7, "model_dim": 33, "ffn": 50, "dtype": "float16"},
    ],
    "torch2triton/attention_backward": [
        {"batch": 1, "heads": 2, "seq": 40, "head_dim": 32, "causal": True, "dtype": "float16"},
        {"batch": 2, "heads": 1, "seq": 19, "head_dim": 64, "causal": False, "dtype": "float16"},
        {"batch": 1, "heads": 1, "seq": 300, "head_dim": 96, "causal": True, "dtype": "float16"},
    ],
    "torch2triton/attention_block": [
        {"batch": 2, "seq": 20, "heads": 2, "head_dim": 32, "dtype": "float16"},
        {"batch": 1, "seq": 140, "heads": 3, "head_dim": 96, "dtype": "float16"},
    ],
    "cuda2cuda/matmul": [
        {"M": 40, "N": 72, "K": 48, "dtype": "float16"},
        {"M": 33, "N": 17, "K": 70, "dtype": "bfloat16"},
    ],
    "cuda2cuda/log_softmax": [
        {"rows": 5, "cols": 300, "dtype": "float32"},
        {"rows": 3, "cols": 9000, "dtype": "bfloat16"},
        {"rows": 2, "cols": 17, "dtype": "float16"},
    ],
    "cuda2cuda/cumsum": [
        {"rows": 2, "length": 5000, "dtype": "float32"},
        {"rows": 3, "length": 77, "dtype": "bfloat16"},
    ],
    "cuda2cuda/swiglu": [
        {"rows": 5, "ffn_dim": 300, "dtype": "float32"},
        {"rows": 3, "ffn_dim": 2100, "dtype": "bfloat16"},
    ],
    "cuda2cuda/rmsnorm": [
        {"rows": 6, "cols": 200, "dtype": "float32"},
        {"rows": 9, "cols": 1500, "dtype": "bfloat16"},
        {"rows": 3, "cols": 77, "dtype": "float16"},
    ],
    "cuda2cuda/layer_norm": [
        {"rows": 6, "cols": 200, "dtype": "float32"},
        {"rows": 9, "cols": 1500, "dtype": "bfloat16"},
        {"rows": 3, "cols": 77, "dtype": "float16"},
    ],
    "cuda2cuda/transpose": [
        {"batch": 2, "rows": 33, "cols": 70, "dtype": "float32"},
        {"batch": 1, "rows": 5, "cols": 1000, "dtype": "float16"},
        {"batch": 3, "rows": 17, "cols": 9, "dtype": "bfloat16"},
    ],
    "cuda2cuda/col_sum": [
        {"rows": 37, "cols": 129, "dtype": "float32"},
        {"rows": 5, "cols": 1000, "dtype": "bfloat16"},
    ],
    "cuda2cuda/gemv": [
        {"rows": 33, "cols": 70, "dtype": "float32"},
        {"rows": 5, "cols": 1000, "dtype": "float16"},
        {"rows": 9, "cols": 129, "dtype": "bfloat16"},
    ],
    "cuda2cuda/embedding": [
        {"vocab": 50, "dim": 33, "tokens": 17, "dtype": "float32"},
        {"vocab": 20, "dim": 128, "tokens": 5, "dtype": "bfloat16"},
        {"vocab": 7, "dim": 3, "tokens": 40, "dtype": "float16"},
    ],
}


def tiny_configs(task_id: str) -> list[dict[str, object]]:
    """TINY's configs for a task; a torch2cuda task shares those of its PyTorch twin (the same
    reference, inputs and configs in torch2triton, or in triton2triton)."""
    if task_id in TINY:
        return TINY[task_id]
    track, name = task_id.split("/", 1)
    if track == "torch2cuda":
        for twin in (f"torch2triton/{name}", f"triton2triton/{name}"):
            if twin in TINY:
                return TINY[twin]
    raise KeyError(f"{task_id}: no tiny configs in scripts/check_tasks_interpreter.py TINY")


def checks(task: Task, tiny: list[dict[str, object]]) -> list[CheckResult]:
    """Every task check on the CPU for a Triton task; the reference checks for a CUDA task."""
    small = tiny_task(task, tiny)
    if task.spec.submission.language == "cuda":
        return reference_checks(small)
    return check_task(small, device="cpu")


def tiny_task(task: Task, tiny: list[dict[str, object]]) -> Task:
    """The task with its configs replaced by tiny visible ones, one trial each."""
    visible = [Config(name=f"T{i + 1}", params=dict(p)) for i, p in enumerate(tiny)]
    configs = ConfigsSpec(
        visible=visible,
        hidden=HiddenSpec(fixed=[Config(name="H-tiny", params=dict(tiny[0]))], count=0),
    )
    spec = task.spec.model_copy(update={"configs": configs, "trials": 1, "devices": ["cpu"]})
    return Task(spec=spec, root=task.root)


def main(argv: list[str]) -> int:
    """Check the named tasks (default: every task of the `gpu` suite); exit 1 if any fails."""
    ids = argv or [task.task_id for task in select("gpu", root=ROOT)]
    failed = 0
    for task_id in ids:
        try:
            task = load_task(ROOT / task_id, expected_id=task_id)
            tiny = tiny_configs(task_id)
        except (TaskFormatError, KeyError) as err:
            failed += 1
            print(f"FAIL {task_id:40s} {'task.toml loads, tiny configs':32s} {err}")
            continue
        started = time.monotonic()
        results = checks(task, tiny)
        elapsed = time.monotonic() - started
        for result in results:
            mark = "ok  " if result.ok else "FAIL"
            failed += not result.ok
            print(f"{mark} {task_id:40s} {result.name:32s} {result.detail}")
        print(f"     {task_id:40s} ({elapsed:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
