"""LLM verifiers: a model screens a candidate kernel before the judge spends a call on it.

Three verifiers, one table (`VERIFIERS`): `compile` (will it build), `memory` (out-of-bounds or
unwritten memory, races) and `numerics` (a wrong formula, precision loss, edge sizes). Each is
a prompt and a parser over the same chat client as the agents (`agents.llm.ChatClient`); the
model answers `VERDICT: PASS` or `VERDICT: FAIL` and one line of reason. An answer that holds no
verdict, or a model call that fails, rejects nothing: a verifier only gates on a clear `FAIL`.

They are off by default: `scripts/measure_verifiers.py` measures each one's precision and
recall against the judge's verdicts, and a search turns on only those whose precision
justifies it (`docs/agents.md`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from gauntlet.agents.llm import ChatClient, ModelAPIError, PriceTable

VerifierName = Literal["compile", "memory", "numerics"]

#: Characters of the task brief a verifier's prompt carries.
BRIEF_CHARS = 6_000
#: Characters of a verifier's reason kept.
REASON_CHARS = 400
#: Seconds one verifier call may take.
VERIFIER_TIMEOUT_S = 120.0

_VERDICT = re.compile(r"VERDICT\s*[:=]\s*\**\s*(PASS|FAIL)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Verifier:
    """One verifier: what it judges, as its prompt says."""

    name: VerifierName
    focus: str
    """What the model checks, and only that."""


VERIFIERS: tuple[Verifier, ...] = (
    Verifier(
        "compile",
        "whether the files will build and load: syntax errors, undefined names, wrong use of the "
        "language's API (Triton, CUDA, PyTorch extensions, or the accelerator's instruction set "
        "and assembler syntax), type errors, a missing entry function",
    ),
    Verifier(
        "memory",
        "memory safety: reads or writes outside the tensors or memory regions given, missing "
        "masks or bounds checks for sizes that are not a multiple of the block, memory read "
        "before it is written, outputs not fully written, races between threads or units",
    ),
    Verifier(
        "numerics",
        "numerical correctness against the task's reference: a wrong formula, reduction or "
        "indexing, accumulation in too low a precision, overflow or underflow, mishandled edge "
        "sizes or input distributions, results that would only match the visible configs",
    ),
)
VERIFIER_NAMES: tuple[VerifierName, ...] = tuple(v.name for v in VERIFIERS)

SYSTEM_PROMPT = """\
You review a kernel before it is run. Judge only {focus}. Other problems are not yours to judge.
Answer with the first line exactly `VERDICT: PASS` (no such problem) or `VERDICT: FAIL` (a
problem that would make the judge reject or fail it), then one line saying why.
"""


class VerifierResult(BaseModel):
    """What one verifier said about one candidate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: VerifierName
    passed: bool | None
    """False: it rejects the candidate; None: no verdict could be read (nothing rejected)."""
    reason: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


def verifier(name: str) -> Verifier:
    """The verifier called `name`.

    Raises:
        KeyError: No verifier has that name.
    """
    for entry in VERIFIERS:
        if entry.name == name:
            return entry
    raise KeyError(name)


def prompt(entry: Verifier, brief: str, files: Mapping[str, str]) -> list[dict[str, str]]:
    """The chat messages asking `entry` about a candidate's `files` for the task in `brief`."""
    shown = brief if len(brief) <= BRIEF_CHARS else brief[:BRIEF_CHARS] + "\n[... brief cut]"
    parts = [f"The task:\n\n{shown}\n\nThe candidate's files:"]
    for name, text in files.items():
        parts.append(f"\nFile: {name}\n```\n{text}\n```")
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(focus=entry.focus)},
        {"role": "user", "content": "\n".join(parts)},
    ]


def parse_answer(text: str | None) -> tuple[bool | None, str]:
    """The verdict in a verifier's answer (None when it holds none) and its reason."""
    if not text:
        return None, "the model answered nothing"
    match = _VERDICT.search(text)
    if match is None:
        return None, f"no VERDICT line in the answer: {_cut(text.strip())}"
    reason = text[match.end() :].strip().lstrip("*").strip()
    return match.group(1).upper() == "PASS", _cut(reason)


def verify(
    client: ChatClient,
    names: Sequence[VerifierName],
    brief: str,
    files: Mapping[str, str],
    *,
    prices: PriceTable,
    timeout_s: float = VERIFIER_TIMEOUT_S,
) -> list[VerifierResult]:
    """Ask each verifier of `names` in turn, stopping at the first that rejects the candidate.

    A failed model call is a result with `passed=None` and the error as its reason.
    """
    results: list[VerifierResult] = []
    for name in names:
        entry = verifier(name)
        try:
            completion = client.complete(prompt(entry, brief, files), [], timeout_s=timeout_s)
        except ModelAPIError as err:
            results.append(VerifierResult(name=name, passed=None, reason=f"model error: {err}"))
            continue
        passed, reason = parse_answer(completion.content)
        cost = prices.cost_usd(client.model, completion.tokens_in, completion.tokens_out)
        results.append(
            VerifierResult(
                name=name,
                passed=passed,
                reason=reason,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                cost_usd=round(cost, 6),
            )
        )
        if passed is False:
            break
    return results


def rejected_by(results: Sequence[VerifierResult]) -> VerifierResult | None:
    """The verifier result that rejects the candidate, if any."""
    return next((r for r in results if r.passed is False), None)


def _cut(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "..."
