"""The report's charts, drawn with matplotlib and returned as inline SVG markup.

Figures are built without pyplot (no global state, no display backend). Each chart gets its own
hash salt, so the ids matplotlib writes into the SVG are stable from run to run and distinct
between the charts of one page.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gauntlet.score import FAST_P, TaskScore, fast_p_curve

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PASS_COLOR = "#2a9d8f"
FAIL_COLOR = "#e76f51"
LINE_COLOR = "#264653"

_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.DOTALL)


def _figure(width_in: float, height_in: float) -> Figure:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), layout="constrained")
    return figure


def _svg(figure: Figure, salt: str) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    # Drop the XML declaration and DOCTYPE: the markup is embedded in an HTML page.
    return _PROLOGUE.sub("", buffer.getvalue(), count=1)


def speedup_distribution(tasks: Sequence[TaskScore], salt: str) -> str:
    """Histogram of the per-task deployable speedups (log scale), passing and not.

    Args:
        tasks: The group's tasks, all timed.
        salt: Distinguishes this chart's SVG ids from the other charts of the page.
    """
    from matplotlib.ticker import FuncFormatter

    passing = [t.speedup for t in tasks if t.passed and t.speedup is not None]
    failing = [t.speedup for t in tasks if not t.passed and t.speedup is not None]
    values = [*passing, *failing]
    low = min([*values, 0.5])
    high = max([*values, 2.0])
    edges = [2 ** (math.log2(low) + (math.log2(high) - math.log2(low)) * i / 24) for i in range(25)]
    edges[0], edges[-1] = edges[0] * 0.98, edges[-1] * 1.02
    figure = _figure(6.0, 2.8)
    axes = figure.add_subplot()
    axes.hist(
        [passing, failing],
        bins=edges,
        stacked=True,
        color=[PASS_COLOR, FAIL_COLOR],
        label=["passes", "does not pass (counts 1.0)"],
    )
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
    axes.axvline(1.0, color=LINE_COLOR, linewidth=0.8, linestyle="--")
    axes.set_xlabel("deployable speedup per task (log scale)")
    axes.set_ylabel("tasks")
    axes.legend(frameon=False, fontsize="small")
    return _svg(figure, salt)


def fast_p_chart(tasks: Sequence[TaskScore], salt: str) -> str:
    """fast_p as a function of p: the share of tasks that pass and are more than p times faster.

    Args:
        tasks: The group's tasks, all timed.
        salt: Distinguishes this chart's SVG ids from the other charts of the page.
    """
    top = max([*(s for t in tasks for s in t.pass_speedups if s is not None), 2.0]) * 1.1
    ps = [top * i / 400 for i in range(401)]
    curve = fast_p_curve(tasks, ps) or [0.0] * len(ps)
    figure = _figure(6.0, 2.8)
    axes = figure.add_subplot()
    axes.step(ps, curve, where="post", color=LINE_COLOR)
    for number, (p, share) in enumerate(
        zip(FAST_P, fast_p_curve(tasks, FAST_P) or [], strict=False)
    ):
        axes.plot([p], [share], "o", color=PASS_COLOR)
        # Stagger the labels upwards: neighbouring thresholds often share a value.
        axes.annotate(
            f"fast_{p:.1f} = {share:.1%}",
            (p, share),
            textcoords="offset points",
            xytext=(5, 5 + 11 * number),
            fontsize="small",
        )
    axes.set_xlim(0, top)
    axes.set_ylim(0, 1.05)
    axes.set_xlabel("p (speedup threshold)")
    axes.set_ylabel("share of all tasks")
    return _svg(figure, salt)


#: Up to this many tasks, the speed-of-light chart names each task; beyond, it shows the profile.
SOL_LABELLED_TASKS = 40


def sol_chart(tasks: Sequence[TaskScore], salt: str) -> str:
    """Fraction of speed-of-light per task (0 for a task that does not pass), sorted.

    Up to `SOL_LABELLED_TASKS` tasks get one labelled horizontal bar each; more tasks are drawn
    as unlabelled bars in rank order, which keeps the chart a readable size.

    Args:
        tasks: The group's tasks whose fraction is known.
        salt: Distinguishes this chart's SVG ids from the other charts of the page.
    """
    shown = sorted(
        (t for t in tasks if t.sol_fraction is not None), key=lambda t: t.sol_fraction or 0.0
    )
    fractions = [t.sol_fraction or 0.0 for t in shown]
    colors = [PASS_COLOR if t.passed else FAIL_COLOR for t in shown]
    if len(shown) <= SOL_LABELLED_TASKS:
        figure = _figure(6.0, max(1.6, 0.28 * len(shown) + 0.9))
        axes = figure.add_subplot()
        axes.barh([t.task_id for t in shown], fractions, color=colors)
        axes.set_xlim(0, 1)
        axes.set_xlabel("fraction of speed-of-light (1.0 = roofline)")
        axes.tick_params(axis="y", labelsize="small")
    else:
        figure = _figure(6.0, 2.8)
        axes = figure.add_subplot()
        axes.bar(range(len(shown)), fractions[::-1], width=1.0, color=colors[::-1])
        axes.set_ylim(0, 1)
        axes.set_xlabel(f"tasks, by fraction ({len(shown)})")
        axes.set_ylabel("fraction of speed-of-light")
    return _svg(figure, salt)
