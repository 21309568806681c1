"""Statistics over seeds shared by ``python -m benchmark report`` and the leaderboard.

One implementation of what both compute and write, so that the report and the board give the
same number for the same scores:

* :func:`interval_estimates`: rliable's point estimates of a statistic with their
  (stratified) percentile bootstrap confidence intervals, ``get_interval_estimates`` run
  inside :func:`seeded_global_rng`; a point estimate alone (``"ci": None``) below ``min_runs``
  runs;
* the statistics it takes (``func``): :func:`mean_estimate` (rliable's ``aggregate_mean``),
  :func:`mean_and_iqm_estimates` (``aggregate_mean`` and ``aggregate_iqm``),
  :func:`column_means` (each column's mean, e.g. one per metric) and
  :func:`probability_of_improvement` (on a pair of score matrices); :func:`iqm` is the
  interquartile mean alone;
* :func:`markdown_table`, :func:`escape_markdown` and :func:`format_estimate`: the Markdown of
  ``report.md`` and ``board.md``;
* :func:`parse_reps` and :func:`parse_confidence`: the bootstrap's settings on a command line
  (argparse types: a bad value is a usage error, exit status 2).

Scores are ``(num_runs, num_tasks)`` matrices (a row per run, i.e. seed; a column per task or
metric): the bootstrap resamples the runs within each column.

**Reproducibility.** rliable 1.2 resamples with numpy's global RNG (``np.random.choice``; its
``random_state`` argument reaches only arch, which does not draw the indices). Each
:func:`interval_estimates` call seeds the global RNG with ``seed`` and restores the caller's
state after, so its numbers depend only on its scores and ``seed`` and equal rliable's own
functions called after ``np.random.seed(seed)``.

rliable (with arch, pandas and scipy) is in the ``benchmark`` extra and takes seconds to
import: the functions that need it import it when called.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

#: the fewest runs (rows) a bootstrap resamples: with one there is nothing to resample
MIN_BOOTSTRAP_RUNS = 2

#: how :func:`escape_markdown` writes the characters that would end a cell or start HTML (line breaks: a space)
MARKDOWN_ESCAPES = {"|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _rliable() -> tuple[Any, Any]:
    """rliable's ``library`` and ``metrics`` modules, or an ImportError naming the extra that installs them."""
    try:
        from rliable import library, metrics
    except ImportError as error:
        raise ImportError(
            f'lm_gym.results.stats needs rliable, with arch<8 and pandas<3: pip install "lm-gym[benchmark]" ({error})'
        ) from error
    return library, metrics


@contextlib.contextmanager
def seeded_global_rng(seed: int) -> Iterator[None]:
    """numpy's global RNG seeded with ``seed`` inside the block, the caller's state restored after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def interval_estimates(
    scores: np.ndarray | tuple[np.ndarray, ...],
    func: Callable[..., Any],
    *,
    reps: int,
    confidence: float,
    seed: int,
    min_runs: int = MIN_BOOTSTRAP_RUNS,
) -> list[dict[str, Any]]:
    """rliable's point estimates of ``func(scores)`` with their stratified percentile bootstrap CIs::

        [{"value": float, "ci": [low, high]}, ...]    # one per value func returns

    ``scores`` is a ``(num_runs, num_columns)`` matrix, or a tuple of matrices resampled
    independently (``func`` then takes them as separate arguments); ``reps`` resamples,
    ``confidence`` coverage, numpy's global RNG seeded with ``seed`` (:func:`seeded_global_rng`).
    Where a matrix has fewer than ``min_runs`` runs (rows) there is no interval: ``"ci": None``
    and ``func``'s value on the scores themselves.
    """
    matrices = scores if isinstance(scores, tuple) else (scores,)
    if min(len(matrix) for matrix in matrices) < min_runs:
        return [{"value": float(value), "ci": None} for value in np.atleast_1d(func(*matrices))]
    library, _ = _rliable()
    with seeded_global_rng(seed):
        estimates, intervals = library.get_interval_estimates(
            {"scores": scores}, func, reps=reps, confidence_interval_size=confidence
        )
    values, (lows, highs) = np.atleast_1d(estimates["scores"]), intervals["scores"].reshape(2, -1)
    return [{"value": float(v), "ci": [float(low), float(high)]} for v, low, high in zip(values, lows, highs)]


def mean_estimate(scores: np.ndarray) -> np.ndarray:
    """``[mean]``: rliable's ``aggregate_mean`` of a score matrix (the mean over runs and columns)."""
    _, metrics = _rliable()
    return np.array([metrics.aggregate_mean(scores)])


def mean_and_iqm_estimates(scores: np.ndarray) -> np.ndarray:
    """``[mean, IQM]``: rliable's ``aggregate_mean`` and ``aggregate_iqm`` of a score matrix."""
    _, metrics = _rliable()
    return np.array([metrics.aggregate_mean(scores), metrics.aggregate_iqm(scores)])


def column_means(scores: np.ndarray) -> np.ndarray:
    """Each column's mean over the runs: one interval per column from one bootstrap."""
    return scores.mean(axis=0)


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """rliable's probability that a run of X scores above a run of Y on a column (ties half),
    averaged over the columns."""
    _, metrics = _rliable()
    return metrics.probability_of_improvement(scores_x, scores_y)


def iqm(scores: np.ndarray) -> float:
    """rliable's interquartile mean (``aggregate_iqm``) of a score matrix."""
    _, metrics = _rliable()
    return float(metrics.aggregate_iqm(scores))


def column(values: Sequence[float]) -> np.ndarray:
    """One metric's values over runs as a ``(num_runs, 1)`` score matrix."""
    return np.asarray(values, dtype=float).reshape(-1, 1)


# ---- Markdown ---------------------------------------------------------------------------------


def escape_markdown(text: str) -> str:
    """Text in Markdown (a table cell, a paragraph): no cell breaks, no line breaks, no HTML."""
    return re.sub(r"[|<>&\n\r]", lambda match: MARKDOWN_ESCAPES.get(match.group(), " "), text)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table: the header, the ``|---|`` rule, a line per row.

    Every cell is escaped (:func:`escape_markdown`), so that no text can break the table; an
    empty cell is one space (``| | a |``).
    """

    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {escape_markdown(str(cell))} " if cell != "" else " " for cell in cells) + "|"

    return [line(header), "|---" * len(header) + "|", *(line(row) for row in rows)]


def format_estimate(value: float, ci: Sequence[float] | None, number: Callable[[float], str]) -> str:
    """``value [low, high]`` with each number written by ``number``; ``value`` alone without an interval."""
    if ci is None:
        return number(value)
    low, high = ci
    return f"{number(value)} [{number(low)}, {number(high)}]"


# ---- command lines ----------------------------------------------------------------------------


def parse_reps(text: str) -> int:
    """A number of bootstrap resamples from a command line (an argparse ``type``): an integer, at least 1."""
    try:
        reps = int(text)
    except ValueError:
        reps = 0
    if reps < 1:
        raise argparse.ArgumentTypeError(f"must be an integer, at least 1, got {text!r}")
    return reps


def parse_confidence(text: str) -> float:
    """An interval's coverage from a command line (an argparse ``type``): a number between 0 and 1, both excluded."""
    try:
        confidence = float(text)
    except ValueError:
        confidence = 0.0
    if not 0 < confidence < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, both excluded, got {text!r}")
    return confidence
