"""PPO and GRPO train on ``lm_gym/Mixture-v0``; result.json holds each task's results (``tasks``)."""

import json

import pytest
from conftest import load_baseline

from lm_gym.results import load_result, task_evaluations

GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}'
TASKS = {"lm_gym/IMDB-v0": 1.0, "lm_gym/Wordle-v0": 1.0}
ENV_KWARGS = json.dumps({"tasks": TASKS, "task_kwargs": {"lm_gym/IMDB-v0": {"source": "synthetic"}}})
COMMON = {
    "env_id": "lm_gym/Mixture-v0",
    "env_kwargs": ENV_KWARGS,
    "model_config": GPT2_CONFIG,
    "iterations": 2,
    "num_minibatches": 2,
    "eval_episodes": 12,
    "eval_batch_size": 12,
    "eval_every": 0,
}
SETTINGS = {
    "ppo": {"num_envs": 8, "update_epochs": 1},
    "grpo": {"num_prompts": 4, "group_size": 2},
}


@pytest.mark.parametrize("algorithm", ["ppo", "grpo"])
def test_baseline_trains_on_a_mixture_and_reports_each_task(algorithm, tmp_path):
    baseline = load_baseline(algorithm)
    baseline.main(baseline.Args(**COMMON, **SETTINGS[algorithm], out_dir=str(tmp_path)))
    saved = load_result(tmp_path)  # validates the "tasks" field against lm_gym.results' schema
    assert saved["env_id"] == "lm_gym/Mixture-v0" and set(saved["tasks"]) == set(TASKS)
    counts = 0
    for evaluations in saved["tasks"].values():
        final, initial = evaluations["final_eval"], evaluations["initial_eval"]
        assert set(final) == set(initial) and {"num_episodes", "mean_return"} <= set(final)
        counts += final["num_episodes"]
    assert counts == saved["final_eval"]["num_episodes"] == 12
    assert "mean_sentiment" in saved["tasks"]["lm_gym/IMDB-v0"]["final_eval"]
    assert "mean_solved" in saved["tasks"]["lm_gym/Wordle-v0"]["final_eval"]
    assert "corpus_distinct_2" in saved["tasks"]["lm_gym/IMDB-v0"]["final_eval"]
    assert all("/" not in key for key in saved["final_eval"])  # the tasks' entries moved to "tasks"
    assert any(key.startswith("eval/lm_gym/IMDB-v0/") for key in saved["curves"][-1])  # per-task curves


def test_task_evaluations_splits_the_entries_of_each_task():
    whole, tasks = task_evaluations({"mean_return": 0.5, "lm_gym/IMDB-v0/mean_return": 0.7, "a/B-v0/corpus_x": 1.0})
    assert whole == {"mean_return": 0.5}
    assert tasks == {"lm_gym/IMDB-v0": {"mean_return": 0.7}, "a/B-v0": {"corpus_x": 1.0}}
    assert task_evaluations(None) == (None, {})
