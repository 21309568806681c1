"""The benchmark report (benchmark/report.py): grouping, means and rliable CIs over seeds, Markdown, exit codes."""

import json

import numpy as np
import pytest
from rliable import library, metrics

from benchmark import report
from benchmark.__main__ import main as benchmark_cli
from lm_gym.core.errors import LMGymError
from lm_gym.results import make_result, write_result

REPS = 200
SEED = 7

# (env id, algorithm, seed) -> final mean_return; the initial mean_return is 0.1 x seed below.
FINAL_RETURNS = {
    ("lm_gym/IMDB-v0", "ppo", 1): 0.70,
    ("lm_gym/IMDB-v0", "ppo", 2): 0.65,
    ("lm_gym/IMDB-v0", "ppo", 3): 0.74,
    ("lm_gym/IMDB-v0", "sft", 1): 0.49,
    ("lm_gym/Wordle-v0", "ilql", 1): -3.68,
    ("lm_gym/Wordle-v0", "ilql", 2): -4.19,
    ("lm_gym/Wordle-v0", "ilql", 3): -4.23,
}
NO_SENTIMENT = ("lm_gym/IMDB-v0", "ppo", 3)  # the run whose evaluations lack mean_sentiment


def evaluation(mean_return, sentiment):
    values = {"num_episodes": 16, "mean_return": mean_return, "std_return": 0.1}
    return values if sentiment is None else {**values, "mean_sentiment": sentiment}


def write_run(folder, env_id, algorithm, seed, final_return, sentiment=0.5):
    result = make_result(
        env_id=env_id,
        algorithm=algorithm,
        seed=seed,
        config={},
        initial_eval=evaluation(final_return - 0.1 * seed, sentiment),
        final_eval=evaluation(final_return, sentiment),
        curves=[],
        wall_time_s=60.0 * seed,
        tokens_per_s=1000.0 + seed,
        episodes_per_s=2.0,
        peak_memory_mb=512.0,
        checkpoint=None,
        device="cpu",
    )
    return write_result(folder, result)


@pytest.fixture
def runs(tmp_path):
    """A sweep of two tasks, three groups (3, 1 and 3 seeds) and one corrupt result."""
    root = tmp_path / "runs"
    for (env_id, algorithm, seed), final_return in FINAL_RETURNS.items():
        sentiment = None if (env_id, algorithm, seed) == NO_SENTIMENT else 0.5 + seed / 10
        write_run(
            root / env_id.split("/")[1] / algorithm / f"seed{seed}", env_id, algorithm, seed, final_return, sentiment
        )
    (root / "IMDB-v0" / "nlpo" / "seed1").mkdir(parents=True)
    (root / "IMDB-v0" / "nlpo" / "seed1" / "result.json").write_text(
        '{"env_id": "lm_gym/IMDB-v0", '
    )  # killed mid-write
    return root


def rliable_interval(values):
    """The CI computed by calling rliable directly, as the report promises (rliable draws from numpy's global RNG)."""
    np.random.seed(SEED)
    _, intervals = library.get_interval_estimates(
        {"x": np.array(values).reshape(-1, 1)},
        lambda scores: np.array([metrics.aggregate_mean(scores)]),
        reps=REPS,
        confidence_interval_size=0.95,
    )
    return list(intervals["x"][:, 0])


def refuse_constant(name):
    raise ValueError(f"{name} in report.json")


