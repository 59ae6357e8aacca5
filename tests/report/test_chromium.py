"""The report opened in a real headless Chromium: no console errors, not blank, right numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gauntlet.report import leaderboard
from gauntlet.report.page import asset
from gauntlet.score import METRIC_BY_KEY, METRICS, score_run
from tests.report.chromium import PageLoad, ink_fraction, load, require_chromium
from tests.report.dom import DISPLAY_TOLERANCE, displayed, find, number_cells, value_cell
from tests.support.rundirs import FAST_BOOTSTRAP


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require_chromium()


def test_detector_catches_a_console_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    broken.write_text(
        "<!DOCTYPE html><html><body><h1>broken</h1>"
        "<script>document.body.dataset.ran = 'yes'; missingFunction();</script></body></html>"
    )
    page = load(broken, tmp_path / "broken", height=400)
    assert any("Uncaught ReferenceError: missingFunction" in m for m in page.console), page.console
    assert 'data-ran="yes"' in page.dom


def test_detector_catches_a_network_load(tmp_path: Path) -> None:
    # The report's policy blocks any load, and the blocked load is itself a console message.
    page_path = tmp_path / "remote.html"
    page_path.write_text(
        "<!DOCTYPE html><html><head><meta http-equiv='Content-Security-Policy' "
        "content=\"default-src 'none'\"></head><body>"
        "<img src='http://example.invalid/x.png'></body></html>"
    )
    page = load(page_path, tmp_path / "remote", height=400)
    assert any("Content Security Policy" in m for m in page.console), page.console


def test_blank_page_is_detected_as_blank(tmp_path: Path) -> None:
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    page = load(blank, tmp_path / "blank", height=400)
    assert page.console == []
    assert ink_fraction(page.screenshot) == 0.0


@pytest.fixture(scope="module")
def report_page(
    sample_report: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> PageLoad:
    require_chromium()
    return load(sample_report[1], tmp_path_factory.mktemp("chromium"))


def test_report_loads_clean_and_is_not_blank(report_page: PageLoad) -> None:
    page = report_page
    assert page.console == [], page.console
    assert ink_fraction(page.screenshot) > 0.02
    assert page.dom.count("<svg") >= 5  # two groups: speedup and fast_p each, one SOL chart


def test_numbers_on_the_page_equal_the_scores(
    sample_report: tuple[Path, Path], report_page: PageLoad
) -> None:
    scores = score_run(sample_report[0], bootstrap=FAST_BOOTSTRAP)
    cells = number_cells(report_page.dom)
    checked = 0
    for group in scores.groups:
        for spec in METRICS:
            metric = group.metrics[spec.key]
            row = find(cells, table="summary", group=group.label, metric=spec.key)
            value = value_cell(row)
            if metric.value is None:
                assert value.text == "n/a" and value.context["data-value"] == ""
                continue
            assert float(value.context["data-value"]) == metric.value, spec.key
            assert displayed(value.text, spec.unit) == pytest.approx(
                metric.value, abs=DISPLAY_TOLERANCE[spec.unit]
            ), (spec.key, value.text)
            (interval,) = [c for c in row if "data-low" in c.context]
            assert float(interval.context["data-low"]) == metric.ci_low
            assert float(interval.context["data-high"]) == metric.ci_high
            checked += 1
        for task in group.tasks:
            (speedup,) = find(
                cells, table="sortable tasks", group=group.label, task=task.task_id, field="speedup"
            )
            expected = "" if task.speedup is None else repr(task.speedup)
            assert speedup.context["data-value"] == expected, task.task_id
            checked += 1
        for breakdown in group.breakdowns:
            for key, metric in breakdown.metrics.items():
                found = find(
                    cells,
                    table="sortable breakdown",
                    group=group.label,
                    dimension=breakdown.dimension,
                    key=breakdown.key,
                    metric=key,
                )
                if not found:  # breakdown tables show a subset of the metrics
                    continue
                (shown,) = found
                expected = "" if metric.value is None else repr(metric.value)
                assert shown.context["data-value"] == expected, (breakdown.key, key)
                checked += 1
    assert checked > 60


def test_sortable_table_sorts_in_the_browser(tmp_path: Path) -> None:
    page_path = tmp_path / "sort.html"
    page_path.write_text(
        "<!DOCTYPE html><html><body><table class='sortable' id='t'>"
        "<thead><tr><th>name</th><th>speed</th></tr></thead><tbody>"
        "<tr><td>b</td><td data-sort='10'>10×</td></tr>"
        "<tr><td>a</td><td data-sort='9.5'>9.5×</td></tr>"
        "<tr><td>c</td><td data-sort='-1'>n/a</td></tr>"
        "</tbody></table><script>" + str(asset("report.js")) + "</script><script>"
        "var th = document.querySelectorAll('#t th');"
        "th[1].click(); document.body.dataset.asc = "
        "Array.from(document.querySelectorAll('#t tbody td:first-child'))"
        ".map(function (c) { return c.textContent; }).join('');"
        "th[1].click(); document.body.dataset.desc = "
        "Array.from(document.querySelectorAll('#t tbody td:first-child'))"
        ".map(function (c) { return c.textContent; }).join('');"
        "th[0].click(); document.body.dataset.names = "
        "Array.from(document.querySelectorAll('#t tbody td:first-child'))"
        ".map(function (c) { return c.textContent; }).join('');"
        "</script></body></html>"
    )
    page = load(page_path, tmp_path / "sort", height=400)
    assert page.console == []
    # Numeric, not lexicographic: 9.5 sorts before 10.
    assert 'data-asc="cab"' in page.dom
    assert 'data-desc="bac"' in page.dom
    assert 'data-names="abc"' in page.dom


def test_a_link_to_an_attempt_opens_it(sample_report: tuple[Path, Path], tmp_path: Path) -> None:
    anchor = "attempt-triton__softmax--scripted--0"
    # Headless Chromium screenshots a page opened at a fragment blank, so only the DOM is checked.
    page = load(sample_report[1], tmp_path / "anchor", height=600, fragment=anchor)
    assert page.console == []
    opened = re.findall(r"<details[^>]*\bopen\b[^>]*>", page.dom)
    assert len(opened) == 1 and f'id="{anchor}"' in opened[0]


def test_leaderboard_page_loads_clean(sample_report: tuple[Path, Path], tmp_path: Path) -> None:
    run_dir, _ = sample_report
    board = leaderboard([run_dir], bootstrap=FAST_BOOTSTRAP)
    page_path = board.write_html(tmp_path / "leaderboard.html")
    page = load(page_path, tmp_path / "board", height=800)
    assert page.console == [], page.console
    assert ink_fraction(page.screenshot) > 0.01
    cells = number_cells(page.dom)
    for row in board.rows:
        (shown,) = find(cells, group=row.label, metric="deployable_speedup")
        assert shown.context["data-value"] == repr(row.metrics["deployable_speedup"].value)
        unit = METRIC_BY_KEY["pass_rate"].unit
        (rate,) = find(cells, group=row.label, metric="pass_rate")
        assert displayed(rate.text, unit) == pytest.approx(
            row.metrics["pass_rate"].value, abs=DISPLAY_TOLERANCE[unit]
        )
