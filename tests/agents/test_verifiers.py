"""The LLM verifiers: prompts, the answer's parser, gating, their measurement.

Against a scripted model on 127.0.0.1 (real HTTP); the measurement is
scripts/measure_verifiers.py's.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gauntlet.agents.llm import ChatClient, PriceTable
from gauntlet.agents.verifiers import (
    VERIFIER_NAMES,
    parse_answer,
    prompt,
    rejected_by,
    verifier,
    verify,
)
from gauntlet.task import load_task
from tests.support.fake_openai import Answer, FakeOpenAI, error, say
from tests.support.fixtures import TASKS

FILES = {"kernel.py": "def kernel(x):\n    return x[:-1]\n"}


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("VERDICT: PASS\nfine", True),
        ("VERDICT: FAIL\nreads past the end", False),
        ("verdict = fail: the mask is missing", False),
        ("Some thinking first.\n**VERDICT: PASS**\nno issue", True),
        ("It looks fine to me.", None),
        ("", None),
    ],
)
def test_the_parser_reads_a_verdict_or_none(answer: str, passed: bool | None) -> None:
    assert parse_answer(answer)[0] is passed


def test_the_reason_follows_the_verdict_and_is_cut() -> None:
    passed, reason = parse_answer("VERDICT: FAIL\n" + "x" * 1000)
    assert passed is False and reason.startswith("xxx") and reason.endswith("...")
    assert len(reason) < 500
    assert "no VERDICT line" in parse_answer("maybe")[1]


def test_each_prompt_judges_its_own_focus_on_the_brief_and_files() -> None:
    systems = set()
    for name in VERIFIER_NAMES:
        messages = prompt(verifier(name), "Compute y = 2x.", FILES)
        systems.add(messages[0]["content"])
        assert "VERDICT: PASS" in messages[0]["content"]
        assert "Compute y = 2x." in messages[1]["content"]
        assert "File: kernel.py" in messages[1]["content"] and "x[:-1]" in messages[1]["content"]
    assert len(systems) == len(VERIFIER_NAMES)
    with pytest.raises(KeyError):
        verifier("style")


def test_verify_stops_at_the_first_rejection_and_counts_its_tokens() -> None:
    script = [
        say("VERDICT: PASS\nbuilds", prompt_tokens=300, completion_tokens=10),
        say("VERDICT: FAIL\nthe last element is never written", prompt_tokens=310),
    ]
    with FakeOpenAI(script) as server:
        client = ChatClient(model="gpt-4o-mini", base_url=server.base_url, max_retries=0)
        results = verify(client, VERIFIER_NAMES, "brief", FILES, prices=PriceTable())
    assert [r.name for r in results] == ["compile", "memory"]  # numerics never asked
    assert len(server.requests) == 2
    assert "memory safety" in server.requests[1]["messages"][0]["content"]
    rejection = rejected_by(results)
    assert rejection is not None and rejection.name == "memory"
    assert rejection.reason == "the last element is never written"
    assert results[0].tokens_in == 300 and results[0].cost_usd > 0


def test_a_failed_call_or_an_unreadable_answer_rejects_nothing() -> None:
    with FakeOpenAI([error(400, "bad request"), say("I would rather not say.")]) as server:
        client = ChatClient(model="m", base_url=server.base_url, max_retries=0)
        results = verify(client, ["compile", "numerics"], "brief", FILES, prices=PriceTable())
    assert [r.passed for r in results] == [None, None]
    assert "model error" in results[0].reason and rejected_by(results) is None


def _measure_verifiers() -> ModuleType:
    script = Path(__file__).resolve().parents[2] / "scripts" / "measure_verifiers.py"
    spec = importlib.util.spec_from_file_location("measure_verifiers", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


def test_the_measurement_scores_each_verifier_against_the_judges_labels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # scripts/measure_verifiers.py against an endpoint given only by its address (no key), as
    # a local model server is: compile rejects everything, memory passes everything, and the
    # numerics answers cannot be read.
    measure = _measure_verifiers()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    task = load_task(TASKS / "triton2triton" / "scale_add")
    items = [
        measure.Item("off_by_one", "broken", task, FILES, "incorrect"),
        measure.Item("expert", "expert", task, FILES, "pass"),
    ]

    def answer(request: dict[str, Any]) -> Answer:
        system = request["messages"][0]["content"]
        if "build and load" in system:
            return say("VERDICT: FAIL\nit will not build")
        return say("VERDICT: PASS\nfine" if "memory safety" in system else "no idea")

    with FakeOpenAI([answer] * 6) as server:
        client = ChatClient(model="local", base_url=server.base_url, max_retries=0)
        figures = measure.measure(client, items, {task.task_id: "Compute alpha * x + y."})
    assert not server.failures and len(server.requests) == 6
    compile_, memory, numerics = (figures["verifiers"][name] for name in VERIFIER_NAMES)
    assert (compile_["tp"], compile_["fp"], compile_["precision"]) == (1, 1, 0.5)
    assert (memory["fn"], memory["tn"], memory["recall"]) == (1, 1, 0.0)
    assert numerics["unread"] == 2 and numerics["judge_calls_saved"] == 0
    assert figures["verifiers"]["all"] == compile_
    assert figures["items"] == 2 and figures["bad"] == 1
    assert "| compile | 1 | 1 | 0 | 0 | 0 | 0.50 | 1.00 | 2 (1 good lost) |" in measure.markdown(
        figures, "local"
    )


def test_the_measurement_stops_before_asking_an_endpoint_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    measure = _measure_verifiers()
    with socket.socket() as probe:  # a port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["measure_verifiers.py", "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1"]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(measure, "labeled_set", lambda: pytest.fail("built the labeled set"))
    with pytest.raises(SystemExit, match="does not answer"):
        measure.main()