def test_the_report_gives_numpy_means_and_rliable_intervals_per_task_and_algorithm(runs, capsys):
    np.random.seed(123)
    assert benchmark_cli(["report", str(runs), "--reps", str(REPS), "--seed", str(SEED)]) == 0
    assert np.random.randint(1 << 30) == np.random.RandomState(123).randint(1 << 30)  # the global RNG is restored
    written = json.loads((runs / "report.json").read_text(), parse_constant=refuse_constant)
    assert (written["runs_dir"], written["confidence"], written["reps"], written["seed"]) == (
        str(runs),
        0.95,
        REPS,
        SEED,
    )
    assert [item["path"] for item in written["skipped"]] == ["IMDB-v0/nlpo/seed1/result.json"]
    assert list(written["tasks"]) == ["lm_gym/IMDB-v0", "lm_gym/Wordle-v0"]
    assert list(written["tasks"]["lm_gym/IMDB-v0"]) == ["ppo", "sft"]

    ppo = written["tasks"]["lm_gym/IMDB-v0"]["ppo"]
    assert ppo["seeds"] == [1, 2, 3]
    assert ppo["runs"] == [f"IMDB-v0/ppo/seed{seed}/result.json" for seed in (1, 2, 3)]
    names = list(ppo["metrics"])
    assert names[:3] == ["mean_return", "mean_sentiment", "std_return"]  # mean_return first; no num_episodes
    assert names[3:6] == ["initial/mean_return", "initial/mean_sentiment", "initial/std_return"]
    assert names[6:9] == ["gain/mean_return", "gain/mean_sentiment", "gain/std_return"]
    assert names[9:] == ["wall_time_s", "tokens_per_s", "episodes_per_s", "peak_memory_mb"]

    for env_id, algorithm in [("lm_gym/IMDB-v0", "ppo"), ("lm_gym/Wordle-v0", "ilql")]:
        returns = [value for (e, a, _), value in FINAL_RETURNS.items() if (e, a) == (env_id, algorithm)]
        summary = written["tasks"][env_id][algorithm]["metrics"]
        assert summary["mean_return"]["mean"] == pytest.approx(np.mean(returns))
        assert summary["mean_return"]["ci"] == pytest.approx(rliable_interval(returns))
        assert summary["mean_return"]["iqm"] == pytest.approx(metrics.aggregate_iqm(np.array(returns).reshape(-1, 1)))
        assert summary["initial/mean_return"]["mean"] == pytest.approx(np.mean(returns) - 0.2)
        assert summary["gain/mean_return"]["mean"] == pytest.approx(0.2)  # per seed: 0.1, 0.2, 0.3
        assert summary["gain/mean_return"]["ci"] == pytest.approx(rliable_interval([0.1, 0.2, 0.3]))
        assert summary["wall_time_s"]["mean"] == pytest.approx(120.0)
        assert summary["wall_time_s"]["ci"] == pytest.approx(rliable_interval([60.0, 120.0, 180.0]))
        assert summary["mean_return"]["num_seeds"] == 3

    # seed 3 has no mean_sentiment: computed over seeds 1 and 2 only
    sentiment = ppo["metrics"]["mean_sentiment"]
    assert sentiment["num_seeds"] == 2 and sentiment["mean"] == pytest.approx(0.65)
    assert sentiment["ci"] == pytest.approx(rliable_interval([0.6, 0.7]))

    # one seed: the interval is the point
    sft = written["tasks"]["lm_gym/IMDB-v0"]["sft"]["metrics"]["mean_return"]
    assert sft == {"mean": 0.49, "iqm": 0.49, "ci": [0.49, 0.49], "num_seeds": 1}

    out, err = capsys.readouterr()
    assert "IMDB-v0/nlpo/seed1/result.json" in err and "cannot read" in err
    assert out == (runs / "report.md").read_text()
    assert not list(runs.glob("*.tmp"))


