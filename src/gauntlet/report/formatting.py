"""How numbers are written in reports, the leaderboard and the CLI: one function per unit."""

from __future__ import annotations

from gauntlet.score import METRIC_BY_KEY, Metric, Unit

NOT_AVAILABLE = "n/a"


def format_value(value: float | None, unit: Unit) -> str:
    """A value in its unit (`62.5%`, `1.23×`, `12.0 s`, `$0.05`); `n/a` for None."""
    if value is None:
        return NOT_AVAILABLE
    if unit in ("rate", "fraction"):
        return f"{value * 100:.1f}%"
    if unit in ("speedup", "ratio"):
        return f"{value:.2f}×"
    if unit == "seconds":
        return f"{value:.1f} s"
    if unit == "usd":
        # Small costs keep four decimals: a cheap model's attempt may cost a fraction of a cent.
        return f"${value:,.2f}" if value == 0 or abs(value) >= 0.1 else f"${value:.4f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def format_interval(metric: Metric, unit: Unit) -> str:
    """The confidence interval as `[low – high]`, or an empty string without one."""
    if metric.ci_low is None or metric.ci_high is None:
        return ""
    return f"[{format_value(metric.ci_low, unit)} – {format_value(metric.ci_high, unit)}]"


def format_metric(metric: Metric) -> str:
    """Value and interval (`62.5% [40.0% – 80.0%]`), or `n/a (reason)`."""
    unit = METRIC_BY_KEY[metric.key].unit
    if metric.value is None:
        return f"{NOT_AVAILABLE} ({metric.reason})" if metric.reason else NOT_AVAILABLE
    interval = format_interval(metric, unit)
    return f"{format_value(metric.value, unit)} {interval}".strip()


def format_difference(value: float | None, kind: str, unit: Unit) -> str:
    """A paired difference: `+12.5%` (a difference of rates) or `×1.23` (a ratio)."""
    if value is None:
        return NOT_AVAILABLE
    if kind == "ratio":
        return f"×{value:.3f}"
    text = format_value(abs(value), unit)
    return ("+" if value >= 0 else "−") + text
