"""Scores as flat rows, for CSV files and other tools (`--csv` on report, leaderboard, compare).

One row per figure with its interval: a run's metrics per group, the leaderboard's rows, a
comparison's differences. The JSON form of each is its pydantic model (`--json`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from gauntlet.compare import Comparison
from gauntlet.report.leaderboard import LEADERBOARD_KEYS, Leaderboard
from gauntlet.score import METRICS, RunScores

Row = dict[str, Any]


def score_rows(scores: RunScores) -> list[Row]:
    """Per group and metric: the value, its 95% interval, the tasks it covers, or why n/a."""
    rows = []
    for group in scores.groups:
        for spec in METRICS:
            metric = group.metrics[spec.key]
            rows.append(
                {
                    "run": scores.run_id,
                    "agent": group.agent,
                    "model": group.model or "",
                    "metric": spec.key,
                    "label": spec.label,
                    "value": metric.value,
                    "ci_low": metric.ci_low,
                    "ci_high": metric.ci_high,
                    "tasks": metric.n,
                    "reason": metric.reason,
                    "unsandboxed_attempts": group.unsandboxed,
                }
            )
    return rows


def leaderboard_rows(board: Leaderboard) -> list[Row]:
    """Per leaderboard row: rank, agent, model, counts, and each metric with its interval."""
    rows = []
    for row in board.rows:
        flat: Row = {
            "rank": row.rank,
            "agent": row.agent,
            "model": row.model or "",
            "tasks": row.tasks,
            "attempts": row.attempts,
            "unsandboxed_attempts": row.unsandboxed,
            "runs": " ".join(row.runs),
        }
        for key in LEADERBOARD_KEYS:
            metric = row.metrics[key]
            flat[key] = metric.value
            flat[f"{key}_ci_low"] = metric.ci_low
            flat[f"{key}_ci_high"] = metric.ci_high
        rows.append(flat)
    return rows


def comparison_rows(result: Comparison) -> list[Row]:
    """Per compared metric: A, B, the difference or ratio with its interval, p and verdict."""
    return [
        {
            "run_a": result.run_a,
            "group_a": result.group_a,
            "run_b": result.run_b,
            "group_b": result.group_b,
            "metric": diff.key,
            "label": diff.label,
            "kind": diff.kind,
            "a": diff.a,
            "b": diff.b,
            "value": diff.value,
            "ci_low": diff.ci_low,
            "ci_high": diff.ci_high,
            "p_value": diff.p_value,
            "significant": diff.significant,
            "verdict": diff.verdict,
            "shared_tasks": len(result.tasks),
        }
        for diff in result.differences
    ]


def to_csv(rows: Sequence[Row]) -> str:
    """The rows as CSV with a header (empty for no rows); None is an empty cell."""
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()
