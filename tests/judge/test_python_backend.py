"""The Python backend's worker handshake: workers import first and work only once started."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from gauntlet import confine, settings
from gauntlet.errors import JudgeError
from gauntlet.judge import judge, protocol, python_backend, sampling, timing, workers
from gauntlet.judge.backend import EvalRequest
from gauntlet.judge.channel import ChannelClosed
from gauntlet.judge.python_backend import _Evaluation, _ReferenceCache, _Worker
from gauntlet.task import load_task
from tests.support.fixtures import SCALE_ADD, TASKS, cpu_request, eval_request, with_spec


def _reference_worker(tmp_path: Path) -> _Worker:
    task = SCALE_ADD()
    evaluation = _Evaluation(cpu_request(task, task.root / "expert", tmp_path))
    return _Worker.start(evaluation._request("reference", evaluation.states), tmp_path / "w", "cpu")


def test_a_worker_waits_for_start_and_does_nothing_without_it(tmp_path: Path) -> None:
    worker = _reference_worker(tmp_path)
    worker.await_ready(time.monotonic() + 120, "reference")
    # Ready, and nothing more: the reference worker has not drawn a single trial. The judge
    # closing its commands is how a kept reference worker is let go, so it leaves quietly,
    # without a frame.
    os.close(worker.handle.command_fd)
    worker.handle.command_fd = os.open(os.devnull, os.O_WRONLY)
    with pytest.raises(ChannelClosed):
        worker.read_event(time.monotonic() + 60)
    assert worker.finish(grace_s=30).returncode == 0
    worker.close()


def test_a_started_worker_does_its_role(tmp_path: Path) -> None:
    worker = _reference_worker(tmp_path)
    worker.await_ready(time.monotonic() + 120, "reference")
    worker.send(protocol.Command(command="start"))
    event, _ = worker.read_event(time.monotonic() + 60)
    assert isinstance(event, protocol.ReferenceTrial)
    worker.close()


# Under --runslow (11 s of CI's 15 minutes): when the watch warms is speed, not a verdict.
@pytest.mark.slow
def test_a_cold_candidate_warms_its_watch_before_ready_when_no_reference_worker_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With the references cached, nothing overlaps the candidate's first entry of its watch
    # once it is started: on a GPU those seconds were spent holding the device's lock.
    monkeypatch.setattr(python_backend, "_REFERENCES", _ReferenceCache(limit_bytes=1 << 30))
    started: list[tuple[str, bool]] = []
    start = workers.python_worker

    def recorded(
        tmp: Path, device: str, confined: confine.Confinement | None, *, ahead: bool = False
    ) -> workers.WorkerHandle:
        started.append((tmp.name, ahead))
        return start(tmp, device, confined, ahead=ahead)

    monkeypatch.setattr(workers, "python_worker", recorded)
    task = SCALE_ADD()
    for _ in range(2):
        verdict = judge(task, task.root / "expert", device="cpu", seed=4, configs="visible")
        assert verdict.status == "pass", verdict.reason
    assert started == [("reference", False), ("candidate", False), ("candidate", True)]


def test_both_workers_of_a_cuda_task_load_the_prebuilt_units(tmp_path: Path) -> None:
    # The reference worker runs the task's CUDA baseline: without the build's manifest it
    # compiled the baseline again on every judgment (24 s on an H200 for cuda2cuda/matmul).
    task = load_task(TASKS / "cuda2cuda" / "scale_add_cuda")
    request = eval_request(task, tmp_path, tmp_path, device="cuda:0", seed=3)
    evaluation = _Evaluation(request)
    for role in ("reference", "candidate"):
        assert evaluation._request(role, evaluation.states).prebuilt == str(tmp_path)
    assert evaluation._request("reference", evaluation.states).submission is None


def test_the_wait_for_the_workers_ready_is_split_by_their_own_steps() -> None:
    # `imports` is the judge's wait from the workers' start to their `ready`; each worker says
    # where its share went, from its request to that report.
    task = with_spec(SCALE_ADD(), memory_limit_mb=512)
    verdict = judge(task, task.root / "expert", device="cpu", seed=2, mode="feedback")
    assert verdict.status == "pass", verdict.reason
    steps = {k for k in verdict.phases_s if k.startswith("imports.")}
    candidate = {f"imports.candidate.{s}" for s in ("request", "memory_cap", "prebuilt", "trusted")}
    assert steps == candidate | {"imports.reference.prebuilt"}
    assert all(verdict.phases_s[k] >= 0.0 for k in steps)


def test_the_memory_limit_is_what_the_work_may_add_past_the_imports(tmp_path: Path) -> None:
    task = with_spec(SCALE_ADD(), memory_limit_mb=512)
    # PyTorch's import alone maps more than 512 MB: the limit counts from after it.
    fits = judge(task, task.root / "expert", device="cpu", seed=1, mode="feedback")
    assert fits.status == "pass", fits.reason
    text = (task.root / "expert" / "kernel.py").read_text()
    greedy = text.replace(
        "    out = torch.empty_like(x)\n",
        "    out = torch.empty_like(x)\n    torch.empty(1 << 30, dtype=torch.float32)  # 4 GiB\n",
    )
    assert greedy != text
    (tmp_path / "kernel.py").write_text(greedy)
    verdict = judge(task, tmp_path, device="cpu", seed=1, mode="feedback")
    assert verdict.status == "crash", verdict.reason
    assert "memory" in (verdict.reason + verdict.stderr).lower()


def test_feedback_checks_each_distribution_once_and_times_to_five_percent(tmp_path: Path) -> None:
    task = with_spec(SCALE_ADD(), trials=3)
    final = eval_request(task, task.root / "expert", tmp_path, device="cuda:0", seed=4)
    feedback = dataclasses.replace(final, mode="feedback")
    full, quick = _Evaluation(final), _Evaluation(feedback)
    distributions = task.spec.inputs.distributions
    for slow, fast in zip(full.states, quick.states, strict=True):
        assert len(slow.trials) == 3 * len(distributions)
        # The first trials of the final judgment: feedback sees the same inputs, fewer of them.
        assert fast.trials == slow.trials[: len(distributions)]
        assert slow.timing is not None and fast.timing is not None
        assert slow.timing.plan.target_ci == 0.01
        assert fast.timing.plan.target_ci == timing.FEEDBACK_TARGET_CI
        assert fast.timing.plan.time_cap_s == timing.FEEDBACK_TIME_CAP_S
        assert slow.timing.plan.time_cap_s == final.time_cap_s


@pytest.mark.slow  # a whole judgment, 9-14 s here; test_channel's writer process is the fast one
def test_references_kept_across_judgments_hold_no_descriptors(tmp_path: Path) -> None:
    # A large frame comes as a memory file; the judge keeps the reference's frames for later
    # judgments of the task. Mapped with Python's mmap, each kept frame held a descriptor: 80
    # after four KernelBench level 1 judgments, past 1024 over a level.
    from gauntlet.judge.python_backend import _REFERENCES
    from gauntlet.task import Config

    def frame_files() -> list[str]:
        links = []
        for name in os.listdir("/proc/self/fd"):
            try:
                links.append(os.readlink(f"/proc/self/fd/{name}"))
            except OSError:
                continue  # the listing's own descriptor
        return [link for link in links if "gauntlet-frame" in link]

    task = with_spec(SCALE_ADD(), baseline=None)  # its Triton baseline takes seconds here
    big = Config(name="big", params={"n": 1 << 18, "dtype": "float32"})  # 2 MiB float64 out
    request = dataclasses.replace(
        cpu_request(task, task.root / "expert", tmp_path), configs=[big], seed=41
    )
    before = frame_files()
    evaluation = _Evaluation(request)
    result = evaluation.run()
    assert [c.correct for c in result.results] == [True], result.reason or result.results
    kept = _REFERENCES.get(_REFERENCES.key(task, evaluation.states[0], "cpu"))
    assert kept is not None and kept[0][0].outputs[0].nbytes >= 2 << 20
    assert frame_files() == before


def _sized_request(tmp_path: Path, sizes: dict[str, int], seed: int) -> EvalRequest:
    """An untimed CPU judgment of scale_add's expert on configs of these float32 sizes."""
    from gauntlet.task import Config

    task = with_spec(SCALE_ADD(), baseline=None)  # its Triton baseline takes seconds here
    configs = [Config(name=k, params={"n": n, "dtype": "float32"}) for k, n in sizes.items()]
    request = cpu_request(task, task.root / "expert", tmp_path)
    return dataclasses.replace(request, configs=configs, seed=seed)


