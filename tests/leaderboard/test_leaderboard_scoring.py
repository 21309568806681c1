"""Leaderboard scoring (leaderboard/scoring.py) and its reference points (leaderboard/reference_points.py).

Entries here are hand-made (only the fields scoring reads) with hand-made reference points,
so every expected number is computed by hand or by rliable called directly.
"""

import json
import math

import numpy as np
import pytest
from rliable import library, metrics

from leaderboard import reference_points, scoring
from leaderboard.boards import boards, task_metrics
from leaderboard.scoring import (
    ScoringError,
    aggregate,
    is_complete,
    load_reference_points,
    metric_summaries,
    normalise,
    probability_of_improvement,
    run_score,
    score_matrix,
    scored_tasks,
)

BOARD = "smoke"
TASKS = boards()[BOARD].tasks
IMDB, WORDLE = "lm_gym/IMDB-v0", "lm_gym/Wordle-v0"
REPS = 300
POI_REPS = 100  # a Mann-Whitney test per task and resample: slower


def metric_names(env_id, board=None):
    return (*task_metrics(board)[env_id].task, *task_metrics(board)[env_id].naturalness)


# Every metric from 0 to 10, except IMDB's MSTTR, lower-is-better from 10 to 0 (low > high).
POINTS = {env_id: {name: {"low": 0.0, "high": 10.0} for name in metric_names(env_id)} for env_id in TASKS}
POINTS[IMDB]["corpus_msttr"] = {"low": 10.0, "high": 0.0}


def make_entry(value_of, seeds=(3, 1, 2), board=BOARD):
    """An entry whose run of ``seed`` on ``env_id`` has every metric at ``value_of(env_id, seed)``."""
    return {
        "board": board,
        "tasks": {
            env_id: {
                "runs": [
                    {"seed": seed, "final_eval": dict.fromkeys(metric_names(env_id), value_of(env_id, seed))}
                    for seed in seeds
                ]
            }
            for env_id in boards()[board].tasks
        },
    }


def spread(env_id, seed):
    """Values that differ by task and seed, so that a wrong order or task shows."""
    return float(TASKS.index(env_id) + seed)


# ---- normalisation -------------------------------------------------------------------------


def test_normalise_maps_low_to_0_and_high_to_1():
    assert normalise(2.0, 2.0, 6.0) == 0.0
    assert normalise(6.0, 2.0, 6.0) == 1.0
    assert normalise(3.0, 2.0, 6.0) == 0.25
    assert normalise(10.0, 2.0, 6.0) == 2.0  # beyond the references


def test_normalise_lower_is_better():
    assert normalise(30.0, 30.0, 10.0) == 0.0
    assert normalise(10.0, 30.0, 10.0) == 1.0
    assert normalise(15.0, 30.0, 10.0) == 0.75


def test_equal_points_are_refused_naming_the_metric():
    with pytest.raises(ScoringError, match="corpus_msttr.*equal"):
        normalise(0.5, 0.7, 0.7, metric="lm_gym/IMDB-v0 corpus_msttr")


def test_missing_reference_points_name_the_command(tmp_path):
    path = tmp_path / "points.json"
    with pytest.raises(ScoringError, match="python -m leaderboard.reference_points --board grue"):
        load_reference_points("grue", path)
    path.write_text('{"smoke": {"tasks": {}}}')
    with pytest.raises(ScoringError, match="no reference points for board 'grue'.*--board grue"):
        load_reference_points("grue", path)


# ---- per run and per entry -----------------------------------------------------------------


def test_run_scores_average_the_normalised_metrics_of_their_kind():
    final_eval = {"mean_sentiment": 5.0, "corpus_distinct_2": 2.0, "corpus_msttr": 4.0}
    assert run_score(final_eval, IMDB, POINTS, "task") == 0.5
    assert run_score(final_eval, IMDB, POINTS, "naturalness") == pytest.approx((0.2 + 0.6) / 2)
    assert run_score({"mean_return": 1.0, "mean_solved": 3.0}, WORDLE, POINTS, "naturalness") is None


def test_score_matrix_has_runs_by_seed_and_tasks_in_board_order():
    matrix = score_matrix(make_entry(spread), "task", points=POINTS)
    expected = np.array([[spread(env_id, seed) / 10 for env_id in TASKS] for seed in (1, 2, 3)])
    np.testing.assert_allclose(matrix, expected)
    assert scored_tasks(BOARD, "naturalness") == tuple(t for t in TASKS if t not in (WORDLE, "lm_gym/VisDial-v0"))
    naturalness = score_matrix(make_entry(spread), "naturalness", points=POINTS)
    assert naturalness.shape == (3, len(TASKS) - 2)
    imdb_value = spread(IMDB, 1)  # distinct-2 up from 0, MSTTR down from 10
    assert naturalness[0, 0] == pytest.approx((imdb_value / 10 + (10 - imdb_value) / 10) / 2)


