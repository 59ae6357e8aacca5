"""The trusted judge: gates, workers, correctness, timing (JUDGE.md)."""

from gauntlet.judge.pipeline import judge
from gauntlet.judge.verdict import ConfigResult, Gate, Timing, Verdict

__all__ = ["ConfigResult", "Gate", "Timing", "Verdict", "judge"]