def test_configs_past_the_hosts_budget_are_judged_with_streamed_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two trials a config (two distributions) of 8 and 32 KiB each in float64, under a budget
    # of 48 KiB: the small config's references are kept whole; the large one's would pass the
    # budget with them, so each of its trials' references is computed when its candidate
    # output is compared, and let go.
    from gauntlet.judge.python_backend import _REFERENCES

    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    evaluation = _Evaluation(_sized_request(tmp_path, {"small": 1024, "big": 4096}, seed=44))
    result = evaluation.run()
    assert [c.correct for c in result.results] == [True, True], result.reason or result.results
    assert [c.trials for c in result.results] == [2, 2]
    assert result.environment["references_streamed"] == "big"
    # Of the wait, the worker's computing (the rest is sending and reading the results).
    waited = result.phases_s["reference.streamed"]
    assert 0.0 < result.phases_s["reference.streamed.compute"] <= waited
    # And the wait for the worker to take the orders up (it had sent everything: short).
    queued = result.phases_s["reference.streamed.queue"]
    assert 0.0 <= queued and queued + result.phases_s["reference.streamed.compute"] <= waited
    small, big = evaluation.states
    assert small.streamed is None and len(small.reference) == 2
    assert big.streamed is not None and big.streamed.trial_bytes == 32 << 10
    assert big.reference == [], "a streamed config's references are not held"
    key = _REFERENCES.key
    assert _REFERENCES.get(key(evaluation.task, small, "cpu")) is not None
    assert _REFERENCES.get(key(evaluation.task, big, "cpu")) is None, "nor kept"