def test_runs_missing_a_reference_point_are_refused():
    with pytest.raises(ScoringError, match="no reference points for lm_gym/IMDB-v0 mean_sentiment"):
        score_matrix(make_entry(spread), points={})


def test_aggregate_equals_rliable_called_directly():
    entry = make_entry(
        lambda env_id, seed: float(np.random.default_rng([TASKS.index(env_id), seed]).uniform(0, 10)), seeds=range(5)
    )
    result = aggregate({"method": entry}, reps=REPS, seed=7, points=POINTS)["method"]

    def rliable_directly(scores, func):
        np.random.seed(7)
        estimates, intervals = library.get_interval_estimates({"x": scores}, func, reps=REPS)
        return [{"value": v, "ci": [low, high]} for v, low, high in zip(estimates["x"], *intervals["x"])]

    matrix = score_matrix(entry, points=POINTS)
    mean, iqm = rliable_directly(
        matrix, lambda scores: np.array([metrics.aggregate_mean(scores), metrics.aggregate_iqm(scores)])
    )
    assert result["mean"] == mean and result["iqm"] == iqm
    assert mean["ci"][0] < mean["value"] < mean["ci"][1]
    assert result["tasks"] == list(TASKS)
    for k, env_id in enumerate(TASKS):
        (task_mean,) = rliable_directly(matrix[:, [k]], lambda scores: np.array([metrics.aggregate_mean(scores)]))
        assert result["per_task"][env_id] == {"mean": task_mean["value"], "ci": task_mean["ci"], "num_runs": 5}


def test_overall_mean_is_the_mean_of_normalised_scores():
    entry = make_entry(spread)
    result = aggregate({"method": entry}, reps=REPS, points=POINTS)["method"]
    by_hand = [spread(env_id, seed) / 10 for env_id in TASKS for seed in (1, 2, 3)]
    assert result["mean"]["value"] == pytest.approx(sum(by_hand) / len(by_hand))


def test_aggregate_leaves_the_global_rng_as_it_was():
    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    aggregate({"method": make_entry(spread)}, reps=REPS, points=POINTS)
    assert np.random.random() == expected


def test_a_clearly_better_entry_is_probably_an_improvement():
    better = make_entry(lambda env_id, seed: 8.0 + seed / 10)
    worse = make_entry(lambda env_id, seed: 2.0 + seed / 10)
    result = probability_of_improvement(better, worse, reps=POI_REPS, points=POINTS)
    assert result["value"] == 1.0 and result["ci"] == [1.0, 1.0]
    assert probability_of_improvement(worse, better, reps=POI_REPS, points=POINTS)["value"] == 0.0

    close = make_entry(lambda env_id, seed: 2.0 + seed / 4, seeds=range(4))
    np.random.seed(0)
    estimates, intervals = library.get_interval_estimates(
        {"x,y": (score_matrix(close, points=POINTS), score_matrix(worse, points=POINTS))},
        metrics.probability_of_improvement,
        reps=POI_REPS,
    )
    result = probability_of_improvement(close, worse, reps=POI_REPS, points=POINTS)
    assert result == {"value": estimates["x,y"], "ci": list(intervals["x,y"].ravel())}


def test_entries_of_different_boards_are_not_compared():
    with pytest.raises(ScoringError, match="same tasks of the same board"):
        probability_of_improvement(
            make_entry(spread), make_entry(lambda env_id, seed: 1.0, board="grue"), points=POINTS
        )


def test_incomplete_entries_get_per_task_scores_only():
    complete = make_entry(spread)
    assert is_complete(complete)
    missing_task = make_entry(spread)
    del missing_task["tasks"][IMDB]
    missing_run = make_entry(spread)
    missing_run["tasks"][IMDB]["runs"].pop()  # seed 2: seeds 3 and 1 are left
    assert not is_complete(missing_task) and not is_complete(missing_run)

    result = aggregate({"a": missing_task, "b": missing_run}, reps=REPS, points=POINTS)
    assert result["a"]["tasks"] == list(TASKS[1:])
    assert result["a"]["mean"]["value"] == pytest.approx(score_matrix(missing_task, points=POINTS).mean())
    assert result["b"]["mean"] is None and result["b"]["iqm"] is None
    imdb = result["b"]["per_task"][IMDB]
    assert imdb["mean"] == (spread(IMDB, 3) + spread(IMDB, 1)) / 2 / 10 and imdb["num_runs"] == 2
    with pytest.raises(ScoringError, match="different numbers of runs"):
        score_matrix(missing_run, points=POINTS)


