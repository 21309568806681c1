"""baselines/grpo.py: GRPO and RLOO on single- and multi-turn envs, its advantages, and a learning check
(the shared-prefix passes it relies on are tested with the toolkit, tests/baselines/test_lm_toolkit.py)."""

import math

import gymnasium
import numpy as np
import pytest
from conftest import load_baseline

from lm_gym.results import load_result

GPT2_CONFIG = '{"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2}'
ENVS = {
    "imdb": ("lm_gym/IMDB-v0", '{"source": "synthetic"}'),
    "wordle": ("lm_gym/Wordle-v0", '{"num_answers": 100}'),
    "prompts": ("lm_gym/Prompts-v0", '{"prompt_words": 8, "num_prompts": 64}'),
}


@pytest.fixture(scope="module")
def grpo():
    return load_baseline("grpo")


def run(grpo, out_dir, env="imdb", **overrides):
    env_id, env_kwargs = ENVS[env]
    settings = {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "model_config": GPT2_CONFIG,
        "num_prompts": 4,
        "group_size": 2,
        "iterations": 2,
        "num_minibatches": 2,
        "eval_episodes": 8,
        "eval_batch_size": 8,
        "eval_every": 0,
        "out_dir": str(out_dir),
    }
    return grpo.main(grpo.Args(**{**settings, **overrides}))


@pytest.mark.parametrize(
    ("env", "rloo"),
    [  # each task and each estimator in the default run; the other two pairs in the deep run (12 and 36 s)
        ("imdb", False),
        ("wordle", True),
        pytest.param("imdb", True, marks=pytest.mark.slow),
        pytest.param("wordle", False, marks=pytest.mark.slow),
    ],
)
def test_smoke_training(grpo, env, rloo, tmp_path):
    run(grpo, tmp_path, env=env, rloo=rloo)
    saved = load_result(tmp_path)  # validates against lm_gym.results' schema
    assert saved["samples"] and saved["samples"][0]["return"] == saved["samples"][0]["return"]
    assert saved["algorithm"] == ("rloo" if rloo else "grpo") and saved["env_id"] == ENVS[env][0]
    assert [row["step"] for row in saved["curves"]] == [1, 2]
    assert all(
        math.isfinite(row[key])
        for row in saved["curves"]
        for key in ("pg_loss", "kl_loss", "kl", "mean_return", "rollout_seconds")
    )
    if env == "imdb":  # the task's protocol: EOS impossible before 48 tokens
        assert all(row["response_tokens"] == 48 for row in saved["curves"])
    assert (tmp_path / "checkpoint" / "reference" / "model.safetensors").is_file()
    assert saved["tokens_per_s"] > 0 and saved["episodes_per_s"] > 0 and set(saved["final_eval"]) >= {"mean_return"}


def test_beta_zero_has_no_reference_model(grpo, tmp_path):
    result = run(grpo, tmp_path, beta=0.0)
    assert not (tmp_path / "checkpoint" / "reference").exists()
    assert all(row["kl"] == 0 and row["kl_loss"] == 0 for row in result["curves"])


def test_resume_continues_from_the_checkpoint(grpo, tmp_path):
    first = run(grpo, tmp_path, iterations=1)
    resumed = run(grpo, tmp_path, iterations=3, resume=True)
    assert [row["step"] for row in resumed["curves"]] == [1, 2, 3]
    assert resumed["curves"][0] == first["curves"][0] and resumed["initial_eval"] == first["initial_eval"]


def test_group_advantages(grpo):
    returns = np.array([1.0, 3.0, 0.0, 0.0, 2.0, 4.0])
    np.testing.assert_allclose(grpo.group_advantages(returns, 2, rloo=True, scale_rewards=False), [-2, 2, 0, 0, -2, 2])
    grpo_advantages = grpo.group_advantages(returns, 3, rloo=False, scale_rewards=True)
    np.testing.assert_allclose(grpo_advantages[:3], (returns[:3] - 4 / 3) / (np.std(returns[:3]) + 1e-4))
    np.testing.assert_allclose(grpo.group_advantages(returns, 3, rloo=False, scale_rewards=False)[3:], [-2, 0, 2])


def test_a_group_starts_from_one_prompt_and_game():
    # grpo.py resets a group's envs with one seed
    for env_id, kwargs in (("lm_gym/IMDB-v0", {"source": "synthetic"}), ("lm_gym/Wordle-v0", {"num_answers": 100})):
        venv = gymnasium.make_vec(env_id, num_envs=6, vectorization_mode="vector_entry_point", **kwargs)
        observations, _ = venv.reset(seed=[7, 7, 7, 8, 8, 8])
        assert (
            observations[0] == observations[1] == observations[2]
            and observations[3] == observations[4] == observations[5]
        )
        if env_id.endswith("Wordle-v0"):  # the same hidden word within a group: the same feedback to one guess
            feedback, *_ = venv.step(("crane",) * 6)
            assert feedback[0] == feedback[1] == feedback[2] and feedback[3] == feedback[4] == feedback[5]


@pytest.mark.slow
def test_grpo_learns_a_reward_of_the_text(grpo, tmp_path):
    # Prompts-v0's default reward: the fraction of the completion's words that start with a vowel (0.2 at random)
    result = run(
        grpo,
        tmp_path,
        env="prompts",
        num_prompts=8,
        group_size=4,
        iterations=40,
        num_minibatches=4,
        learning_rate=3e-3,
        beta=0.0,
        eval_episodes=32,
        eval_batch_size=32,
    )
    start, final = result["initial_eval"]["mean_return"], result["final_eval"]["mean_return"]
    assert final > start + 0.15, (start, final)
