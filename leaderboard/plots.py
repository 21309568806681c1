"""The board's figures (matplotlib, PNG): learning curves per task, score bars with intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def learning_curves(entries: list[dict[str, Any]], env_id: str, path: Path) -> Path | None:
    """Each entry's mean return over its seeds against the step (the runs' evaluations, else their
    training returns: the entries' ``curve``), the seeds' range shaded. Short curves get markers,
    so that a run evaluated once still shows as a point."""
    figure, axes = plt.subplots(figsize=(6, 3.6))
    drawn = False
    for entry in entries:
        runs = entry["tasks"].get(env_id, {}).get("runs", [])
        curves = [np.asarray(run["curve"], dtype=float) for run in runs if run.get("curve")]
        if not curves:
            continue
        steps = np.unique(np.concatenate([curve[:, 0] for curve in curves]))
        # seeds are interpolated onto the union of their steps (equal configs log the same steps)
        values = np.stack([np.interp(steps, curve[:, 0], curve[:, 1]) for curve in curves])
        line = axes.plot(steps, values.mean(axis=0), label=_label(entry["name"]), marker="o" if len(steps) <= 20 else None, markersize=4)[0]
        if len(curves) > 1:
            axes.fill_between(steps, values.min(axis=0), values.max(axis=0), color=line.get_color(), alpha=0.2)
        drawn = True
    if not drawn:
        plt.close(figure)
        return None
    axes.set(title=env_id, xlabel="step (iteration or optimizer step)", ylabel="mean return")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def score_bars(names: list[str], points: list[float], intervals: list[tuple[float, float]], title: str, path: Path) -> Path:
    """One bar per entry with its confidence interval as an error bar."""
    figure, axes = plt.subplots(figsize=(6, 0.5 + 0.45 * max(1, len(names))))
    positions = np.arange(len(names))
    errors = np.array([[point - low, high - point] for point, (low, high) in zip(points, intervals)]).T.reshape(2, -1)
    axes.barh(positions, points, xerr=np.clip(errors, 0, None), color="#4c72b0", capsize=3)
    axes.set_yticks(positions, [_label(name) for name in names], fontsize=8)
    axes.invert_yaxis()
    axes.axvline(0, color="#999", linewidth=0.8)
    axes.set(title=title, xlabel="normalised score (0: random tokens, 1: references or expert)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def _label(name: str) -> str:
    # matplotlib reads $...$ as math: entry names are untrusted text, shown literally
    short = name if len(name) <= 40 else name[:39] + "..."
    return short.replace("$", r"\$")
