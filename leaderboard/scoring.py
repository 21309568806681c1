"""Scores of leaderboard entries: normalised metrics, task and naturalness scores, aggregates over seeds.

**Normalisation.** Each metric a task is scored on (``boards.toml``) is mapped to a common
scale by its two reference points (``reference_points.py``: the board's block of
``reference_points.json``; a board of your own: those of its file, ``leaderboard.boards``):
:func:`normalise` ``= (x - low) / (high - low)``, 0 at
``low`` (random tokens, or a documented floor), 1 at ``high`` (the references or the scripted
expert). ``low > high`` is a metric where lower is better; equal points define no scale and
are refused. Scores may leave [0, 1]: a policy can beat the references or fall below random text.

**Per run** (:func:`run_score`): the task score is the mean of the run's normalised task
metrics, the naturalness score the mean of its normalised naturalness metrics (None for a
task without any: Wordle, VisDial).

**Per entry** (``kind`` is ``"task"`` or ``"naturalness"``): :func:`score_matrix` stacks the
scores as a ``(num_runs, num_tasks)`` array, runs ordered by seed, tasks in the board's order
(those with scores of that kind: :func:`scored_tasks`). :func:`aggregate` gives, with
``rliable``, the mean and the interquartile mean (IQM) over all runs and tasks, each with a
stratified bootstrap confidence interval (``get_interval_estimates``, percentile method: runs
resampled within each task), and each task's mean over its runs with its bootstrap interval;
:func:`probability_of_improvement` the probability that one entry's run beats another's on a
task, averaged over tasks, with its interval (both entries' runs resampled independently);
:func:`metric_summaries` the raw metrics' means over seeds with their intervals, for the tables.

An entry built from run folders may lack tasks or seeds: the functions score the tasks it has
(:func:`entry_tasks`), and :func:`is_complete` says whether it has what an overall score over
the board needs (every task, the same seeds, at least the entry format's minimum of 3; a runs
folder's board asks for 1).

**Intervals need seeds.** With fewer than ``MIN_RUNS`` runs of a task (the smoke suite runs one
seed) a bootstrap interval means nothing: the functions give rliable's point estimate with
``"ci": None``. From ``MIN_RUNS`` runs on, the intervals are rliable's stratified bootstrap.

**Reproducibility.** The estimates and intervals are :func:`lm_gym.results.stats.interval_estimates`'s,
as in the benchmark report: each seeds numpy's global RNG (which rliable 1.2 draws from) with
``seed`` and restores the caller's state after, so an entry's numbers depend only on its runs,
the reference points and ``seed``, and equal rliable's own functions called after
``np.random.seed(seed)``. Nothing is NaN.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.boards import boards, is_user_board, task_metrics, user_reference_points, where
from leaderboard.entry_schema import MIN_RUNS
from lm_gym.core.errors import LMGymError
from lm_gym.results import stats

KINDS = ("task", "naturalness")
REFERENCE_POINTS_FILE = Path(__file__).with_name("reference_points.json")

#: ``{env_id: {metric: {"low": float, "high": float, ...}}}``: one board's reference points.
ReferencePoints = Mapping[str, Mapping[str, Mapping[str, Any]]]


class ScoringError(LMGymError, ValueError):
    """Scores that cannot be computed: missing or degenerate reference points, mismatched entries."""


def normalise(value: float, low: float, high: float, *, metric: str = "a metric") -> float:
    """``(value - low) / (high - low)``: 0 at ``low``, 1 at ``high`` (``low > high``: lower is better)."""
    if high == low:
        raise ScoringError(f"{metric}: its reference points are equal (low = high = {low!r}), which defines no scale")
    return (value - low) / (high - low)


def load_reference_points(board: str, path: str | Path = REFERENCE_POINTS_FILE) -> ReferencePoints:
    """The reference points of ``board`` from ``path``; a board of your own's, from its file (those it gives)."""
    if is_user_board(board) and Path(path) == REFERENCE_POINTS_FILE:
        return user_reference_points(board)
    measure = f"measure them with `python -m leaderboard.reference_points --board {board}`"
    path = Path(path)
    if not path.is_file():
        raise ScoringError(f"no reference points file at {str(path)!r}; {measure}")
    points = json.loads(path.read_text())
    if board not in points:
        raise ScoringError(
            f"{str(path)!r} has no reference points for board {board!r} (it has {sorted(points)}); {measure}"
        )
    return points[board]["tasks"]


