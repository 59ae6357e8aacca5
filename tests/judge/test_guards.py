from __future__ import annotations

from pathlib import Path

import pytest

from gauntlet import suites
from gauntlet.judge.backend import Submission
from gauntlet.judge.guards import check_python
from gauntlet.judge.python_backend import PythonBackend
from gauntlet.task import Task, load_task
from tests.support.fixtures import TASKS

OK = """
import torch
import triton
import triton.language as tl
from functools import lru_cache


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], tl.float32))


def entry(x):
    ctx_value = x.shape[0]
    k[(1,)](x, BLOCK=16)
    return x
"""


def test_a_plain_triton_submission_passes() -> None:
    assert check_python(OK, "kernel.py", "triton") == []


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("import os", "importing 'os' is not allowed"),
        ("import subprocess", "importing 'subprocess' is not allowed"),
        ("from ctypes import CDLL", "importing 'ctypes' is not allowed"),
        ("import gauntlet", "forbidden"),
        ("from reference import reference", "forbidden"),
        ("from . import sibling", "relative imports"),
        ("try:\n    pass\nexcept Exception:\n    pass", "try/except"),
        ("eval('1')", "'eval' is not allowed"),
        ("getattr(torch, 'add')", "'getattr' is not allowed"),
        ("open('x')", "'open' is not allowed"),
        ("torch.cuda.synchronize = None", "patches a module"),
        ("tl.sum = None", "patches a module"),
        ("s = torch.cuda.Stream()", "torch.cuda.Stream"),
        ("torch.backends.cuda.matmul.allow_tf32 = True", "torch.backends"),
        ("f = torch.compile(lambda x: x)", "torch.compile"),
        ("x = ().__class__.__bases__", "attribute '__class__'"),
        ("def f():\n    global state", "global/nonlocal"),
    ],
)
def test_forbidden_constructs(snippet: str, message: str) -> None:
    findings = check_python(OK + "\n" + snippet + "\n", "kernel.py", "triton", ["reference"])
    assert findings, snippet
    assert any(message in f.message or message in str(f) for f in findings), findings
    assert all(f.line > 0 for f in findings)


def test_allowed_calls_lift_a_torch_rule() -> None:
    code = OK + "\ns = torch.cuda.Stream()\n"
    assert check_python(code, "kernel.py", "triton", allowed_calls=["torch.cuda.Stream"]) == []


CUDA_OK = '''
import torch
from torch.utils.cpp_extension import load_inline

SOURCE = """
__global__ void scale_add(const float* x, const float* y, float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
module = load_inline(name="scale_add", cpp_sources="", cuda_sources=SOURCE, functions=[],
                     extra_cuda_cflags=["-O3"])
'''


def test_a_plain_cuda_submission_passes() -> None:
    assert check_python(CUDA_OK, "kernel.py", "cuda") == []


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ('X = "FILE* f = fopen(\\"/etc/passwd\\", \\"r\\");"', "file or process access"),
        ('X = "#include <dlfcn.h>"', "an include for files"),
        ('X = "__attribute__((constructor)) void f() {}"', "runs at load time"),
        ('X = "cublasSgemm(handle, ...);"', "vendor library"),
        ('X = "cudaStreamCreate(&s);"', "own streams"),
        ('X = "PyRun_SimpleString(code);"', "Python interpreter"),
        ('m = load_inline(name="a", cpp_sources="", extra_ldflags=["-lcublas"])', "extra_ldflags"),
        ("import cupy\nc = cupy.matmul", "'cupy.matmul' is not allowed"),
        ("import cupy\ns = cupy.cuda.Stream()", "'cupy.cuda.Stream' is not allowed"),
    ],
)
def test_cuda_rules(snippet: str, message: str) -> None:
    findings = check_python(CUDA_OK + "\n" + snippet + "\n", "kernel.py", "cuda")
    assert any(message in str(f) for f in findings), findings


def test_cupy_for_nvrtc_kernels_is_allowed() -> None:
    code = (
        "import cupy\nimport torch\n"
        'k = cupy.RawKernel("extern \\"C\\" __global__ void k() {}", "k")\n'
        "s = cupy.cuda.ExternalStream(0)\n"
        "a = cupy.from_dlpack(torch.empty(1))\n"
    )
    assert check_python(code, "kernel.py", "cuda") == []