def test_a_streamed_config_before_the_kept_ones_is_asked_for_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The streamed config comes first: its results are asked for while the worker still sends
    # the kept config's, which reach the judge before, between or after the answers and are
    # kept all the same.
    from gauntlet.judge.python_backend import _REFERENCES

    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    stored: list[str] = []
    store = _Evaluation._store

    def seen(self: _Evaluation, feed: Any, event: protocol.Event, tensors: Any) -> None:
        stored.append(event.event)
        store(self, feed, event, tensors)

    monkeypatch.setattr(_Evaluation, "_store", seen)
    evaluation = _Evaluation(_sized_request(tmp_path, {"big": 4096, "small": 1024}, seed=49))
    result = evaluation.run()
    assert [c.correct for c in result.results] == [True, True], result.reason or result.results
    assert result.environment["references_streamed"] == "big"
    assert stored[0] == "reference_streamed" and stored[-1] == "done"
    assert stored.count("reference_trial") == 2, "the kept config's two trials, stored once"
    big, small = evaluation.states
    assert big.reference == [] and len(small.reference) == 2
    assert _REFERENCES.get(_REFERENCES.key(evaluation.task, small, "cpu")) is not None


@pytest.mark.parametrize("right", [True, False], ids=["right", "wrong"])
def test_a_streamed_trial_is_ordered_ahead_and_one_never_needed_is_read_and_dropped(
    right: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a GPU with room, the next streamed trial is ordered as soon as one comes in, to be
    # computed while the judge compares. Played on the CPU (results through the host): trial
    # 1 is ordered when trial 0 comes. A wrong trial 0 ends the config's checks: trial 1 is
    # never asked for, and its answer is read and let go before the worker is let go.
    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    monkeypatch.setattr(_Evaluation, "_may_order_ahead", lambda self, size, on_gpu: True)
    request = _sized_request(tmp_path / "judge", {"small": 1024, "big": 4096}, seed=52)
    if not right:
        wrong = tmp_path / "wrong"
        wrong.mkdir()
        text = (request.task.root / "expert" / "kernel.py").read_text()
        (wrong / "kernel.py").write_text(text.replace("alpha * x + y", "alpha * x - y"))
        request = dataclasses.replace(
            request, build=dataclasses.replace(request.build, artifact=wrong)
        )
    dropped: list[str] = []
    drop = _Evaluation._drop_ahead

    def watched(self: _Evaluation) -> None:
        if self.ahead is not None:
            dropped.append(f"{self.ahead.order.config} {self.ahead.order.trial}")
        drop(self)

    monkeypatch.setattr(_Evaluation, "_drop_ahead", watched)
    answered: list[str] = []
    answer = _Evaluation._answer

    def read(self: _Evaluation, answer_to: str | None, where: str, deadline: float) -> Any:
        event, tensors = answer(self, answer_to, where, deadline)
        answered.append(f"{event.event} {getattr(event, 'trial', '')}")
        return event, tensors

    monkeypatch.setattr(_Evaluation, "_answer", read)
    evaluation = _Evaluation(request)
    result = evaluation.run()
    assert result.environment["references_streamed"] == "big"
    assert result.environment["references_ordered_ahead"] == "1"
    assert evaluation.ahead is None
    # Both trials' answers read off the channel, the one ordered ahead whether used or not.
    assert answered == ["reference_trial 0", "reference_trial 1"]
    if right:
        assert [c.correct for c in result.results] == [True, True], result.reason
        assert dropped == []
    else:
        assert [c.correct for c in result.results] == [False, False]
        assert dropped == ["big 1"]


def test_gpu_memory_the_judge_cannot_map_is_judged_again_through_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A driver that exports GPU memory and cannot map it back: the streamed result exists
    # nowhere else, so the judgment goes again with new workers, and from then on no reference
    # worker is asked to share GPU memory. Played on the CPU: the first streamed answer's read
    # fails as a mapping would.
    from gauntlet.judge.channel import UnmappedGpuMemory

    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    monkeypatch.setattr(python_backend.GPU_SHARING, "failed", None)
    request = _sized_request(tmp_path, {"big": 4096}, seed=50)
    gpu = dataclasses.replace(request, device="cuda:0")
    states = _Evaluation(gpu).states
    assert _Evaluation(gpu)._request("reference", states).share_device
    write, read = python_backend.write_frame, _Worker.read_event
    ordered: list[str] = []

    def written(fd: int, header: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if header.get("command") == "reference":
            ordered.append(header["config"])
        return write(fd, header, *args, **kwargs)

    def unmapped(self: _Worker, deadline: float | None) -> Any:
        if len(ordered) == 1:
            ordered.append("failed")
            raise UnmappedGpuMemory("a tensor in GPU memory cannot be mapped: no driver here")
        return read(self, deadline)

    monkeypatch.setattr(python_backend, "write_frame", written)
    monkeypatch.setattr(_Worker, "read_event", unmapped)
    result = python_backend.PythonBackend().evaluate(request)
    assert [c.correct for c in result.results] == [True], result.reason or result.results
    assert "cannot map" in result.environment["rejudged"]
    assert python_backend.GPU_SHARING.failed is not None
    assert not _Evaluation(gpu)._request("reference", states).share_device


@pytest.mark.slow  # a whole judgment, ~20 s here; the one above passes with streamed references
def test_a_wrong_output_is_found_against_streamed_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    request = _sized_request(tmp_path / "judge", {"big": 4096}, seed=45)
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    text = (request.task.root / "expert" / "kernel.py").read_text()
    (wrong / "kernel.py").write_text(text.replace("alpha * x + y", "alpha * x - y"))
    build = dataclasses.replace(request.build, artifact=wrong)
    result = _Evaluation(dataclasses.replace(request, build=build)).run()
    assert result.environment["references_streamed"] == "big"
    assert [c.correct for c in result.results] == [False]
    assert "trial 0" in result.results[0].reason


def test_a_streamed_reference_for_another_trial_than_asked_is_a_judge_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The judge checks that each streamed answer is the one it asked for: compared against
    # another trial's reference, a right output would read as wrong. Here the orders reach the
    # real reference worker with the next trial's index, as a worker that miscounted would
    # answer them.
    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    ask = _Evaluation._ask

    def miscounted(
        self: _Evaluation,
        order: protocol.CheckOutput | protocol.ReferenceOrder,
        tensors: list[torch.Tensor],
        where: str,
        limit_s: float,
        answer_to: str | None = None,
    ) -> tuple[protocol.Event, list[torch.Tensor]]:
        if isinstance(order, protocol.ReferenceOrder) and order.trial is not None:
            order = order.model_copy(update={"trial": order.trial + 1})
        return ask(self, order, tensors, where, limit_s, answer_to)

    monkeypatch.setattr(_Evaluation, "_ask", miscounted)
    with pytest.raises(JudgeError) as raised:
        _Evaluation(_sized_request(tmp_path, {"big": 4096}, seed=48)).run()
    assert "answered 'reference_trial' for trial 0 of config big" in str(raised.value)


def test_a_trial_past_the_hosts_budget_is_a_judge_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 32 KiB a trial in float64, one of them past a budget of 16 KiB: not even streamed can it
    # be held, told with the config, the bytes and the host's memory, not a worker's OOM.
    monkeypatch.setattr(settings, "REFERENCE_BYTES", 16 << 10)
    with pytest.raises(JudgeError) as raised:
        _Evaluation(_sized_request(tmp_path, {"big": 4096}, seed=43)).run()
    message = str(raised.value)
    assert "the references of config big (n=4096, dtype=float32) cannot be held" in message
    assert "32.0 KiB a trial, streamed, one trial held at a time" in message
    assert "past the judge's 16.0 KiB for references (GAUNTLET_REFERENCE_BYTES" in message
    assert "the host has" in message


def test_references_past_the_budget_sent_whole_are_a_judge_error_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The judge counts what it holds whatever the worker decided: here a worker not told the
    # budget sends a config's two trials of 32 KiB whole, past 48 KiB.
    monkeypatch.setattr(settings, "REFERENCE_BYTES", 48 << 10)
    told = _Evaluation._request

    def untold(self: _Evaluation, role: str, states: list[Any]) -> protocol.WorkerRequest:
        return told(self, role, states).model_copy(update={"reference_budget_bytes": 0})

    monkeypatch.setattr(_Evaluation, "_request", untold)
    with pytest.raises(JudgeError) as raised:
        _Evaluation(_sized_request(tmp_path, {"big": 4096}, seed=47)).run()
    message = str(raised.value)
    assert "the references of config big (n=4096, dtype=float32) cannot be held" in message
    assert "32.0 KiB a trial, 2 of them held at once" in message
    assert "64.0 KiB in all, beside 0.0 KiB of other configs'" in message
    assert "past the judge's 48.0 KiB for references (GAUNTLET_REFERENCE_BYTES" in message


def test_a_reference_worker_streams_the_same_references_it_sends_whole(tmp_path: Path) -> None:
    # Trials and sampled timed calls (their perturbed inputs), sent whole under no budget,
    # then, by the same worker reset for the next judgment, computed one at a time when asked.
    task = with_spec(SCALE_ADD(), baseline=None)
    evaluation = _Evaluation(_sized_request(tmp_path, {"big": 4096}, seed=46))
    state = evaluation.states[0]
    plan = timing.TimingPlan(call_seeds=[])
    state.timing, state.sampled = python_backend.timing_for(task, state.config, 46, plan)
    request = evaluation._request("reference", evaluation.states)
    worker = _Worker.start(
        request.model_copy(update={"reference_budget_bytes": 0}), tmp_path / "w", "cpu"
    )
    worker.await_ready(time.monotonic() + 120, "reference")
    worker.send(protocol.Command(command="start"))
    whole: dict[tuple[str, int], list[torch.Tensor]] = {}
    while True:
        event, tensors = worker.read_event(time.monotonic() + 60)
        if isinstance(event, protocol.Done):
            break
        assert isinstance(event, protocol.ReferenceTrial | protocol.ReferenceSample)
        index = event.trial if isinstance(event, protocol.ReferenceTrial) else event.position
        whole[(event.event, index)] = tensors
    assert len(whole) == len(state.trials) + len(state.sampled) == 5
    worker.send(protocol.Command(command="stop"))
    assert isinstance(worker.read_event(time.monotonic() + 60)[0], protocol.Idle)

    worker.send(request.model_copy(update={"reference_budget_bytes": 64 << 10}))
    assert isinstance(worker.read_event(time.monotonic() + 60)[0], protocol.Ready)
    worker.send(protocol.Command(command="start"))
    event, _ = worker.read_event(time.monotonic() + 60)
    assert isinstance(event, protocol.ReferenceStreamed)
    assert (event.trial_bytes, event.output_bytes) == (32 << 10, 32 << 10)
    assert isinstance(worker.read_event(time.monotonic() + 60)[0], protocol.Done)
    orders = [{"trial": i} for i in range(len(state.trials))]
    orders += [{"position": p} for p in state.sampled]
    for order in orders:
        worker.handle.send(protocol.ReferenceOrder(command="reference", config="big", **order))
        event, tensors = worker.read_event(time.monotonic() + 60)
        kind = "reference_trial" if "trial" in order else "sample"
        assert event.event == kind
        expected = whole[(kind, next(iter(order.values())))]
        assert len(tensors) == len(expected)
        assert all(torch.equal(a, b) for a, b in zip(tensors, expected, strict=True))
    worker.send(protocol.Command(command="stop"))
    assert isinstance(worker.read_event(time.monotonic() + 60)[0], protocol.Idle)
    worker.close()


def test_a_reference_worker_sends_a_sampled_calls_chosen_elements_with_its_shapes(
    tmp_path: Path,
) -> None:
    # Told a seed, the reference of a sampled timed call is its elements at `sampling`'s
    # positions, with the shapes and the baseline's error there; told none, it is whole. A
    # streamed config's sample costs the elements' bytes, not the output's.
    n = sampling.ELEMENTS * 2 + 3
    task = with_spec(SCALE_ADD(), baseline=None)
    evaluation = _Evaluation(_sized_request(tmp_path, {"big": n}, seed=48))
    state = evaluation.states[0]
    plan = timing.TimingPlan(call_seeds=[])
    state.timing, state.sampled = python_backend.timing_for(task, state.config, 48, plan)
    chosen = state.sampled[0]
    samples: dict[str, tuple[protocol.ReferenceSample, list[torch.Tensor]]] = {}
    for kind, elements in (("whole", {}), ("gathered", {chosen: 77})):
        state.elements = elements
        request = evaluation._request("reference", evaluation.states)
        assert [s.elements for s in request.configs[0].samples][:1] == [elements.get(chosen)]
        worker = _Worker.start(request, tmp_path / kind, "cpu")
        try:
            worker.await_ready(time.monotonic() + 120, "reference")
            worker.send(protocol.Command(command="start"))
            while True:
                event, tensors = worker.read_event(time.monotonic() + 60)
                if isinstance(event, protocol.Done):
                    break
                if isinstance(event, protocol.ReferenceSample) and event.position == chosen:
                    samples[kind] = (event, tensors)
        finally:
            worker.close()
    (whole, [full]), (gathered, [part]) = samples["whole"], samples["gathered"]
    assert whole.shapes == gathered.shapes == [[n]]
    assert full.shape == (n,) and part.shape == (sampling.ELEMENTS,)
    positions = sampling.positions(77, 0, n)
    assert positions is not None
    assert torch.equal(part, full[positions])
    # The baseline's error (here the reference's own in float32) on those elements alone.
    assert 0 < gathered.baseline_rel_l2[0] != whole.baseline_rel_l2[0]
    assert gathered.baseline_rel_l2[0] == pytest.approx(whole.baseline_rel_l2[0], rel=0.1)


def test_a_sampled_calls_elements_are_held_to_the_baseline_error_on_them(tmp_path: Path) -> None:
    # The judge's side of a gathered sample (`_check_sample` without a checker): the elements
    # sent against the reference's same elements, the bound from the baseline's error there;
    # the call's shape against the reference's, and as many elements as were asked for.
    from gauntlet.judge.python_backend import _Sample
    from gauntlet.judge.verdict import ConfigResult

    n = sampling.ELEMENTS * 4
    evaluation = _Evaluation(_sized_request(tmp_path, {"big": n}, seed=49))
    state = evaluation.states[0]
    generator = torch.Generator().manual_seed(49)
    reference = torch.randn(sampling.ELEMENTS, generator=generator, dtype=torch.float64)
    state.samples[5] = _Sample([reference], [1e-7], [(n,)])
    result = ConfigResult(config=state.config, correct=True)

    def check(
        output: torch.Tensor, shape: tuple[int, ...] = (n,)
    ) -> tuple[ConfigResult, str] | None:
        return evaluation._check_sample(state, 5, [output], [shape], result)

    assert check(reference.to(torch.float32)) is None
    wrong = reference.to(torch.float32)
    wrong[1000] += 1.0  # one element of the 2^18 checked
    failed = check(wrong)
    assert failed is not None and failed[0].correct is False
    assert f"timed call 5 ({sampling.ELEMENTS} of its {n} elements sampled)" in failed[0].reason
    assert "computes differently when timed" in failed[0].reason
    shaped = check(reference.to(torch.float32), (n // 2, 2))
    assert (
        shaped is not None and shaped[1] == f"timed call 5 returned shape [{n // 2}, 2], not [{n}]"
    )
    short = check(reference[:-1].to(torch.float32))
    assert short is not None and "not the [262144] elements asked for" in short[1]


def test_a_configs_trials_are_compared_while_the_reference_worker_sends_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The judge reads the reference worker's results as the candidate's session needs them:
    # the first trial is compared before the worker's last result (its `Done`) is read, and
    # everything is in once the judgment ends, cached for the next one.
    from gauntlet.judge.python_backend import _REFERENCES, _ConfigCheck

    checked_early: list[bool] = []
    real = _ConfigCheck.check_trial

    def check_trial(check: Any, *args: Any) -> Any:
        checked = real(check, *args)
        # Compared: its reference is in, the next config's not read yet, nor the worker's end.
        feed, later = evaluation.feed, evaluation.states[1]
        checked_early.append(feed is not None and feed.steps is None and not later.reference)
        return checked

    monkeypatch.setattr(_ConfigCheck, "check_trial", check_trial)
    evaluation = _Evaluation(_sized_request(tmp_path, {"a": 1024, "b": 2048}, seed=50))
    result = evaluation.run()
    assert [c.correct for c in result.results] == [True, True], result.reason or result.results
    assert checked_early[:2] == [True, True] and checked_early[2:] == [False, False]
    assert evaluation.feed is not None and evaluation.feed.steps is not None
    assert not evaluation.feed.wanted and evaluation.serving is None
    assert all(_REFERENCES.get(evaluation.keys[s.config.name]) for s in evaluation.states)
    assert result.phases_s["reference"] == evaluation.feed.seconds