def scored_tasks(board: str, kind: str = "task") -> tuple[str, ...]:
    """The tasks of ``board`` with metrics of ``kind``, in the board's order."""
    _check_kind(kind)
    return tuple(env_id for env_id in boards()[board].tasks if getattr(task_metrics(board)[env_id], kind))


def entry_tasks(entry: Mapping[str, Any], kind: str = "task") -> tuple[str, ...]:
    """The tasks of :func:`scored_tasks` that ``entry`` has runs of (all of them for a valid entry)."""
    return tuple(env_id for env_id in scored_tasks(entry["board"], kind) if env_id in entry["tasks"])


def unscored_metrics(board: str, env_id: str, points: ReferencePoints, kind: str = "task") -> tuple[str, ...]:
    """The metrics of ``kind`` that ``board`` scores ``env_id`` on and that have no reference points in ``points``."""
    _check_kind(kind)
    return tuple(name for name in getattr(task_metrics(board)[env_id], kind) if name not in points.get(env_id, {}))


def no_points_reason(board: str, env_id: str, metrics: tuple[str, ...]) -> str:
    """One line: why ``env_id`` has no score on ``board`` (``metrics`` lack reference points), and what gives it one."""
    if is_user_board(board):
        return (
            f"no reference points for {env_id} {', '.join(metrics)}: "
            f"add {where(board, 'reference_points')} low/high to score it"
        )
    return (
        f"no reference points for {env_id} {', '.join(metrics)}: "
        f"measure them with python -m leaderboard.reference_points --board {board}"
    )


def is_complete(entry: Mapping[str, Any], min_runs: int = MIN_RUNS) -> bool:
    """Whether ``entry`` has every task of its board, with the same seeds, at least ``min_runs`` of them:
    what an overall score over the board needs (entries built from run folders may not)."""
    tasks = boards()[entry["board"]].tasks
    if not all(env_id in entry["tasks"] for env_id in tasks):
        return False
    seeds = {tuple(sorted(run["seed"] for run in entry["tasks"][env_id]["runs"])) for env_id in tasks}
    return len(seeds) == 1 and len(next(iter(seeds))) >= min_runs


def run_score(
    final_eval: Mapping[str, float],
    env_id: str,
    points: ReferencePoints,
    kind: str = "task",
    *,
    board: str | None = None,
) -> float | None:
    """A run's task or naturalness score on ``board`` (default: the task's default metrics): the mean of its
    normalised metrics of that kind (None: none)."""
    _check_kind(kind)
    names = getattr(task_metrics(board)[env_id], kind)
    if not names:
        return None
    return float(
        np.mean(
            [normalise(final_eval[name], *_low_high(points, env_id, name), metric=f"{env_id} {name}") for name in names]
        )
    )


def task_scores(
    entry: Mapping[str, Any], env_id: str, kind: str = "task", *, points: ReferencePoints | None = None
) -> np.ndarray:
    """The scores of ``kind`` of the entry's runs of ``env_id``, ordered by seed."""
    points = _entry_points(entry) if points is None else points
    runs = sorted(entry["tasks"][env_id]["runs"], key=lambda run: run["seed"])
    scores = [run_score(run["final_eval"], env_id, points, kind, board=entry["board"]) for run in runs]
    return np.array(scores, dtype=float)


def score_matrix(entry: Mapping[str, Any], kind: str = "task", *, points: ReferencePoints | None = None) -> np.ndarray:
    """The entry's ``(num_runs, num_tasks)`` scores of ``kind``: runs by seed, tasks as :func:`entry_tasks`.

    ``points`` defaults to the board's reference points.
    """
    points = _entry_points(entry) if points is None else points
    columns = {env_id: task_scores(entry, env_id, kind, points=points) for env_id in entry_tasks(entry, kind)}
    if not columns:
        raise ScoringError(f"the entry has no task with {kind} metrics")
    if len({len(column) for column in columns.values()}) != 1:
        counts = {env_id: len(column) for env_id, column in columns.items()}
        raise ScoringError(
            f"the entry's tasks have different numbers of runs {counts}; the stratified bootstrap needs as many of each"
        )
    return np.column_stack(list(columns.values()))


