"""Precision and recall of the LLM verifiers against the judge's verdicts, on a labeled set.

    python3 scripts/measure_verifiers.py --model gpt-4.1-mini            # OPENAI_API_KEY set
    python3 scripts/measure_verifiers.py --model M --base-url http://host:8000/v1
    python3 scripts/measure_verifiers.py --scripted --out verifiers.md   # no model: plumbing

The labeled set is the project's own:
- the exploit corpus (`tests/exploits/corpus/`): reward hacks on the `scale_add` fixture task,
  each labeled with its `# expect:` verdict (none passes), which
  `tests/exploits/test_cpu_exploits.py` checks is the judge's verdict;
- the verdict corpus (`tests/judge/corpus/`): broken kernels (crashes, hangs, NaNs, wrong
  outputs, an overfit, a syntax error) and one correct kernel, labeled as `# expect:` says,
  which `tests/judge/test_verdicts.py` checks against the judge;
- every shipped task's expert (`tasks/`), labeled pass (the accelerator and CPU experts are
  judged pass by the shipped tasks' tests, the GPU experts by `scripts/gpu_check.sh`).

Each verifier (`gauntlet.agents.verifiers`) is asked about every item; a clear `FAIL` is a
rejection. A rejection of an item the judge fails is a true positive (a judge call saved on a
bad candidate), of an item the judge passes a false positive (a good candidate lost).
Precision = TP / (TP + FP), recall = TP / (TP + FN); "all" rejects when any verifier does.

`--scripted` serves a loopback model that answers FAIL or PASS at random (seeded, `--fail-rate`):
its figures measure the plumbing (prompts sent, answers parsed, counts), not any model.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the scripted model server lives in tests/support

from gauntlet import suites  # noqa: E402
from gauntlet.agents.base import Budget  # noqa: E402
from gauntlet.agents.llm import ChatClient, PriceTable  # noqa: E402
from gauntlet.agents.verifiers import VERIFIER_NAMES, VerifierResult, verify  # noqa: E402
from gauntlet.errors import ConfigError  # noqa: E402
from gauntlet.task import Task, load_task  # noqa: E402
from gauntlet.workspace import build_workspace  # noqa: E402

SCALE_ADD = REPO / "tests" / "support" / "tasks" / "triton2triton" / "scale_add"
CORPORA = {
    "exploit": REPO / "tests" / "exploits" / "corpus",
    "broken": REPO / "tests" / "judge" / "corpus",
}


@dataclass(frozen=True)
class Item:
    """One labeled candidate."""

    name: str
    source: str
    """`exploit`, `broken` or `expert`."""
    task: Task
    files: dict[str, str]
    label: str
    """The judge's status for it."""

    @property
    def bad(self) -> bool:
        """Whether the judge fails it (what a verifier should reject)."""
        return self.label != "pass"


def labeled_set() -> list[Item]:
    """The exploit and verdict corpora on `scale_add`, and every shipped expert."""
    items: list[Item] = []
    fixture = load_task(SCALE_ADD)
    for source, folder in CORPORA.items():
        for path in sorted(folder.glob("*.py")):
            text = path.read_text(encoding="utf-8")
            match = re.search(r"^# expect: (\w+)", text, re.M)
            if match is None:
                raise SystemExit(f"{path}: no '# expect:' line to label it")
            # The header names the verdict: the verifier sees the kernel without it.
            body = re.sub(r"^# (expect|reason|exploit): .*\n", "", text, flags=re.M)
            items.append(Item(path.stem, source, fixture, {"kernel.py": body}, match.group(1)))
    for task_id in suites.task_ids():
        task = suites.load_by_id(task_id)
        files = task.expert_files()
        if files is not None:
            items.append(Item(task_id, "expert", task, files, "pass"))
    return items


def briefs(items: list[Item], scratch: Path) -> dict[str, str]:
    """Each task's brief as an agent sees it (`TASK.md` of a built workspace)."""
    found: dict[str, str] = {}
    for item in items:
        task_id = item.task.task_id
        if task_id not in found:
            folder = scratch / f"ws{len(found)}" / "workspace"
            device = "sim:" + item.task.spec.platform if item.task.spec.platform else "cpu"
            found[task_id] = build_workspace(
                item.task, folder, device=device, budget=Budget()
            ).brief
    return found


