"""Level-3 blocks composed from the level-1 and level-2 generators through scratch regions.

A block is a list of stages; each stage is a whole program of another generator (a row
stream, a `Gemm`, attention) over the block's regions. `compose` renames every symbol and
label a stage defines with the stage's prefix, so stages written for separate programs share
one, and joins them in order (each stage ends with its transfers waited for, and none relies
on the registers another leaves).

- **llama_block**: a LLaMA-style decoder block on one sequence of S tokens, H heads of D
  dimensions (model dimension DM = H * D):
  h = rmsnorm(x) * g1; q, k, v = h @ wq, h @ wk, h @ wv; RoPE on q and k (per head, rotate
  half); a = causal attention; x2 = x + a @ wo; h = rmsnorm(x2) * g2;
  y = x2 + (silu(h @ wg) * (h @ wu)) @ wd.
- **t5_block**: a T5-style decoder block (RMSNorm without mean subtraction, unscaled scores,
  no biases): causal self-attention, cross-attention to the encoder output enc (T, DM), and a
  ReLU feed-forward, each pre-normed and added to its input.

The baseline composes the baseline stages, the expert the expert stages.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import rows
from .asm import HEADER, Asm
from .attntasks import Attention
from .attntasks import baseline as attention_baseline
from .attntasks import expert as attention_expert
from .convtasks import relu_tile
from .matmul import Gemm, baseline_gemm, expert_gemm, expert_layout
from .mlptasks import plus, silu_times
from .rowtasks import rmsnorm_kernel, rope_kernel

Stage = tuple[str, Callable[[bool], str]]
"""(prefix, program(expert?)): one stage of a block."""

_DEFINED = re.compile(r"^\.equ (\w+),|^\s*(\w+):", re.MULTILINE)


def compose(title: str, what: str, stages: list[Stage], expert: bool, equs: list[str]) -> str:
    """One program: every stage's program, its symbols and labels prefixed, in order."""
    out = [HEADER.format(what=what), f"; {title}", *equs]
    for prefix, program in stages:
        text = program(expert)
        body = [line for line in text.splitlines()[2:] if line.strip() != "halt"]
        names = {m.group(1) or m.group(2) for m in _DEFINED.finditer("\n".join(body))}
        joined = "\n".join(body)
        if names:
            pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
            joined = pattern.sub(lambda m, p=prefix: f"{p}_{m.group(1)}", joined)
        out += ["", f"; ---- stage {prefix}", "    setvli VLEN", joined]
    return "\n".join([*out, "    halt", ""])


def _row_stage(kernel: Callable[[], rows.RowKernel]) -> Callable[[bool], str]:
    return lambda fast: (rows.expert if fast else rows.baseline)(kernel())


def _gemm_stage(g: Gemm, bases: tuple[str, ...]) -> Callable[[bool], str]:
    def program(fast: bool) -> str:
        a = Asm("", "")
        a(*(f"la a{4 + i}, {base}" for i, base in enumerate(bases)))
        if fast:
            expert_layout(a, g)
            expert_gemm(a, g)
        else:
            baseline_gemm(a, g)
        return a.text()

    return program


def _fli_stage(program: Callable[[bool], str], lines: tuple[str, ...]) -> Callable[[bool], str]:
    """A stage whose epilogue needs fp32 constants set first."""

    def with_constants(fast: bool) -> str:
        text = program(fast).splitlines()
        return "\n".join([*text[:2], *(f"    {line}" for line in lines), *text[2:]])

    return with_constants


def proj(m: str = "S", n: str = "DM", k: str = "DM", **extra: object) -> Gemm:
    """A projection of m rows: (m, k) @ (k, n), all row-major and contiguous."""
    return Gemm(m=m, n=n, k=k, lda=k, ldb=n, ldc=n, **extra)  # type: ignore[arg-type]


