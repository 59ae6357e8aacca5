"""The judge's side of a config's timed calls: its own clock around each, and its samples.

The candidate's worker (`timing.measure`, `worker._report_call`) reports each timed call with a
`CallMade` frame and waits; `follow` reads the judge's clock, answers `next` (with `keep` where
the call is one of the secret sampled positions, which never reach the candidate's process,
and the seed of the elements to send, `sampling`) and, for a sampled call, reads its output.
The judge's clock between an answer and the next report brackets that call from outside the
candidate's process (`timing.clock_disagreement`).

Each timed call waits for this exchange while the judgment holds the GPU alone
(`devicelock.py`), so it is kept short: the answer to a call not sampled is encoded once, and the
judge's own share of each exchange (from a report read to its answer written) is summed into
`Followed.judge_s`, so a verdict shows how much of the timing was the judge's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gauntlet.judge import protocol
from gauntlet.judge.timing import pair_order

#: The answer to a timed call not sampled, as a frame header (`WorkerHandle.send` writes it).
GO_ON: dict[str, Any] = protocol.Command(command="next").model_dump()


def keep(elements: int | None) -> dict[str, Any]:
    """The answer to a sampled call: send its output, the elements `elements` chooses or all."""
    return protocol.Command(command="next", keep=True, elements=elements).model_dump()


class Breach(Exception):
    """The worker broke the timing protocol (the message says how)."""


@dataclass
class Followed:
    """What the judge saw of one config's timed calls."""

    timed: protocol.Timed
    """The worker's measurement, which ended the calls."""
    walls: dict[str, dict[int, float]] = field(
        default_factory=lambda: {"baseline": {}, "candidate": {}}
    )
    """Per role and pair, microseconds on the judge's clock from its answer to the report."""
    sampled: dict[int, list[Any]] = field(default_factory=dict)
    """The outputs of the sampled candidate calls, by pair: flat, their checked elements, or
    whole."""
    shapes: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    """The shapes of those outputs as the calls returned them, by pair (the worker's word)."""
    calls: int = 0
    judge_s: float = 0.0
    """The judge's own time in the exchanges: from each report read to its answer written."""
    samples_s: float = 0.0
    """Waiting for and reading the sampled outputs (the worker's copies included)."""


def follow(
    config: str,
    read: Callable[[bool], tuple[protocol.Event, list[Any]]],
    answer: Callable[[dict[str, Any]], None],
    secret: Mapping[int, int | None],
    max_pairs: int,
) -> Followed:
    """Answer the timed calls of `config` until its `Timed` frame; the judge's clock around each.

    `read(sampled)` returns the worker's next frame (a sampled output's where `sampled`, for
    its own time limit) and raises on a failure the worker reported or a timeout; `answer`
    writes a header to the worker; `secret` maps the pairs whose candidate call's output is
    checked to the seed of the elements checked (None: the whole outputs).

    Raises:
        Breach: A frame out of order: a call of the wrong role or pair, past `max_pairs`, a
            sampled output that does not match, the timing of another config, or its end in the
            middle of a pair.
    """
    clock = time.monotonic
    walls: dict[str, dict[int, float]] = {"baseline": {}, "candidate": {}}
    sampled: dict[int, list[Any]] = {}
    shapes: dict[int, list[tuple[int, ...]]] = {}
    judge_s = samples_s = 0.0
    calls = 0
    expected = pair_order(0)
    pair, step, sent_at = 0, 0, None
    while True:
        event, tensors = read(False)
        arrived = clock()
        if isinstance(event, protocol.Timed):
            break
        if not isinstance(event, protocol.CallMade):
            raise Breach(f"expected a timed call or the timing, got a '{event.event}' frame")
        if pair >= max_pairs or event.role != expected[step] or event.position != pair:
            raise Breach(
                f"expected the {expected[step]} call of pair {pair}, got the {event.role} "
                f"call of pair {event.position}"
            )
        if sent_at is not None:
            walls[event.role][pair] = (arrived - sent_at) * 1e6
        checked = event.role == "candidate" and pair in secret
        sent_at = clock()
        answer(keep(secret[pair]) if checked else GO_ON)
        answered = clock()
        judge_s += answered - arrived
        calls += 1
        if checked:
            event, tensors = read(True)
            if not isinstance(event, protocol.SampledOutput):
                raise Breach(f"expected the output of call {pair}, got a '{event.event}' frame")
            if not (event.position == pair and event.count == len(tensors) == len(event.shapes)):
                raise Breach(f"the sampled output of call {pair} does not match")
            sampled[pair] = tensors
            shapes[pair] = [tuple(shape) for shape in event.shapes]
            # The copy is the worker's, outside the bracket of the next call.
            sent_at = clock()
            samples_s += sent_at - answered
        step += 1
        if step == 2:
            pair, step = pair + 1, 0
            expected = pair_order(pair)
    if event.config != config or step != 0:
        raise Breach(f"the timing of config {config} ended in the middle of a pair")
    return Followed(
        timed=event,
        walls=walls,
        sampled=sampled,
        shapes=shapes,
        calls=calls,
        judge_s=judge_s,
        samples_s=samples_s,
    )