# --- the text Python runs -------------------------------------------------------------------

HEAD = "import torch\nimport triton\nimport triton.language as tl\n"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("# -*- coding: latin-1 -*-\n" + HEAD, "decode the file as 'iso8859-1'"),
        ("#!/usr/bin/env python\n# coding=cp1252\n" + HEAD, "as 'cp1252'"),
        ("# coding: unicode_escape\n" + HEAD + "x = 1  # \\nimport os\n", "unicode-escape"),
        ("# coding: utf-7\n" + HEAD, "as 'utf-7'"),
        ("# coding: utf-8-sig\n" + HEAD, "as 'utf-8-sig'"),
        ("# coding: no-such-codec\n" + HEAD, "with an unknown codec"),
        ("\ufeff# coding: latin-1\n" + HEAD, "after a UTF-8 byte-order mark"),
        (HEAD + "x = '\x00'\n", "U+0000 (NUL)"),
        (HEAD + "x = 1\x0cy = 2\n", "U+000C (form feed)"),
        (HEAD + "\x0c\nx = 1\n", "U+000C (form feed)"),
        (HEAD + "x = 1\x0b\n", "U+000B (vertical tab)"),
        (HEAD + "x = torch.ops  # harmless\rx = 1\n", "carriage return without a newline"),
        (HEAD + "# a comment\u2028x = 2\n", "U+2028 (line separator)"),
        (HEAD + "# a comment\u2029x = 2\n", "U+2029 (paragraph separator)"),
        (HEAD + "# a comment\x1cx = 2\n", "U+001C"),
        (HEAD + "# a comment\x85x = 2\n", "U+0085"),
        (HEAD + "s = 'abc\u202e'  # reads backwards\n", "U+202E (right-to-left override)"),
        (HEAD + "s = 'a\u200bb'\n", "U+200B (zero width space)"),
    ],
)
def test_text_python_reads_differently_is_rejected(source: str, message: str) -> None:
    findings = check_python(source, "kernel.py", "triton")
    assert any(message in str(f) for f in findings), findings


def test_the_unicode_escape_cookie_hides_code_from_a_text_parse() -> None:
    # What the finding guards against: compiled from its bytes (as the import does), the
    # comment's "\n" is a newline and the import after it runs.
    import ast

    source = "# coding: unicode_escape\nx = 1  # \\nimport os\n"
    assert len(ast.parse(source).body) == 1
    assert len(ast.parse(source.encode()).body) == 2


@pytest.mark.parametrize(
    "source",
    [
        "# -*- coding: utf-8 -*-\n" + HEAD,
        "# coding: utf8\n" + HEAD,
        "#!/usr/bin/env python3\n# vim: set fileencoding=UTF_8 :\n" + HEAD,
        "\ufeff" + HEAD,
        HEAD.replace("\n", "\r\n"),
        HEAD + "# a comment with unicode: \u00d7 \u2264 \u2192 \u03b1\ns = 'caf\u00e9'\n",
        HEAD + "x = 1  # this line mentions no coding cookie\n",
    ],
)
def test_plain_utf8_text_passes(source: str) -> None:
    assert check_python(source, "kernel.py", "triton") == []