def test_the_markdown_has_a_table_per_task_with_intervals_and_marks_one_seed(runs, capsys):
    assert benchmark_cli(["report", str(runs), "--reps", str(REPS), "--seed", str(SEED)]) == 0
    markdown = capsys.readouterr().out
    written = json.loads((runs / "report.json").read_text())
    ppo = written["tasks"]["lm_gym/IMDB-v0"]["ppo"]["metrics"]["mean_return"]
    low, high = ppo["ci"]

    assert "## lm_gym/IMDB-v0" in markdown and "## lm_gym/Wordle-v0" in markdown
    assert (
        "| algorithm | seeds | mean_return | mean_sentiment | initial/mean_return | gain/mean_return | wall_time_s |"
        in markdown
    )
    assert f"| ppo | 3 | {ppo['mean']:.3f} [{low:.3f}, {high:.3f}] | 0.650 [" in markdown
    assert "(2 of 3 seeds)" in markdown
    assert "| sft | 1 | 0.490 |" in markdown  # one seed: no interval, the seeds column says why
    assert "| ilql | 3 | -4.033 [" in markdown
    assert "Skipped 1 invalid result file(s)" in markdown


def test_metrics_restricts_the_columns_and_out_picks_the_folder(runs, tmp_path, capsys):
    out = tmp_path / "elsewhere"
    assert benchmark_cli(["report", str(runs), "--out", str(out), "--metrics", "std_return", "--reps", "50"]) == 0
    markdown = capsys.readouterr().out
    assert (
        "| algorithm | seeds | mean_return | std_return | initial/mean_return | gain/mean_return | wall_time_s |"
        in markdown
    )
    assert "mean_sentiment" not in markdown
    assert (out / "report.md").read_text() == markdown and (out / "report.json").is_file()
    assert not (runs / "report.json").exists()

    assert benchmark_cli(["report", str(runs), "--metrics", "mean_nonsense"]) == 2
    assert "mean_nonsense" in capsys.readouterr().err


def test_a_duplicated_seed_is_refused_naming_both_files(runs, capsys):
    write_run(runs / "IMDB-v0" / "ppo" / "seed1-again", "lm_gym/IMDB-v0", "ppo", 1, 0.9)
    assert benchmark_cli(["report", str(runs), "--reps", "50"]) == 2
    err = capsys.readouterr().err
    assert "IMDB-v0/ppo/seed1/result.json" in err and "IMDB-v0/ppo/seed1-again/result.json" in err
    assert not (runs / "report.json").exists()

    collected, _ = report.collect_results(runs)
    with pytest.raises(report.DuplicateSeedError, match="seed 1 appears twice") as raised:
        report.summarize(collected, reps=50)
    assert isinstance(raised.value, LMGymError) and isinstance(raised.value, ValueError)


def test_runs_without_evaluation_report_their_performance_only(tmp_path, capsys):
    result = make_result(
        env_id="lm_gym/IMDB-v0",
        algorithm="sft",
        seed=1,
        config={},
        initial_eval=None,
        final_eval=None,
        curves=[],
        wall_time_s=0.0,
        tokens_per_s=0.0,
        episodes_per_s=0.0,
        peak_memory_mb=0.0,
        checkpoint=None,
        device="cpu",
    )
    write_result(tmp_path / "a", result)
    write_run(tmp_path / "b", "lm_gym/IMDB-v0", "sft", 2, 0.5)
    assert benchmark_cli(["report", str(tmp_path), "--reps", "50"]) == 0
    summary = json.loads((tmp_path / "report.json").read_text())["tasks"]["lm_gym/IMDB-v0"]["sft"]["metrics"]
    assert summary["mean_return"]["num_seeds"] == 1 and summary["mean_return"]["ci"] == [0.5, 0.5]
    assert summary["wall_time_s"]["num_seeds"] == 2 and summary["wall_time_s"]["mean"] == 60.0
    assert "| sft | 2 | 0.500 (1 seed) |" in capsys.readouterr().out


def test_an_empty_folder_exits_1_and_a_missing_one_exits_2(tmp_path, capsys):
    assert benchmark_cli(["report", str(tmp_path)]) == 1
    assert "nothing to report" in capsys.readouterr().err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "result.json").write_text("{}")
    assert benchmark_cli(["report", str(tmp_path)]) == 1
    assert "1 skipped" in capsys.readouterr().err
    missing = tmp_path / "no-such-folder"
    assert benchmark_cli(["report", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "report.json").exists()