def aggregate(
    entries: Mapping[str, Mapping[str, Any]],
    *,
    kind: str = "task",
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    points: ReferencePoints | None = None,
) -> dict[str, dict[str, Any]]:
    """Each entry's overall and per-task scores of ``kind`` with bootstrap CIs::

        {name: {"tasks": [env_id, ...],                        # entry_tasks, the matrix's columns
                "mean": {"value": float, "ci": [low, high]},   # rliable's aggregate_mean of the matrix
                "iqm": {"value": float, "ci": [low, high]},    # rliable's aggregate_iqm of the matrix
                "per_task": {env_id: {"mean": float, "ci": [low, high], "num_runs": int}}}}

    The overall intervals resample the ``score_matrix``'s runs within each task (one
    ``get_interval_estimates`` call); each task's, its own runs; ``ci`` is None with fewer than
    ``MIN_RUNS`` runs. ``mean`` and ``iqm`` are None for an entry without scores of ``kind`` or
    whose tasks have different numbers of runs.
    """
    results = {}
    for name, entry in entries.items():
        entry_points = _entry_points(entry) if points is None else points
        columns = {env_id: task_scores(entry, env_id, kind, points=entry_points) for env_id in entry_tasks(entry, kind)}
        per_task = {}
        for env_id, column in columns.items():
            (mean,) = _interval_estimates(column[:, None], stats.mean_estimate, reps, confidence, seed)
            per_task[env_id] = {"mean": mean["value"], "ci": mean["ci"], "num_runs": len(column)}
        overall: list[dict[str, Any] | None] = [None, None]
        if columns and len({len(column) for column in columns.values()}) == 1:
            matrix = np.column_stack(list(columns.values()))
            overall = _interval_estimates(matrix, stats.mean_and_iqm_estimates, reps, confidence, seed)
        results[name] = {"tasks": list(columns), "mean": overall[0], "iqm": overall[1], "per_task": per_task}
    return results


def probability_of_improvement(
    entry_x: Mapping[str, Any],
    entry_y: Mapping[str, Any],
    *,
    kind: str = "task",
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    points: ReferencePoints | None = None,
) -> dict[str, Any]:
    """``{"value": P(X > Y), "ci": [low, high]}``: rliable's probability that a run of ``entry_x``
    scores above one of ``entry_y`` on a task (ties count half), averaged over the tasks; both
    entries' runs resampled independently within each task."""
    if entry_x["board"] != entry_y["board"] or entry_tasks(entry_x, kind) != entry_tasks(entry_y, kind):
        raise ScoringError("only entries with the same tasks of the same board are compared")
    pair = (score_matrix(entry_x, kind, points=points), score_matrix(entry_y, kind, points=points))
    (improvement,) = _interval_estimates(pair, stats.probability_of_improvement, reps, confidence, seed)
    return improvement


def metric_summaries(
    entry: Mapping[str, Any], *, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, dict[str, Any]]]:
    """The raw metrics (``boards.toml``'s, task metrics first) over seeds, per task::

        {env_id: {metric: {"mean": float, "ci": [low, high], "num_runs": int}}}

    One stratified bootstrap per task over the ``(num_runs, num_metrics)`` values: each
    metric's runs are resampled on their own, so each interval is that metric's bootstrap CI
    of the mean over seeds.
    """
    summaries = {}
    for env_id, task in entry["tasks"].items():
        split = task_metrics(entry["board"])[env_id]
        names = (*split.task, *split.naturalness)
        runs = sorted(task["runs"], key=lambda run: run["seed"])
        values = np.array([[run["final_eval"][name] for name in names] for run in runs], dtype=float)
        estimates = _interval_estimates(values, stats.column_means, reps, confidence, seed)
        summaries[env_id] = {
            name: {"mean": estimate["value"], "ci": estimate["ci"], "num_runs": len(runs)}
            for name, estimate in zip(names, estimates)
        }
    return summaries


def _interval_estimates(scores: Any, func: Any, reps: int, confidence: float, seed: int) -> list[dict[str, Any]]:
    """:func:`lm_gym.results.stats.interval_estimates`, with no interval (``"ci": None``) below ``MIN_RUNS`` runs."""
    return stats.interval_estimates(scores, func, reps=reps, confidence=confidence, seed=seed, min_runs=MIN_RUNS)


def _entry_points(entry: Mapping[str, Any]) -> ReferencePoints:
    board = entry["board"]
    if board not in boards():
        raise ScoringError(f"unknown board {board!r}; the boards are {sorted(boards())}")
    return load_reference_points(board)


def _low_high(points: ReferencePoints, env_id: str, metric: str) -> tuple[float, float]:
    point = points.get(env_id, {}).get(metric)
    if point is None:
        raise ScoringError(
            f"no reference points for {env_id} {metric}; measure them with `python -m leaderboard.reference_points`"
        )
    return point["low"], point["high"]


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ScoringError(f"kind must be one of {list(KINDS)}, got {kind!r}")
