"""The report page's content, without a browser: sections, escaping, limits, edge cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gauntlet.agents.autotune import AutotuneChoice, AutotuneTrial
from gauntlet.errors import ConfigError, RecordError
from gauntlet.report import render_report, write_report
from gauntlet.report.attempts import TRANSCRIPT_LIMIT_CHARS
from gauntlet.score import score_run
from gauntlet.store import RunStore
from tests.report.dom import displayed, number_cells, search_tables, value_cell
from tests.support.rundirs import FAST_BOOTSTRAP, RunBuilder


def test_report_is_self_contained(sample_report: tuple[Path, Path]) -> None:
    html = sample_report[1].read_text()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and not re.search(r"<script[^>]+src", html)
    assert "@import" not in html and "url(http" not in html
    assert html.count("<svg") == 5  # both groups: speedups and fast_p; the first: SOL


def test_report_has_every_section(sample_report: tuple[Path, Path]) -> None:
    run_dir, path = sample_report
    html = path.read_text()
    scores = score_run(run_dir, bootstrap=FAST_BOOTSTRAP)
    for heading in ("Summary", "By track", "By level", "By platform", "Speed", "Generalization"):
        assert f"<h3>{heading}</h3>" in html
    for heading in ("Cost", "Tasks"):
        assert f"<h3>{heading}</h3>" in html
    for group in scores.groups:
        assert f'<table class="sortable tasks" data-group="{group.label}">' in html
        for task in group.tasks:
            for attempt_id in task.attempt_ids:
                assert f'data-attempt="{attempt_id}"' in html
    # The second group cannot chart speed-of-light: cuda/scan's verdict has no figure.
    assert "no speed-of-light for task &#39;cuda/scan&#39;" in html
    assert "Overfit (visible correct, hidden wrong)" in html
    assert ">3/5<" in html  # accel k/n


def test_attempt_sections_show_submission_verdict_and_transcript(
    sample_report: tuple[Path, Path],
) -> None:
    html = sample_report[1].read_text()
    start = html.index('data-attempt="triton__layernorm--scripted--0"')
    section = html[start : html.index("</details>", start)]
    assert '<div class="highlight">' in section  # pygments
    assert '<span class="nd">@triton</span>' in section.replace("\n", "")
    assert 'data-config="H1"' in section and "hidden config H1 wrong" in section
    assert '<span class="bad">✗</span>' in section and '<span class="ok">✓</span>' in section
    assert "[0] user: Make triton/layernorm faster." in section  # transcript, rendered
    assert "[1] assistant: I will tile the loop." in section


def test_untrusted_text_is_escaped_and_links_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    run = RunBuilder(tmp_path / "run")
    run.add(
        "t/evil",
        "pass",
        speedup=1.5,
        submission={"kernel.py": "x = '</script><script>alert(2)</script>'\n"},
        transcript=[
            {"type": "text", "text": "<script>alert(1)</script>"},
            {"type": "assistant", "message": {"content": "<img src=x onerror=alert(3)>"}},
        ],
    )
    run_dir = run.write()
    folder = run_dir / "attempts" / "t__evil--scripted--0"
    (folder / "submission" / "link.py").symlink_to(secret)
    (folder / "transcript-link.txt").symlink_to(secret)
    (folder / "judge.log").write_text("judge ran\n")
    html = render_report(run_dir, bootstrap=FAST_BOOTSTRAP)

    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(3)&gt;" in html
    assert "TOP-SECRET-VALUE" not in html
    assert html.count("a link, not shown") == 2
    assert "judge.log (10 bytes)" in html


def test_long_transcripts_are_cut_with_a_marker(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    # 400 lines of 1,000 characters: 300 fit in the limit.
    lines = [{"type": "text", "text": "y" * 1000} for _ in range(400)]
    run.add("t/long", "incorrect", transcript=lines)
    html = render_report(run.write(), bootstrap=FAST_BOOTSTRAP)
    assert TRANSCRIPT_LIMIT_CHARS == 300_000
    assert "[... 100 more lines not shown]" in html


def test_untimed_run_says_not_timed(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run", device="cpu")
    run.add("t/a", "pass")
    run.add("t/b", "incorrect")
    html = render_report(run.write(), bootstrap=FAST_BOOTSTRAP)
    assert "<svg" not in html
    assert (
        "No speed charts: no task of this group was judged on a timed device (the cpu device is "
        "not timed)." in html
    )
    cells = number_cells(html)
    assert value_cell(cells, table="summary", metric="deployable_speedup").text == "n/a"
    assert value_cell(cells, table="summary", metric="pass_rate").text == "50.0%"


def test_a_run_mixing_cpu_and_timed_tasks_charts_the_timed_ones(tmp_path: Path) -> None:
    # `make run` on a CPU machine: CPU tasks (not timed) beside simulator tasks (in cycles).
    run = RunBuilder(tmp_path / "run", device="cpu")
    run.add("t/cpu", "pass")
    run.add("accel/npu/a", "pass", speedup=2.0, device="sim:npu", track="accel")
    run.add("accel/npu/b", "incorrect", device="sim:npu", track="accel")
    html = render_report(run.write(), bootstrap=FAST_BOOTSTRAP)
    assert "<svg" in html and "No speed charts" not in html
    assert "Over the 2 of 3 tasks judged on a timed device" in html


def test_an_autotune_attempt_shows_its_search_point_by_point(tmp_path: Path) -> None:
    # The transcript `autotune` writes: one line per judged point, then its choice.
    trials = [
        AutotuneTrial(
            index=number, search="grid", knobs={"RB": rb}, status=status, speedup=speedup,
            duration_s=2.0, reason="",
        ).model_dump(mode="json")
        for number, (rb, status, speedup) in enumerate(
            [(4, "pass", 2.0), (1, "incorrect", None), (2, "pass", 2.5), (8, "pass", 1.5)]
        )
    ]  # fmt: skip
    choice = AutotuneChoice(
        knobs={"RB": 2}, speedup=2.5, judge_calls=4, space_size=4, message="grid search"
    ).model_dump(mode="json")
    run = RunBuilder(tmp_path / "run", device="sim:npu")
    run.add("accel/npu/a", "pass", agent="autotune", speedup=2.5, transcript=[*trials, choice])
    run.add("accel/npu/a", "pass", agent="baseline", speedup=1.0)
    (cells,) = search_tables(render_report(run.write(), bootstrap=FAST_BOOTSTRAP))
    # generation (the judged point), candidates, judged, correct, best speedup so far, judge
    # calls so far, judge seconds so far, tokens, cost: autotune spends judge time only.
    assert [c[:4] + c[5:] for c in cells] == [
        ["0", "1", "1", "1", "1", "2.0", "0", "$0.0000"],
        ["1", "1", "1", "0", "2", "4.0", "0", "$0.0000"],
        ["2", "1", "1", "1", "3", "6.0", "0", "$0.0000"],
        ["3", "1", "1", "1", "4", "8.0", "0", "$0.0000"],
    ]
    assert [displayed(c[4], "speedup") for c in cells] == [2.0, 2.0, 2.5, 2.5]


def test_missing_attempts_are_flagged(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run", task_ids=["t/a", "t/b"])
    run.add("t/a", "pass", speedup=2.0)
    html = render_report(run.write(), bootstrap=FAST_BOOTSTRAP)
    assert "1 task(s) of the run have no recorded attempt and count as failures:" in html


def test_empty_run(tmp_path: Path) -> None:
    html = render_report(RunBuilder(tmp_path / "run").write(), bootstrap=FAST_BOOTSTRAP)
    assert "This run holds no attempt yet." in html


def test_write_report_paths(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/a", "build_error")
    run_dir = run.write()
    assert write_report(run_dir, bootstrap=FAST_BOOTSTRAP) == run_dir / "report.html"
    elsewhere = write_report(run_dir, tmp_path / "out" / "r.html", bootstrap=FAST_BOOTSTRAP)
    # Rendering is deterministic: same run, same bootstrap, same page.
    assert elsewhere.read_text() == (run_dir / "report.html").read_text()
    with pytest.raises(RecordError, match="cannot write the report"):
        write_report(run_dir, tmp_path / "out", bootstrap=FAST_BOOTSTRAP)  # a directory
    with pytest.raises(ConfigError, match="does not exist"):  # bad input: exit 2
        write_report(tmp_path / "nowhere")


def test_the_task_table_says_why_a_task_did_not_pass(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/a", "pass", speedup=1.5)
    record = run.add("t/b", "agent_error")
    html = render_report(run.write(), bootstrap=FAST_BOOTSTRAP)
    assert "Why not a pass" in html
    row = html.split('data-task="t/b"')[1].split("</tr>")[0]
    assert f"<div>{record.reason}</div>" in row
    passing = html.split('data-task="t/a"')[1].split("</tr>")[0]
    assert '<td class="reason"></td>' in passing


def test_an_unfinished_run_says_so(tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run", task_ids=["t/a", "t/b"])
    run.add("t/a", "pass", speedup=2.0)
    run_dir = run.write()
    RunStore(run_dir).set_state("interrupted")
    html = render_report(run_dir, bootstrap=FAST_BOOTSTRAP)
    assert "This run is not finished (it was stopped)" in html
    RunStore(run_dir).set_state("finished")
    assert "This run is not finished" not in render_report(run_dir, bootstrap=FAST_BOOTSTRAP)
