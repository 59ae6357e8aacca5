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


def invoke_stdout(app: typer.Typer, *args: str) -> str:
    """What a pipe reading the command's standard output gets (JSON or CSV alone)."""
    result = CliRunner().invoke(app, [*args, "--resamples", "300"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


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


def test_report_leaderboard_and_compare_export_json_and_csv(
    app: typer.Typer, sample_report: tuple[Path, Path], tmp_path: Path
) -> None:
    import csv
    import io
    import json

    run_dir = str(sample_report[0])
    scores = json.loads(
        invoke_stdout(app, "report", run_dir, "--json", "--html", str(tmp_path / "r.html"))
    )
    assert scores["run_id"] == "run-sample" and len(scores["groups"]) == 2
    rows = list(csv.DictReader(io.StringIO(invoke_stdout(app, "report", run_dir, "--csv"))))
    pass_rates = {r["agent"]: r for r in rows if r["metric"] == "pass_rate"}
    assert set(pass_rates) == {"scripted", "toolcall"}
    assert float(pass_rates["scripted"]["value"]) == pytest.approx(0.375)
    assert pass_rates["scripted"]["ci_low"] and pass_rates["scripted"]["tasks"] == "8"
    board = json.loads(invoke_stdout(app, "leaderboard", run_dir, "--json"))
    assert [row["rank"] for row in board["rows"]] == [1, 2]
    board_rows = list(
        csv.DictReader(io.StringIO(invoke_stdout(app, "leaderboard", run_dir, "--csv")))
    )
    assert {"rank", "agent", "deployable_speedup", "deployable_speedup_ci_low"} <= set(
        board_rows[0]
    )
    diffs = list(
        csv.DictReader(
            io.StringIO(
                invoke(
                    app, "compare", run_dir, run_dir, "--a", "scripted", "--b", "toolcall", "--csv"
                )
            )
        )
    )
    assert {d["metric"] for d in diffs} >= {"pass_rate", "deployable_speedup"}
    both = CliRunner().invoke(app, ["leaderboard", run_dir, "--json", "--csv"])
    assert isinstance(both.exception, ConfigError)


def test_the_leaderboard_fits_an_80_column_terminal(
    app: typer.Typer, sample_report: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(out, "width", 80)
    output = invoke(app, "leaderboard", str(sample_report[0]))
    table_lines = [line for line in output.splitlines() if line[:1] in "┏┃┡│└"]
    assert table_lines and max(len(line) for line in table_lines) <= 80
    # Whole labels and values, one small table per agent, instead of 15 squeezed columns.
    assert "#1 " in output and "#2 " in output
    assert "Deployable speedup" in output and "Pass rate" in output
