"""PPO and GRPO train on ``lm_gym/Mixture-v0``; result.json holds each task's results (``tasks``)."""

import json

import pytest
from conftest import load_baseline

from lm_gym.results import load_result
from lm_gym.results.evaluation import Evaluation

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
    final = Evaluation.of_result(saved)  # read back into the evaluation it was written from
    assert final.summary == saved["final_eval"] and set(final.tasks) == set(TASKS) and final.samples
    assert {f"eval/{task}/{key}" for task in final.tasks for key in final.tasks[task]} <= set(saved["curves"][-1])


def test_report_shows_a_row_per_task(tmp_path):
    from benchmark import report
    from lm_gym.results import make_result, write_result

    def evaluation(mean_return, **metrics):
        return {"num_episodes": 8, "mean_return": mean_return, "std_return": 0.1, **metrics}

    for seed in (1, 2):
        tasks = {
            "lm_gym/IMDB-v0": {
                "initial_eval": evaluation(0.4, mean_sentiment=0.4),
                "final_eval": evaluation(0.5 + seed / 10, mean_sentiment=0.6),
            },
            "lm_gym/Wordle-v0": {"initial_eval": evaluation(-6.0), "final_eval": evaluation(-5.0)},
        }
        result = make_result(
            env_id="lm_gym/Mixture-v0", algorithm="ppo", seed=seed, config={},
            initial_eval=evaluation(-2.8), final_eval=evaluation(-2.2), curves=[], wall_time_s=1.0,
            tokens_per_s=1.0, episodes_per_s=1.0, peak_memory_mb=1.0, checkpoint=None, device="cpu", tasks=tasks,
        )  # fmt: skip
        write_result(tmp_path / f"seed{seed}", result)
    runs, skipped = report.collect_results(tmp_path)
    summary = report.summarize(runs, reps=50)
    group = summary["lm_gym/Mixture-v0"]["ppo"]
    assert group["metrics"]["mean_return"]["mean"] == pytest.approx(-2.2)
    assert not any("/" in name.removeprefix("initial/").removeprefix("gain/") for name in group["metrics"])
    assert group["tasks"]["lm_gym/IMDB-v0"]["mean_return"]["mean"] == pytest.approx(0.65)
    assert group["tasks"]["lm_gym/Wordle-v0"]["gain/mean_return"]["mean"] == pytest.approx(1.0)
    markdown = report.to_markdown({"runs_dir": "x", "confidence": 0.95, "reps": 50, "seed": 0, "skipped": skipped,
                                   "tasks": summary})  # fmt: skip
    assert "### lm_gym/Mixture-v0: each task" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| ppo | lm_gym/")]
    assert len(rows) == 2 and "mean_sentiment 0.600" in rows[0] and "-6.000" in rows[1]
