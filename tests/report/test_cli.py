"""`gauntlet report`, `leaderboard` and `compare` through Typer, on a fresh app."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gauntlet._cli.output import out
from gauntlet._cli.report import register
from gauntlet.errors import ConfigError
from tests.support.rundirs import RunBuilder


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    # Wide enough that rich does not wrap the tables' cells.
    monkeypatch.setattr(out, "width", 300)
    app = typer.Typer()
    register(app)
    return app


def invoke(app: typer.Typer, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--resamples", "300"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_report_prints_scores_and_writes_the_page(
    app: typer.Typer, sample_report: tuple[Path, Path], tmp_path: Path
) -> None:
    run_dir, _ = sample_report
    output = invoke(app, "report", str(run_dir), "--html", str(tmp_path / "r.html"))
    assert "run-sample: scripted@model-a" in output and "run-sample: toolcall@gpt-x" in output
    assert "Pass rate" in output and "37.5% [" in output
    assert "report:" in output and (tmp_path / "r.html").exists()


def test_leaderboard_writes_markdown_and_html(
    app: typer.Typer, sample_report: tuple[Path, Path], tmp_path: Path
) -> None:
    run_dir, _ = sample_report
    md, html = tmp_path / "board.md", tmp_path / "board.html"
    output = invoke(app, "leaderboard", str(run_dir), "--md", str(md), "--html", str(html))
    assert "toolcall" in output and "Ranked by deployable speedup" in output
    assert md.read_text().startswith("| # | Agent |")
    assert '<table class="sortable leaderboard">' in html.read_text()


def test_compare_says_whether_the_difference_is_significant(
    app: typer.Typer, sample_report: tuple[Path, Path]
) -> None:
    run_dir = str(sample_report[0])
    output = invoke(app, "compare", run_dir, run_dir, "--a", "scripted", "--b", "toolcall")
    assert "8 shared tasks; 0 only in A, 0 only in B" in output
    assert "Deployable speedup" in output and "B is significantly better" in output
    assert "no significant difference" in output  # the pass rates


def test_user_errors_surface_as_config_errors(app: typer.Typer, tmp_path: Path) -> None:
    run = RunBuilder(tmp_path / "run")
    run.add("t/a", "pass", agent="one", speedup=1.0)
    run.add("t/a", "pass", agent="two", speedup=1.0)
    run_dir = str(run.write())
    # The lead's `main` turns ConfigError into exit code 2 without a traceback.
    with pytest.raises(ConfigError, match="several agents"):
        CliRunner().invoke(app, ["compare", run_dir, run_dir], catch_exceptions=False)