@pytest.mark.parametrize("seeds", [(4,), (4, 7)])
def test_entries_with_fewer_than_3_seeds_get_rliable_point_estimates_without_intervals(seeds):
    entry = make_entry(spread, seeds=seeds)
    other = make_entry(lambda env_id, seed: 1.0, seeds=seeds)
    result = aggregate({"smoke run": entry}, reps=REPS, points=POINTS)["smoke run"]
    assert not is_complete(entry) and is_complete(entry, min_runs=1)
    matrix = score_matrix(entry, points=POINTS)
    assert result["mean"]["value"] == pytest.approx(metrics.aggregate_mean(matrix))
    assert result["iqm"]["value"] == pytest.approx(metrics.aggregate_iqm(matrix))
    assert result["per_task"][IMDB]["mean"] == pytest.approx(matrix[:, 0].mean())
    improvement = probability_of_improvement(entry, other, reps=POI_REPS, points=POINTS)
    assert improvement["value"] == metrics.probability_of_improvement(matrix, score_matrix(other, points=POINTS))
    summaries = metric_summaries(entry, reps=REPS)
    assert summaries[IMDB]["mean_sentiment"]["mean"] == pytest.approx(np.mean([spread(IMDB, seed) for seed in seeds]))
    for summary in (
        result["mean"],
        result["iqm"],
        *result["per_task"].values(),
        improvement,
        *summaries[IMDB].values(),
    ):
        assert summary["ci"] is None


def test_metric_summaries_are_means_over_seeds_with_their_bootstrap_intervals():
    entry = make_entry(spread, seeds=(2, 0, 1))
    summaries = metric_summaries(entry, reps=REPS, seed=3)
    assert list(summaries[IMDB]) == ["mean_sentiment", "corpus_distinct_2", "corpus_msttr"]
    summary = summaries[IMDB]["mean_sentiment"]
    assert summary["mean"] == spread(IMDB, 1) and summary["num_runs"] == 3
    values = np.array([[spread(IMDB, seed)] * 3 for seed in (0, 1, 2)])
    np.random.seed(3)
    _, intervals = library.get_interval_estimates({"x": values}, lambda scores: scores.mean(axis=0), reps=REPS)
    assert summary["ci"] == [intervals["x"][0, 0], intervals["x"][1, 0]]


# ---- reference points ----------------------------------------------------------------------


@pytest.mark.parametrize("board", [name for name, board in boards().items() if board.source == "synthetic"])
def test_reference_points_cover_every_metric_of_the_synthetic_boards(board):
    points = load_reference_points(board)
    assert set(points) == set(boards()[board].tasks)
    for env_id in boards()[board].tasks:
        for name in metric_names(env_id, board):
            point = points[env_id][name]
            assert math.isfinite(point["low"]) and math.isfinite(point["high"]) and point["low"] != point["high"], (
                env_id,
                name,
            )
            assert point["low_from"] and point["high_from"]
            assert point["episodes"] in (None, boards()[board].eval_episodes)  # None: both points are bounds


def test_reference_points_file_records_its_provenance():
    block = json.loads(scoring.REFERENCE_POINTS_FILE.read_text())["smoke"]
    assert block["lm_gym_version"] and block["date"] and "git_commit" in block and block["episodes"] == 8
    assert block["env_kwargs"][WORDLE] == {"num_answers": 100}
    assert block["env_kwargs"][IMDB] == {"source": "synthetic", "split": "validation"}
    reddit_return = block["tasks"]["lm_gym/Reddit-v0"]["mean_return"]
    assert (reddit_return["low"], reddit_return["high"], reddit_return["episodes"]) == (-10.0, 0.0, None)


def test_a_tiny_reference_point_measurement():
    points = reference_points.measure_task("lm_gym/Prompts-v0", "smoke")  # 8 episodes, the smoke board's
    assert set(points) == set(metric_names("lm_gym/Prompts-v0"))
    assert 0.0 <= points["mean_return"]["low"] < 1.0 == points["mean_return"]["high"]
    assert points["mean_return"]["low_from"].startswith("random_tokens")
    assert points["corpus_distinct_2"]["low"] == 0.0 and points["corpus_distinct_2"]["high"] > 0.5
    assert all(point["episodes"] == 8 for point in points.values())
