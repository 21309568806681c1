"""The native batched vector env: batching, one reward call per step, seeds, autoreset."""

import gymnasium
import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError
from lm_gym.core.vector import TextVectorEnv

UTTERANCES = ("a wonderful film", "a dull and tedious mess", "", "the cast was superb, the script awful")


def make_vec(**kwargs):
    return gymnasium.make_vec(
        "lm_gym/IMDB-v0", num_envs=4, vectorization_mode="vector_entry_point", source="synthetic", **kwargs
    )


class CountingReward:
    def __init__(self, reward_fn):
        self.reward_fn, self.batch_sizes = reward_fn, []

    def __call__(self, prompts, utterances, references, meta):
        self.batch_sizes.append(len(utterances))
        return self.reward_fn(prompts, utterances, references, meta)


def test_make_vec_returns_batched_observations_and_one_reward_per_env():
    venv = make_vec()
    assert isinstance(venv, TextVectorEnv)
    observations, infos = venv.reset(seed=7)
    assert len(observations) == 4 and all(isinstance(o, str) for o in observations)
    assert infos["_prompt"].all() and list(infos["prompt"]) == list(observations)
    _, rewards, terminations, truncations, infos = venv.step(UTTERANCES)
    assert rewards.shape == (4,) and rewards.dtype == np.float64
    assert terminations.all() and not truncations.any()
    assert list(infos["utterance"]) == list(UTTERANCES)


def test_all_envs_are_scored_with_one_batched_reward_call():
    venv = make_vec()
    counter = CountingReward(venv.envs[0].reward_fn)
    for env in venv.envs:
        env.reward_fn = counter
    venv.reset(seed=0)
    venv.step(UTTERANCES)
    assert counter.batch_sizes == [4]


def test_vector_rewards_equal_the_scalar_env_for_the_same_seeds():
    venv = make_vec()
    observations, _ = venv.reset(seed=11)
    _, rewards, *_ = venv.step(UTTERANCES)
    scalar = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
    for i, utterance in enumerate(UTTERANCES):
        obs, _ = scalar.reset(seed=11 + i)
        assert obs == observations[i]
        _, reward, *_ = scalar.step(utterance)
        assert reward == pytest.approx(rewards[i], rel=1e-6, abs=1e-9)


def test_next_step_autoreset_ignores_the_action_and_resets():
    venv = make_vec()
    venv.reset(seed=0)
    venv.step(UTTERANCES)
    observations, rewards, terminations, _, infos = venv.step(UTTERANCES)
    assert not terminations.any() and (rewards == 0).all()
    assert list(infos["prompt"]) == list(observations)
    _, rewards, terminations, _, _ = venv.step(UTTERANCES)
    assert terminations.all()


def test_same_step_autoreset_reports_the_final_observation():
    venv = make_vec(autoreset_mode="SameStep")
    first, _ = venv.reset(seed=0)
    observations, _, terminations, _, infos = venv.step(UTTERANCES)
    assert terminations.all()
    assert infos["final_obs"][0] == first[0] + " " + UTTERANCES[0]
    assert infos["final_info"]["utterance"][0] == UTTERANCES[0]
    assert list(infos["prompt"]) == list(observations)
    _, _, terminations, _, _ = venv.step(UTTERANCES)
    assert terminations.all()


def test_disabled_autoreset_needs_an_explicit_reset():
    venv = make_vec(autoreset_mode="Disabled")
    venv.reset(seed=0)
    venv.step(UTTERANCES)
    with pytest.raises(ResetNeededError):
        venv.step(UTTERANCES)
    venv.reset(options={"reset_mask": np.ones(4, dtype=bool)})
    _, _, terminations, _, _ = venv.step(UTTERANCES)
    assert terminations.all()


def test_bad_actions_raise_before_any_env_changes():
    venv = make_vec()
    observations, _ = venv.reset(seed=3)
    with pytest.raises(InvalidActionError):
        venv.step(UTTERANCES[:3])
    with pytest.raises(InvalidActionError):
        venv.step("a single string")
    with pytest.raises(InvalidActionError):
        venv.step(("fine", "fine", 42, "fine"))
    _, rewards, terminations, _, _ = venv.step(UTTERANCES)  # nothing was lost
    assert terminations.all()
    assert all(env.current_sample.prompt == observations[i] for i, env in enumerate(venv.envs))


def test_step_before_reset_and_bad_arguments():
    venv = make_vec()
    with pytest.raises(ResetNeededError):
        venv.step(UTTERANCES)
    with pytest.raises(ConfigurationError):
        make_vec(autoreset_mode="Sometimes")


def test_token_level_vectorizes_with_sync_mode():
    venv = gymnasium.make_vec(
        "lm_gym/IMDB-v0", num_envs=2, vectorization_mode="sync", source="synthetic", action_level="token"
    )
    observations, _ = venv.reset(seed=0)
    assert observations["prompt_ids"].shape == (2, 64)
    observations, rewards, *_ = venv.step(np.array([5, 6]))
    assert observations["context_mask"][:, 0].tolist() == [1, 1] and rewards.shape == (2,)