def llama_block() -> tuple[str, str]:
    """The LLaMA-style decoder block (see the module docstring)."""
    title = "LLaMA-style decoder block: x (S, DM) -> y (S, DM), DM = H * D"

    att = Attention(
        "causal attention of every head",
        equs=(("M", "S"), ("N", "S"), ("G", "H")),
        ld="DM",
        q_step="D",
        kv_step="D",
        regions=("q", "k", "v", "a", "s"),
        causal=True,
    )
    stages: list[Stage] = [
        ("N1", _row_stage(lambda: rmsnorm_kernel("x", "g1", "hn", "S", "DM"))),
        ("PQ", _gemm_stage(proj(), ("hn", "wq", "q"))),
        ("PK", _gemm_stage(proj(), ("hn", "wk", "k"))),
        ("PV", _gemm_stage(proj(), ("hn", "wv", "v"))),
        ("RQ", _row_stage(lambda: rope_kernel("q", "cos", "sin", "q", "S * H", "D"))),
        ("RK", _row_stage(lambda: rope_kernel("k", "cos", "sin", "k", "S * H", "D"))),
        ("AT", lambda fast: (attention_expert if fast else attention_baseline)(att)),
        ("PO", _gemm_stage(proj(epilogue=plus("x", "x2", "S")), ("a", "wo", "x2"))),
        ("N2", _row_stage(lambda: rmsnorm_kernel("x2", "g2", "hn", "S", "DM"))),
        ("PU", _gemm_stage(proj(n="F"), ("hn", "wu", "u"))),
        (
            "PG",
            _fli_stage(
                _gemm_stage(
                    proj(n="F", epilogue=silu_times("u", "gt", "S")),
                    ("hn", "wg", "gt"),
                ),
                ("fli f1, 1.0", "fli f2, -1.0"),
            ),
        ),
        (
            "PD",
            _gemm_stage(proj(k="F", epilogue=plus("x2", "y", "S")), ("gt", "wd", "y")),
        ),
    ]
    equs = [".equ DM, H * D"]
    return (
        compose(title, "baseline: the baseline stages in order", stages, False, equs),
        compose(title, "expert: the expert stages in order", stages, True, equs),
    )


def t5_block() -> tuple[str, str]:
    """The T5-style decoder block (see the module docstring)."""
    title = "T5-style decoder block: x (S, DM), enc (T, DM) -> y (S, DM), DM = H * D"

    def heads(m: str, n: str, keys: str, values: str, scores: str, causal: bool) -> Attention:
        return Attention(
            "attention of every head",
            equs=(("M", m), ("N", n), ("G", "H")),
            ld="DM",
            q_step="D",
            kv_step="D",
            regions=("q", keys, values, "a", scores),
            causal=causal,
            scaled=False,
        )

    def attention(att: Attention) -> Callable[[bool], str]:
        return lambda fast: (attention_expert if fast else attention_baseline)(att)

    def norm(x: str, g: str) -> Callable[[bool], str]:
        return _row_stage(lambda: rmsnorm_kernel(x, g, "hn", "S", "DM"))

    stages: list[Stage] = [
        ("N1", norm("x", "g1")),
        ("Q1", _gemm_stage(proj(), ("hn", "wq1", "q"))),
        ("K1", _gemm_stage(proj(), ("hn", "wk1", "k"))),
        ("V1", _gemm_stage(proj(), ("hn", "wv1", "v"))),
        ("A1", attention(heads("S", "S", "k", "v", "ss", causal=True))),
        ("O1", _gemm_stage(proj(epilogue=plus("x", "x2", "S")), ("a", "wo1", "x2"))),
        ("N2", norm("x2", "g2")),
        ("Q2", _gemm_stage(proj(), ("hn", "wq2", "q"))),
        ("K2", _gemm_stage(proj(m="T"), ("enc", "wk2", "kc"))),
        ("V2", _gemm_stage(proj(m="T"), ("enc", "wv2", "vc"))),
        ("A2", attention(heads("S", "T", "kc", "vc", "sc", causal=False))),
        ("O2", _gemm_stage(proj(epilogue=plus("x2", "x3", "S")), ("a", "wo2", "x3"))),
        ("N3", norm("x3", "g3")),
        ("FI", _gemm_stage(proj(n="F", epilogue=relu_tile), ("hn", "wi", "hf"))),
        ("FO", _gemm_stage(proj(k="F", epilogue=plus("x3", "y", "S")), ("hf", "wf", "y"))),
    ]
    equs = [".equ DM, H * D"]
    return (
        compose(title, "baseline: the baseline stages in order", stages, False, equs),
        compose(title, "expert: the expert stages in order", stages, True, equs),
    )


GENERATORS: dict[str, Callable[[], tuple[str, str]]] = {
    "llama_block": llama_block,
    "t5_block": t5_block,
}
