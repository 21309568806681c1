"""The board's figures (matplotlib, PNG): learning curves per task, score bars with intervals.

Every figure draws an entry in its algorithm's colour (:func:`algorithm_colour`), so that an
algorithm looks the same in every plot; entries of one algorithm in one figure differ by line style.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from leaderboard.numbers import significant

#: the baselines' algorithms (``result.json``'s ``algorithm``) in fixed colours (matplotlib's tab10)
ALGORITHM_COLOURS = {
    "ppo": "#1f77b4",
    "nlpo": "#ff7f0e",
    "grpo": "#2ca02c",
    "rloo": "#d62728",
    "ilql": "#9467bd",
    "sft": "#8c564b",
    "bc": "#e377c2",
    "filtered_bc": "#bcbd22",
}
#: colours of other methods, picked by a hash of the name: the same in every figure and every board
OTHER_COLOURS = ("#7f7f7f", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94")
LINE_STYLES = ("-", "--", ":", "-.")


class Bar(NamedTuple):
    """An entry's score in :func:`score_bars`: ``ci`` None (fewer than 3 seeds) draws no error bar."""

    name: str
    method: str
    value: float
    ci: tuple[float, float] | None
    runs: int


def algorithm_colour(method: str) -> str:
    """The colour of ``method`` in every figure."""
    if method in ALGORITHM_COLOURS:
        return ALGORITHM_COLOURS[method]
    return OTHER_COLOURS[hashlib.sha256(method.encode()).digest()[0] % len(OTHER_COLOURS)]


def learning_curves(entries: list[dict[str, Any]], env_id: str, path: Path) -> Path | None:
    """:func:`learning_curves_figure` saved to ``path``; None when no entry has a curve of ``env_id``."""
    figure = learning_curves_figure(entries, env_id)
    return None if figure is None else _save(figure, path)


def learning_curves_figure(entries: list[dict[str, Any]], env_id: str) -> Figure | None:
    """Each entry's mean return over its seeds against the step (the runs' evaluations, else their
    training returns: the entries' ``curve``), the seeds' range shaded. Short curves get markers,
    so that a run evaluated once still shows as a point."""
    figure, axes = plt.subplots(figsize=(6, 3.6))
    styles = _line_styles([entry["method"] for entry in entries])
    drawn = False
    for entry, style in zip(entries, styles):
        runs = entry["tasks"].get(env_id, {}).get("runs", [])
        curves = [np.asarray(run["curve"], dtype=float) for run in runs if run.get("curve")]
        if not curves:
            continue
        steps = np.unique(np.concatenate([curve[:, 0] for curve in curves]))
        # seeds are interpolated onto the union of their steps (equal configs log the same steps)
        values = np.stack([np.interp(steps, curve[:, 0], curve[:, 1]) for curve in curves])
        colour = algorithm_colour(entry["method"])
        axes.plot(
            steps,
            values.mean(axis=0),
            label=_label(entry["name"]),
            color=colour,
            linestyle=style,
            marker="o" if len(steps) <= 20 else None,
            markersize=4,
        )
        if len(curves) > 1:
            axes.fill_between(steps, values.min(axis=0), values.max(axis=0), color=colour, alpha=0.2)
        drawn = True
    if not drawn:
        plt.close(figure)
        return None
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are counts: no tick at 1.5
    axes.set(title=env_id, xlabel="step (iteration or optimizer step)", ylabel="mean return")
    axes.legend(fontsize=7)
    return figure


def score_bars(bars: list[Bar], title: str, path: Path) -> Path:
    """:func:`score_bars_figure` saved to ``path``."""
    return _save(score_bars_figure(bars, title), path)


def score_bars_figure(bars: list[Bar], title: str) -> Figure:
    """One bar per entry in its algorithm's colour, its confidence interval as an error bar, its value
    (3 significant digits, ``n=1`` where it has no interval) beside it."""
    figure, axes = plt.subplots(figsize=(6, 0.5 + 0.45 * max(1, len(bars))))
    positions = np.arange(len(bars))
    values = np.array([bar.value for bar in bars], dtype=float)
    container = axes.barh(positions, values, color=[algorithm_colour(bar.method) for bar in bars])
    with_ci = [index for index, bar in enumerate(bars) if bar.ci is not None]
    if with_ci:
        errors = np.array([[values[i] - bars[i].ci[0], bars[i].ci[1] - values[i]] for i in with_ci]).T
        axes.errorbar(
            values[with_ci], positions[with_ci], xerr=np.clip(errors, 0, None), fmt="none", ecolor="#333", capsize=3
        )
    labels = [significant(bar.value) + ("" if bar.ci is not None else f" (n={bar.runs})") for bar in bars]
    axes.bar_label(container, labels=labels, padding=3, fontsize=7)
    axes.set_yticks(positions, [_label(bar.name) for bar in bars], fontsize=8)
    axes.invert_yaxis()
    axes.axvline(0, color="#999", linewidth=0.8)
    axes.margins(x=0.3)  # room for the value labels, beyond either end of a bar
    axes.set(title=title, xlabel="normalised score (0: random tokens, 1: references or expert)")
    return figure


def _line_styles(methods: list[str]) -> list[str]:
    """A line style per entry: the first entry of each method solid, the next of that method dashed, ..."""
    seen: dict[str, int] = {}
    styles = []
    for method in methods:
        styles.append(LINE_STYLES[seen.get(method, 0) % len(LINE_STYLES)])
        seen[method] = seen.get(method, 0) + 1
    return styles


def _save(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def _label(name: str) -> str:
    # matplotlib reads $...$ as math: entry names are untrusted text, shown literally
    short = name if len(name) <= 40 else name[:39] + "..."
    return short.replace("$", r"\$")
