"""IMDB at both action levels: the Gymnasium and SB3 env contracts, rewards, info."""

import gymnasium
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.monitor import Monitor

from lm_gym.core.errors import DataUnavailableError


def test_import_registers_imdb():
    spec = gymnasium.spec("lm_gym/IMDB-v0")
    assert spec.vector_entry_point is not None


def test_default_source_is_the_hub_and_fails_offline_naming_the_switch():
    with pytest.raises(DataUnavailableError, match="source='synthetic'"):
        gymnasium.make("lm_gym/IMDB-v0")


def test_utterance_episode(imdb_env):
    obs, info = imdb_env.reset(seed=0)
    assert isinstance(obs, str) and obs == info["prompt"]
    assert info["meta"]["label"] in ("positive", "negative")
    assert len(info["references"]) == 1 and info["references"][0]
    obs2, reward, terminated, truncated, info2 = imdb_env.step("a wonderful film")
    assert terminated and not truncated
    assert 0.0 <= reward <= 1.0
    assert obs2 == obs + " a wonderful film"
    assert info2["metrics"] == {"sentiment": reward, "num_words": 3}
    assert info2["utterance"] == "a wonderful film"


def test_reward_prefers_positive_continuations(imdb_env):
    imdb_env.reset(seed=1)
    _, positive, *_ = imdb_env.step("The acting was brilliant and the ending was wonderful. A superb, moving film.")
    imdb_env.reset(seed=1)
    _, negative, *_ = imdb_env.step("The acting was awful and the ending was boring. A dull, tedious film.")
    assert positive > 0.8 and negative < 0.2


def test_token_level_spaces(imdb_token_env):
    space = imdb_token_env.observation_space
    assert space["prompt_ids"].shape == (64,) and space["context_ids"].shape == (48,)
    assert imdb_token_env.action_space.n == len(imdb_token_env.unwrapped.tokenizer)
    tokenizer = imdb_token_env.unwrapped.tokenizer
    for seed in range(10):
        obs, info = imdb_token_env.reset(seed=seed)
        prompt_ids = tokenizer(info["prompt"], add_special_tokens=False)["input_ids"]
        kept = min(64, len(prompt_ids))  # the prompt's last 64 tokens, left-padded
        assert obs["prompt_mask"].sum() == kept and obs["prompt_mask"][-kept:].all()
        assert obs["prompt_ids"][-kept:].tolist() == prompt_ids[-kept:]
        assert obs["context_mask"].sum() == 0


def test_token_level_episode_decodes_the_utterance():
    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token", min_new_tokens=0)
    tokenizer = env.unwrapped.tokenizer
    ids = tokenizer(" a wonderful film", add_special_tokens=False)["input_ids"]
    env.reset(seed=0)
    for token in ids:
        obs, reward, terminated, truncated, info = env.step(token)
        assert reward == 0.0 and not terminated and list(info) == ["action_mask"]
    assert obs["context_ids"][: len(ids)].tolist() == ids
    obs, reward, terminated, truncated, info = env.step(tokenizer.eos_token_id)
    assert terminated and info["utterance"] == " a wonderful film" and info["num_tokens"] == len(ids)
    assert reward == pytest.approx(info["metrics"]["sentiment"]) and "early_eos" not in info


def test_token_level_length_limit_ends_the_utterance(imdb_token_env):
    imdb_token_env.reset(seed=0)
    token = imdb_token_env.unwrapped.tokenizer(" good", add_special_tokens=False)["input_ids"][0]
    for step in range(48):
        _, _, terminated, _, info = imdb_token_env.step(token)
        assert terminated == (step == 47)
    assert info["num_tokens"] == 48


def test_sb3_ppo_trains_a_few_hundred_steps(imdb_token_env):
    env = Monitor(imdb_token_env)
    model = PPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger leaves an SB3-<time> folder in /tmp
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    episode_rewards = [episode["r"] for episode in model.ep_info_buffer]
    assert episode_rewards and all(0.0 <= r <= 1.0 for r in episode_rewards)
