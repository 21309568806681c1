"""The statistics shared by the benchmark report and the leaderboard (lm_gym/results/stats.py).

Every expected interval is rliable called directly after ``np.random.seed``, as the module promises;
the report and the board must give the same numbers for the same scores.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rliable import library, metrics

from benchmark import report
from leaderboard import scoring
from leaderboard.boards import task_metrics
from leaderboard.compile import to_markdown
from lm_gym.results import stats

REPS = 200
SEED = 11
BOARD = "smoke"
WORDLE = "lm_gym/Wordle-v0"


def rliable_directly(scores, func, seed=SEED, reps=REPS):
    np.random.seed(seed)
    estimates, intervals = library.get_interval_estimates({"x": scores}, func, reps=reps, confidence_interval_size=0.95)
    values, (lows, highs) = np.atleast_1d(estimates["x"]), intervals["x"].reshape(2, -1)
    return [{"value": float(v), "ci": [float(low), float(high)]} for v, low, high in zip(values, lows, highs)]


def test_interval_estimates_equal_rliable_called_directly_and_leave_the_global_rng_as_it_was():
    scores = np.random.default_rng(0).normal(size=(6, 3))
    np.random.seed(123)
    estimates = stats.interval_estimates(scores, stats.mean_and_iqm_estimates, reps=REPS, confidence=0.95, seed=SEED)
    assert np.random.randint(1 << 30) == np.random.RandomState(123).randint(1 << 30)
    assert estimates == rliable_directly(
        scores, lambda x: np.array([metrics.aggregate_mean(x), metrics.aggregate_iqm(x)])
    )
    assert estimates[1]["value"] == stats.iqm(scores) == metrics.aggregate_iqm(scores)
    # one interval per column from one stratified bootstrap
    per_column = stats.interval_estimates(scores, stats.column_means, reps=REPS, confidence=0.95, seed=SEED)
    assert per_column == rliable_directly(scores, lambda s: s.mean(axis=0))
    # a pair of matrices, resampled independently
    other = np.random.default_rng(1).normal(size=(4, 3))
    (improvement,) = stats.interval_estimates(
        (scores, other), stats.probability_of_improvement, reps=50, confidence=0.95, seed=SEED
    )
    np.random.seed(SEED)
    pair = {"x": (scores, other)}
    estimate, interval = library.get_interval_estimates(pair, metrics.probability_of_improvement, reps=50)
    assert improvement == {"value": estimate["x"], "ci": list(interval["x"].ravel())}


def test_below_min_runs_the_estimate_is_the_point_alone():
    scores = np.array([[1.0, 2.0], [3.0, 5.0]])
    assert stats.interval_estimates(scores, stats.mean_estimate, reps=REPS, confidence=0.95, seed=0, min_runs=3) == [
        {"value": 2.75, "ci": None}
    ]
    one_run, two_runs = (
        stats.interval_estimates(stats.column(values), stats.mean_estimate, reps=REPS, confidence=0.95, seed=0)[0]
        for values in ([0.25], [0.25, 0.5])
    )
    assert one_run == {"value": 0.25, "ci": None}  # the default min_runs: nothing to resample in one run
    assert two_runs["ci"] is not None


def wordle_entry(scores):
    """A smoke-board entry whose Wordle run of seed k has every metric at ``scores[k]`` (task score: that value)."""
    names = (*task_metrics()[WORDLE].task, *task_metrics()[WORDLE].naturalness)
    runs = [{"seed": seed, "final_eval": dict.fromkeys(names, value)} for seed, value in enumerate(scores)]
    points = {WORDLE: {name: {"low": 0.0, "high": 1.0} for name in names}}
    return {"board": BOARD, "tasks": {WORDLE: {"runs": runs}}}, points


@pytest.mark.parametrize("scores", [[0.1, 0.5, 0.45, 0.9, 0.3], [0.2, 0.4, 0.7]])
def test_the_report_and_the_board_give_identical_intervals_for_the_same_scores(scores):
    entry, points = wordle_entry(scores)
    board = scoring.aggregate({"x": entry}, reps=REPS, seed=SEED, points=points)["x"]["per_task"][WORDLE]
    summary = report.summarize_metric(scores, confidence=0.95, reps=REPS, seed=SEED)
    (direct,) = rliable_directly(stats.column(scores), lambda s: np.array([metrics.aggregate_mean(s)]))
    assert board["ci"] == summary["ci"] == direct["ci"]
    assert board["mean"] == summary["mean"]
    assert summary["iqm"] == metrics.aggregate_iqm(stats.column(scores))


def test_the_report_and_the_board_write_their_tables_with_one_writer():
    header = ["entry", "a|b", "<c>"]
    assert stats.markdown_table(header, [["x & y", "1", "line\nbreak"]]) == [
        "| entry | a\\|b | &lt;c&gt; |",
        "|---|---|---|",
        "| x &amp; y | 1 | line break |",
    ]
    assert stats.markdown_table(["", "a"], [["b", "c"]])[0] == "| | a |"  # the improvement matrix's corner
    assert stats.format_estimate(0.5, [0.25, 0.75], "{:.2f}".format) == "0.50 [0.25, 0.75]"
    assert stats.format_estimate(0.5, None, "{:.2f}".format) == "0.50"
    data = {
        "board": {"name": "smoke", "description": "a <b>"},
        "statistics": "s",
        "tasks": [],
        "metrics": {},
        "improvement": {"entries": []},
        "entries": [
            {
                "name": "n|1",
                "kind": "trained",
                "sampling": {},
                "method": "m",
                "model": "<x>",
                "seeds": [1],
                "overall": {
                    key: {"value": 0.5, "ci": None, "n": 1} for key in ("task_iqm", "task_mean", "naturalness_iqm")
                },
            }
        ],
    }
    assert (
        "| n\\|1 | m | &lt;x&gt; | 1 | 0.500 (n=1) | 0.500 (n=1) | 0.500 (n=1) | not verified |"
        in to_markdown(data).splitlines()
    )


def test_a_missing_rliable_names_the_extra_that_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "rliable", None)  # import rliable now fails
    with pytest.raises(ImportError, match=r'pip install "lm-gym\[benchmark\]"'):
        stats.iqm(np.ones((3, 1)))


def test_importing_the_module_or_the_report_does_not_import_rliable():
    code = "import sys, lm_gym.results.stats, benchmark.report; assert 'rliable' not in sys.modules, 'rliable imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
