"""The parsers of the CLI clients' output, line by line, on what the real clients print."""

from __future__ import annotations

import json

from gauntlet.agents.cli_streams import AiderStream, ClaudeStream, CodexStream


def line(event: dict) -> str:
    return json.dumps(event, separators=(",", ":"))


def claude_call(message_id: str, tokens_in: int, cached: int, deltas: list[int]) -> list[str]:
    usage = {"input_tokens": tokens_in, "cache_read_input_tokens": cached, "output_tokens": 1}
    start = {"type": "message_start", "message": {"id": message_id, "usage": usage}}
    lines = [line({"type": "stream_event", "event": start})]
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
    lines.append(line({"type": "stream_event", "event": text}))
    for count in deltas:
        delta = {"type": "message_delta", "usage": {"output_tokens": count}}
        lines.append(line({"type": "stream_event", "event": delta}))
    return lines


def test_claude_usage_is_counted_per_call_as_it_streams() -> None:
    parser = ClaudeStream()
    kept = [parser.feed(text) for text in claude_call("m1", 100, 900, [40])]
    assert kept == [True, False, True]  # text fragments stay out of the transcript
    # Killed mid-call: the second call's output so far is counted, not its final figure.
    for text in claude_call("m2", 50, 0, [7, 12]):
        parser.feed(text)
    usage = parser.usage
    assert (usage.calls, usage.tokens_in, usage.tokens_cached, usage.tokens_out) == (
        2,
        1050,
        900,
        52,
    )
    assert usage.status is None


def test_claude_api_error_is_an_error_and_its_synthetic_message_no_call() -> None:
    parser = ClaudeStream()
    synthetic = {"id": "uuid", "model": "<synthetic>", "usage": {"input_tokens": 0}}
    parser.feed(line({"type": "assistant", "message": synthetic}))
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "num_turns": 1,
        "result": "API Error: 400 scripted",
        "total_cost_usd": 0,
    }
    parser.feed(line(result))
    assert parser.usage.calls == 0
    assert parser.usage.status == "error" and "API Error: 400 scripted" in parser.usage.message


def test_codex_usage_comes_from_its_rollout_once_per_response() -> None:
    parser = CodexStream()
    record = {
        "type": "token_usage_record",
        "payload": {
            "response_id": "r1",
            "usage": {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 30},
        },
    }
    parser.feed_side(line(record))
    parser.feed_side(line(record))  # the same response again
    parser.feed_side(line({"type": "response_item", "payload": {"type": "message"}}))
    parser.feed(line({"type": "error", "message": "Reconnecting... 1/5"}))
    turn = {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 30}
    parser.feed(line({"type": "turn.completed", "usage": turn}))
    usage = parser.usage
    assert (usage.calls, usage.tokens_in, usage.tokens_cached, usage.tokens_out) == (
        1,
        1000,
        600,
        30,
    )
    assert (usage.status, usage.message) == ("finished", "")


def test_codex_failed_turn_quotes_the_apis_message() -> None:
    parser = CodexStream()
    body = json.dumps({"error": {"message": "model not found", "type": "invalid_request_error"}})
    parser.feed(line({"type": "turn.failed", "error": {"message": body}}))
    assert (parser.usage.status, parser.usage.message) == ("error", "codex failed: model not found")


def test_aider_call_without_an_answer_is_an_error_and_a_retried_one_is_not() -> None:
    def event(name: str, **properties: object) -> str:
        return line({"event": name, "properties": properties})

    parser = AiderStream()
    parser.feed_side(event("message_send_starting"))
    parser.feed("litellm.InternalServerError: OpenAIException - overloaded")
    parser.feed("Retrying in 0.2 seconds...")
    send = {"prompt_tokens": 1234, "completion_tokens": 56, "cost": 0.0, "total_cost": 0.0}
    parser.feed_side(event("message_send", **send))
    assert parser.usage.status is None
    assert (parser.usage.calls, parser.usage.tokens_in, parser.usage.tokens_out) == (1, 1234, 56)

    parser.feed_side(event("message_send_starting"))
    parser.feed("litellm.BadRequestError: OpenAIException - scripted refusal")
    assert parser.usage.status == "error"
    assert parser.usage.message == (
        "aider's model call failed: BadRequestError: OpenAIException - scripted refusal"
    )
