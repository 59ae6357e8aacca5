"""Reports: the HTML page of a run, the leaderboard across runs, and how numbers are written."""

from gauntlet.report.formatting import format_metric, format_value
from gauntlet.report.leaderboard import LEADERBOARD_KEYS, Leaderboard, LeaderboardRow, leaderboard
from gauntlet.report.page import render_report, write_report

__all__ = [
    "LEADERBOARD_KEYS",
    "Leaderboard",
    "LeaderboardRow",
    "format_metric",
    "format_value",
    "leaderboard",
    "render_report",
    "write_report",
]