def counts(rejected: list[bool | None], items: list[Item]) -> dict[str, Any]:
    """TP, FP, FN, TN, precision and recall of one verifier's rejections."""
    tp = sum(1 for r, i in zip(rejected, items, strict=True) if r and i.bad)
    fp = sum(1 for r, i in zip(rejected, items, strict=True) if r and not i.bad)
    fn = sum(1 for r, i in zip(rejected, items, strict=True) if not r and i.bad)
    tn = sum(1 for r, i in zip(rejected, items, strict=True) if not r and not i.bad)
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "unread": sum(r is None for r in rejected),
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "judge_calls_saved": tp + fp,
    }


def measure(client: ChatClient, items: list[Item], brief_of: dict[str, str]) -> dict[str, Any]:
    """Every verifier on every item; the counts per verifier and for all together."""
    prices = PriceTable()
    answers: dict[str, list[VerifierResult]] = {name: [] for name in VERIFIER_NAMES}
    for number, item in enumerate(items, start=1):
        for name in VERIFIER_NAMES:
            (result,) = verify(
                client, [name], brief_of[item.task.task_id], item.files, prices=prices
            )
            answers[name].append(result)
        print(f"[{number}/{len(items)}] {item.source} {item.name}", file=sys.stderr)
    table: dict[str, Any] = {}
    for name, results in answers.items():
        # A verdict that could not be read rejects nothing (as in the search), counted apart.
        table[name] = counts([None if r.passed is None else not r.passed for r in results], items)
    combined = [
        any(answers[name][index].passed is False for name in VERIFIER_NAMES)
        for index in range(len(items))
    ]
    table["all"] = counts(list(combined), items)
    return {
        "items": len(items),
        "bad": sum(i.bad for i in items),
        "by_source": {
            s: sum(i.source == s for i in items) for s in ("exploit", "broken", "expert")
        },
        "tokens": sum(r.tokens_in + r.tokens_out for rs in answers.values() for r in rs),
        "verifiers": table,
    }


def markdown(figures: dict[str, Any], model: str) -> str:
    """The figures as a markdown table."""
    lines = [
        f"model: {model}; {figures['items']} items ({figures['bad']} the judge fails): "
        + ", ".join(f"{n} {s}" for s, n in figures["by_source"].items()),
        "",
        "| verifier | TP | FP | FN | TN | unread | precision | recall | judge calls saved |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in figures["verifiers"].items():
        precision = "-" if row["precision"] is None else f"{row['precision']:.2f}"
        recall = "-" if row["recall"] is None else f"{row['recall']:.2f}"
        lines.append(
            f"| {name} | {row['tp']} | {row['fp']} | {row['fn']} | {row['tn']} | "
            f"{row['unread']} | {precision} | {recall} | {row['judge_calls_saved']} "
            f"({row['fp']} good lost) |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Parse the options, measure, print (and write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="the model to ask (with OPENAI_API_KEY or --base-url)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint")
    parser.add_argument(
        "--scripted", action="store_true", help="a loopback coin-flip model: the plumbing only"
    )
    parser.add_argument("--fail-rate", type=float, default=0.5, help="--scripted: share of FAILs")
    parser.add_argument("--seed", type=int, default=0, help="--scripted: its random seed")
    parser.add_argument("--out", type=Path, help="also write the markdown table here")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    if not args.scripted and not args.model:
        parser.error("give --model (and --base-url or OPENAI_API_KEY), or --scripted")
    model_client = None
    if not args.scripted:
        try:
            model_client = ChatClient(model=args.model, base_url=args.base_url)
        except ConfigError as err:
            raise SystemExit(f"measure_verifiers: {err}") from err
        # A verifier whose call fails lets the item through (as in a search), so against a
        # dead endpoint every item would come back unread: stop before the first call.
        reason = model_client.unreachable()
        if reason is not None:
            raise SystemExit(f"measure_verifiers: {reason}")
    items = labeled_set()
    with tempfile.TemporaryDirectory(prefix="measure-verifiers-") as scratch:
        brief_of = briefs(items, Path(scratch))
        if model_client is None:
            from tests.support.fake_openai import FakeOpenAI, say

            rng = random.Random(args.seed)

            def coin(request: dict[str, Any]) -> Any:
                verdict = "FAIL" if rng.random() < args.fail_rate else "PASS"
                return say(f"VERDICT: {verdict}\nscripted coin flip")

            calls = len(items) * len(VERIFIER_NAMES)
            with FakeOpenAI([coin] * calls) as server:
                model = f"scripted coin flip (fail rate {args.fail_rate:g}, seed {args.seed})"
                client = ChatClient(model="scripted", base_url=server.base_url, max_retries=0)
                figures = measure(client, items, brief_of)
        else:
            model = args.model
            figures = measure(model_client, items, brief_of)
    table = markdown(figures, model)
    print(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps({"model": model, **figures}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
