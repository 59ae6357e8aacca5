"""The LLM verifiers: prompts, the answer's parser, gating, against a scripted model (real HTTP)."""

from __future__ import annotations

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
from tests.support.fake_openai import FakeOpenAI, error, say

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