# --- string-based access, aliases, reflection, internals ------------------------------------


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        # string-based attribute access and evaluation
        ("import operator\nf = operator.attrgetter('cuda.synchronize')", "operator.attrgetter"),
        ("from operator import methodcaller", "operator.methodcaller"),
        ("import typing\nh = typing.get_type_hints(OK_F)", "typing.get_type_hints"),
        ("from typing import get_type_hints", "typing.get_type_hints"),
        ("import typing\nr = typing.ForwardRef('x')", "typing.ForwardRef"),
        (
            "import functools\nf = functools.reduce(getattr, ['cuda', 'synchronize'], torch)",
            "'getattr' is not allowed",
        ),
        ("s = '{0.__globals__}'.format(OK_F)", "format field '{0.__globals__}'"),
        ("s = '{f._C}'", "format field '{f._C}'"),
        ("s = '{0.cuda.__dict__[x]}'", "format field"),
        ("t = '{0.x}'\ns = t.format(OK_F)", "'t.format(...)' formats a string"),
        ("s = str.format('{0.x}', OK_F)", "'str.format(...)' formats a string"),
        ("s = ('{0.' + '__globals__}').format(OK_F)", "formats a string the guards cannot"),
        # builtins that are reflection
        ("x = type(torch.empty(1))", "'type' is not allowed"),
        ("x = dir(torch)", "'dir' is not allowed"),
        ("x = input()", "'input' is not allowed"),
        ("input = 1\ndel input\nx = input()", "'input' is not allowed"),
        ("def f(g=getattr):\n    return g", "'getattr' is not allowed"),
        ("def f():\n    return [g for g in [getattr]]", "'getattr' is not allowed"),
        ("class C:\n    getattr = 1\n    x = getattr", "'getattr' is not allowed"),
        # patching what the submission did not create, through any alias
        ("T = torch.Tensor\nT.add = None", "assigning to 'T.add' patches"),
        ("C = torch.cuda\nC.synchronize = None", "patches"),
        ("def f(x):\n    type(x).add = None", "patches"),
        ("def f(m):\n    m.elapsed_time = None", "assigning to 'm.elapsed_time' patches"),
        ("torch.Tensor.sum = None", "assigning to 'torch.Tensor.sum' patches"),
        ("torch.cuda.Event.elapsed_time = None", "patches"),
        ("tl.sum = None", "patches"),
        ("del torch.cuda.Event", "patches"),
        ("for torch.cuda.synchronize in [None]:\n    pass", "patches"),
        ("import functools\nfunctools.reduce.x = 1", "patches"),
        ("object.__setattr__(torch.cuda, 'synchronize', None)", "'__setattr__'"),
        ("type.__setattr__(torch.Tensor, 'add', None)", "'__setattr__'"),
        (
            "class A:\n    def m(self):\n        self.elapsed_time = None\nA.m(torch.cuda.Event)",
            "method 'm' sets attributes on its first parameter",
        ),
        (
            "class A:\n    @staticmethod\n    def forward(ctx, x):\n        ctx.elapsed_time = x\n"
            "        return x\nA().forward(OK_F, 1)",
            "method 'forward' sets attributes on its first parameter",
        ),
        (
            "class A:\n    def m(self):\n        self.elapsed_time = None\n    m(OK_F)",
            "used in its class body",
        ),
        (
            "class A:\n    def m(self):\n        self = OK_F\n        self.elapsed_time = None",
            "assigning to 'self.elapsed_time' patches",
        ),
        (
            "class A:\n    def __init__(self):\n        self.t = torch.Tensor\n"
            "    def m(self):\n        self.t.add = None",
            "assigning to 'self.t.add' patches",
        ),
        # modules as values, and modules reached as attributes
        ("def g(m):\n    return m\nc = g(torch)", "the module 'torch' is used as a value"),
        ("t = torch\nt.cuda.synchronize()", "the module 'torch' is used as a value"),
        ("m = torch.sys.modules", "reaches the module 'sys'"),
        ("f = torch.os.system", "reaches the module 'os'"),
        ("import typing\nt = typing.types", "reaches the module 'types'"),
        ("import functools\ni = torch.nn.functional.importlib", "reaches the module 'importlib'"),
        ("c = torch.ctypes", "reaches the module 'ctypes'"),
        ("c = torch.builtins", "reaches the module 'builtins'"),
        ("c = torch.multiprocessing", "torch.multiprocessing"),
        ("c = torch.cuda.threading", "reaches the module 'threading'"),
        ("c = torch.signal", "reaches the module 'signal'"),
        ("def f(x):\n    return x.cpu().numpy() * 2", "reaches the module 'numpy'"),
        ("def f(x):\n    return torch.from_numpy(x)", "torch.from_numpy"),
        ("import numpy", "importing 'numpy' is not allowed"),
        ("import importlib", "importing 'importlib' is not allowed"),
        ("import pickle", "importing 'pickle' is not allowed"),
        ("import marshal", "importing 'marshal' is not allowed"),
        ("import gc", "importing 'gc' is not allowed"),
        ("import inspect", "importing 'inspect' is not allowed"),
        ("import types", "importing 'types' is not allowed"),
        ("import builtins", "importing 'builtins' is not allowed"),
        ("import socket", "importing 'socket' is not allowed"),
        ("import signal", "importing 'signal' is not allowed"),
        ("import multiprocessing", "importing 'multiprocessing' is not allowed"),
        ("import sys", "importing 'sys' is not allowed"),
        # interpreter internals
        ("x = OK_F.__globals__", "'__globals__'"),
        ("x = OK_F.__wrapped__", "'__wrapped__'"),
        ("x = len.__self__", "'__self__'"),
        ("x = OK_F.__func__", "'__func__'"),
        ("x = ().__class__.__base__", "'__class__'"),
        ("x = int.__subclasses__()", "'__subclasses__'"),
        ("x = int.__mro__", "'__mro__'"),
        ("x = int.mro()", "attribute 'mro'"),
        ("x = OK_F.__code__.co_consts", "'__code__'"),
        ("def f(c):\n    return c.co_code", "attribute 'co_code'"),
        ("def f(g):\n    return g.gi_frame.f_back", "attribute 'f_back'"),
        ("def f(t):\n    return t.tb_frame.f_globals", "attribute 'f_globals'"),
        ("x = OK_F.__closure__", "'__closure__'"),
        ("x = OK_F.__dict__", "'__dict__'"),
        ("x = OK_F.__builtins__", "'__builtins__'"),
        # private internals of torch and triton
        ("g = torch._C._ExcludeDispatchKeyGuard", "private attribute '_C'"),
        ("from torch import _C", "'torch._C'"),
        ("m = torch.utils._python_dispatch._pop_mode()", "private attribute '_python_dispatch'"),
        ("d = torch._dynamo", "private attribute '_dynamo'"),
        ("def f(x):\n    return x._base", "private attribute '_base'"),
        ("d = triton.runtime.driver", "'triton.runtime'"),
        ("from torch import ops", "'torch.ops'"),
        ("a = torch.ops.aten.add", "'torch.ops'"),
        ("lib = torch.library.Library('aten', 'IMPL')", "'torch.library'"),
        ("m = torch.overrides.TorchFunctionMode", "'torch.overrides'"),
        ("from torch import overrides", "'torch.overrides'"),
        ("from torch import *", "import *"),
        (
            "class M:\n    def __torch_function__(self, f, t, a=(), k=None):\n        pass",
            "'__torch_function__'",
        ),
        (
            "class M:\n    def __torch_dispatch__(self, f, t, a=(), k=None):\n        pass",
            "'__torch_dispatch__'",
        ),
        ("class M:\n    def __exit__(self, *a):\n        return True", "'__exit__'"),
        ("def __getattr__(name):\n    return name", "'__getattr__'"),
        ("p = torch.autograd.profiler.profile()", "profiler"),
        ("p = torch.profiler.profile()", "torch.profiler"),
        ("e = torch.cuda.Event(enable_timing=True)", "torch.cuda.Event"),
        ("torch.cuda.synchronize()", "torch.cuda.synchronize"),
        ("def f():\n    return torch.cuda\nf().synchronize()", "synchronize"),
        ("with torch.autocast('cuda'):\n    pass", "torch.autocast"),
        ("u = torch.utils.checkpoint", "'torch.utils.checkpoint' is not allowed"),
    ],
)
def test_escapes_are_rejected(snippet: str, message: str) -> None:
    code = OK + "\n\ndef OK_F():\n    pass\n\n\n" + snippet + "\n"
    findings = check_python(code, "kernel.py", "triton", ["reference"])
    assert any(message in str(f) for f in findings), findings
    assert all(f.line > 0 for f in findings)


