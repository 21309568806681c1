"""The baselines on tasks written elsewhere (tests/user_tasks.py), named in Gymnasium's "module:env_id"
form as a user names them: SFT, PPO, ILQL and GRPO train, and their result.json records the registered id."""

import pytest
from conftest import load_baseline

from lm_gym.results import load_result

GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}'
COMMON = {"model_config": GPT2_CONFIG, "eval_episodes": 4, "eval_batch_size": 4}
RUNS = {
    "ppo": ("user/CountUp-v0", {"num_envs": 4, "iterations": 2, "num_minibatches": 2, "eval_every": 0}),
    "grpo": ("user/SayTheWord-v0", {"num_prompts": 4, "group_size": 2, "iterations": 2, "eval_every": 0}),
    "sft": ("user/Echo-v0", {"batch_size": 4, "max_examples": 16, "max_steps": 2}),
    "ilql": ("user/Echo-v0", {"batch_size": 4, "max_trajectories": 16, "max_steps": 2, "warmup_steps": 1}),
}


@pytest.mark.parametrize("algorithm", RUNS)
def test_a_baseline_trains_on_a_users_task_named_module_colon_id(algorithm, tmp_path):
    env_id, settings = RUNS[algorithm]
    baseline = load_baseline(algorithm)
    args = baseline.Args(env_id=f"user_tasks:{env_id}", out_dir=str(tmp_path), **COMMON, **settings)
    baseline.main(args)
    saved = load_result(tmp_path)
    assert saved["env_id"] == env_id and saved["config"]["env_id"] == f"user_tasks:{env_id}"
    metric = {"user/CountUp-v0": "mean_hits", "user/SayTheWord-v0": "mean_said", "user/Echo-v0": "mean_reward"}[env_id]
    assert metric in saved["final_eval"] and saved["final_eval"]["num_episodes"] == 4
