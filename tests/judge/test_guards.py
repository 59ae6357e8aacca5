from __future__ import annotations

import pytest

from gauntlet.judge.guards import check_python

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