def test_a_finding_names_the_line_the_construct_and_why() -> None:
    [finding] = check_python(HEAD + "\nT = torch.Tensor\nT.add = None\n", "kernel.py", "triton")
    assert str(finding).startswith("line 6, col 0: assigning to 'T.add' patches")
    assert "only 'self.<name> = ...'" in str(finding)


# --- legitimate code the red team saw rejected ----------------------------------------------

TRITON_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def _launch(x):
    out = torch.empty_like(x)
    _add_one[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out
"""

LEGITIMATE = {
    "input as a forward parameter": """
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return _launch(input.contiguous())
""",
    "input as a local name": """
def entry(x):
    input = x.contiguous()
    return _launch(input)


def other(input, *, weight=None):
    return [_launch(t) for t in (input,)][0]


tail = lambda input: _launch(input)
""",
    "module helpers on its own nn.Module": """
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.register_buffer("scale", torch.ones(features))
        self._block = 256

    def forward(self, x):
        count = sum(p.numel() for p in self.parameters())
        names = [name for name, _ in self.named_parameters()]
        modules = list(self.modules())
        assert count and names and modules and self._block
        return _launch(x)
""",
    "glue around its own kernel": """
import torch.nn.functional as F


def entry(x, y):
    padded = F.pad(x, (0, 3))
    padded = torch.nn.functional.pad(padded, (0, 1))
    both = torch.cat([x, y]).contiguous()
    stacked = torch.stack([x, y]).view(-1).reshape(2, -1)
    scale = float(x[0].item())
    a = torch.empty_like(x)
    b = x.new_empty(x.shape)
    c = torch.empty((x.shape[0], 4), device=x.device, dtype=x.dtype)
    out = _launch(both)
    return out, padded, stacked, scale, a, b, c
""",
    "an autograd.Function with ctx": """
class AddOne(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.size = x.numel()
        ctx.save_for_backward(x)
        return _launch(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad


def entry(x):
    return AddOne.apply(x)
""",
    "format strings, operator and functools": """
import functools
import math
import operator


@functools.lru_cache(maxsize=None)
def _block(n):
    return triton.next_power_of_2(n)


def entry(x):
    numel = functools.reduce(operator.mul, x.shape, 1)
    if numel != x.numel():
        raise ValueError("bad shape {} for {x!r:>4}".format(tuple(x.shape), x=numel))
    label = f"{x.shape[0]}x{math.prod(x.shape[1:])}"
    assert label, "{0} {1[0]}".format(numel, x.shape)
    return _launch(x)
""",
    "its own dataclass and dict copies": """
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    block: int = 256


def entry(x):
    plan = Plan()
    options = {"block": plan.block}
    chosen = options.copy()
    assert chosen["block"] == 256
    parts = x.chunk(2)
    return _launch(torch.cat(parts))
""",
}


@pytest.mark.parametrize("name", list(LEGITIMATE))
def test_legitimate_submissions_pass(name: str) -> None:
    code = TRITON_KERNEL + LEGITIMATE[name]
    assert check_python(code, "kernel.py", "triton", ["reference", "inputs"]) == []


# --- every shipped submission passes its own task's guards ----------------------------------


def _python_tasks() -> list[Task]:
    tasks = [suites.load_by_id(task_id) for task_id in suites.task_ids()]
    tasks += [load_task(p.parent) for p in sorted(TASKS.rglob("task.toml"))]
    return [t for t in tasks if t.spec.submission.language in ("triton", "torch", "cuda")]


def _shipped(task: Task) -> dict[str, dict[str, str]]:
    kinds = {"baseline": task.baseline_files(), "expert": task.expert_files() or {}}
    template = task.spec.submission.template
    if template is not None:
        kinds["template"] = {task.spec.submission.files[0]: task.path(template).read_text()}
    return {kind: files for kind, files in kinds.items() if files}


@pytest.mark.parametrize("task", _python_tasks(), ids=lambda t: t.task_id)
def test_shipped_python_submissions_pass_the_guards(task: Task) -> None:
    for kind, files in _shipped(task).items():
        submission = Submission(files=files, source_dir=task.root)
        assert PythonBackend().guard(task, submission) is None, f"{task.task_id} {kind}"


def test_correct_judge_corpus_kernels_pass_the_guards() -> None:
    from tests.support.fixtures import SCALE_ADD

    corpus = Path(__file__).parent / "corpus"
    task = SCALE_ADD()
    for path in sorted(corpus.glob("*.py")):
        text = path.read_text()
        if "# expect: pass" not in text:
            continue
        submission = Submission(files={"kernel.py": text}, source_dir=corpus)
        assert PythonBackend().guard(task, submission) is None, path.name
