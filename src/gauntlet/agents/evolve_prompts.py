"""The `evolve` agent's prompts (write, mutate, crossover) and the parser of the model's files.

The model gets the task brief as its system prompt and, per proposal, its parents: each one's
files, what the feedback tools said of it (status, per-config times and speedups) and, on the
accelerators, its profile. It answers with every file of the submission in a fenced block,
each named on the line before (`File: kernel.py`) or in the block's info string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gauntlet.agents.evolve_log import Operation

#: Characters of a parent's feedback and profile shown.
FEEDBACK_CHARS = 3_000

SYSTEM_PROMPT = """\
You are an expert kernel engineer improving a kernel by evolutionary search. Each answer is one
new candidate. The judge checks it on the visible configurations and times it against the
baseline; the fastest candidate that is correct wins, and it must stay correct on configurations
you are not shown, so write for the shapes' symbols, not for the numbers you see.

Answer with the complete content of every file of the submission ({files}), each in its own
fenced code block, with the file's name on the line just before the block:

File: {first}
```
...the whole file...
```

The task brief (TASK.md) follows.

"""

#: What the model is asked to do, per operation (the seed is the starting files: no prompt).
INSTRUCTIONS: dict[Operation, str] = {
    "write": (
        "There is no correct kernel yet. Write one that is correct on every configuration, "
        "then as fast as you can make it."
    ),
    "mutate": (
        "Write a faster variant of the parent kernel below. Change one idea (tiling and block "
        "sizes, vectorization, memory access, fusion, fewer passes, the number of warps or "
        "units used) and keep everything else that makes it correct."
    ),
    "crossover": (
        "Combine the two parent kernels below into one faster kernel: keep what makes each of "
        "them fast, and stay correct on every configuration."
    ),
}


@dataclass(frozen=True)
class Parent:
    """A parent as the prompt shows it."""

    candidate_id: int
    files: Mapping[str, str]
    feedback: str
    profile: str = ""


def system_prompt(brief: str, names: Sequence[str]) -> str:
    """The system prompt: the answer's format for the contract's files, then the brief."""
    return SYSTEM_PROMPT.format(files=", ".join(names), first=names[0]) + brief


def proposal_prompt(
    operation: Operation, parents: Sequence[Parent], failures: Sequence[str] = ()
) -> str:
    """The user message asking for one candidate made by `operation` from `parents`.

    `failures`: why recent children of these parents failed, so the model does not repeat them.
    """
    parts = [INSTRUCTIONS[operation]]
    for number, parent in enumerate(parents, start=1):
        label = f"Parent {number} (candidate {parent.candidate_id})"
        parts.append(f"\n## {label}\n")
        for name, text in parent.files.items():
            parts.append(f"File: {name}\n```\n{text}\n```")
        parts.append(f"What the judge said of it:\n{_cut(parent.feedback)}")
        if parent.profile:
            parts.append(f"Its profile:\n{_cut(parent.profile)}")
    if failures:
        parts.append("\n## Recent candidates that failed (do not repeat these mistakes)")
        parts += [f"- {_cut(f, 600)}" for f in failures]
    return "\n".join(parts)


_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def parse_files(text: str | None, names: Sequence[str]) -> dict[str, str] | str:
    """The contract files in the model's answer, or why none can be read.

    A block is a file's when its info string or the line before it names the file. With a
    single-file contract an unnamed block also counts (the longest, when there are several).
    Files of `names` the answer lacks are left out: the caller decides whether a parent's copy
    stands in.
    """
    if not text:
        return "the answer is empty"
    named: dict[str, str] = {}
    unnamed: list[str] = []
    for match in _FENCE.finditer(text):
        body = match.group(2)
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        name = _named(match.group(1), names) or _named(before, names)
        if name is not None:
            named[name] = body
        else:
            unnamed.append(body)
    if not named and len(names) == 1 and unnamed:
        named[names[0]] = max(unnamed, key=len)
    if not named:
        return (
            f"the answer holds no fenced code block for {', '.join(names)} (write each file in "
            "a ``` block with 'File: NAME' on the line before it)"
        )
    return {name: body if body.endswith("\n") else body + "\n" for name, body in named.items()}


def _named(line: str, names: Sequence[str]) -> str | None:
    words = set(re.findall(r"[\w./-]+", line))
    return next((n for n in names if n in words), None)


def _cut(text: str, limit: int = FEEDBACK_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[... cut]"
