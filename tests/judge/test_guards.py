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
