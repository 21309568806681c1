"""stable-baselines3 on the native token-level vector env (:mod:`lm_gym.integrations.sb3`): SB3's
autoreset and terminal observations, PPO and sb3-contrib's MaskablePPO training on it."""

import gymnasium
import numpy as np
import pytest
from stable_baselines3.common.logger import Logger

from lm_gym.core.errors import ConfigurationError
from lm_gym.core.tokenizer import word_tokenizer

TINY_WORDS = ("apple", "egg", "ice", "oak", "up", "big", "cat", "dog", "red", "sun", "tree", "moon")


def tiny_prompts_kwargs():
    """Prompts-v0 on a tokenizer of 15 ids (ids 3, 4, 5 ... are TINY_WORDS), so SB3's networks are tiny."""
    prompts = [" ".join(TINY_WORDS[i : i + 5]) for i in range(len(TINY_WORDS) - 5)]
    return {"prompts": prompts, "tokenizer": word_tokenizer(TINY_WORDS, "test-tiny-words"), "max_prompt_length": 8}


def test_sb3_vec_env_autoresets_with_terminal_observations():
    from lm_gym.integrations.sb3 import SB3VecEnv, make_sb3_vec_env

    vec_env = make_sb3_vec_env("lm_gym/Prompts-v0", 2, max_new_tokens=2, **tiny_prompts_kwargs())
    vec_env.seed(3)
    observations = vec_env.reset()
    assert observations["context_ids"].shape == (2, 2) and vec_env.reset_infos[1]["prompt"]
    _, rewards, dones, infos = vec_env.step(np.array([3, 4]))
    assert not dones.any() and rewards.dtype == np.float32 and infos == [{"TimeLimit.truncated": False}] * 2
    observations, rewards, dones, infos = vec_env.step(np.array([5, 6]))
    assert dones.all() and observations["context_mask"].sum() == 0
    terminal = infos[0]["terminal_observation"]
    assert terminal["context_mask"].sum() == 0 and terminal["prompt_ids"][-2:].tolist() == [3, 5]  # "... apple ice"
    assert infos[0]["utterance"] == "apple ice" and infos[0]["num_tokens"] == 2 and "metrics" in infos[0]
    assert not infos[0]["TimeLimit.truncated"] and "prompt" in vec_env.reset_infos[0]
    assert vec_env.get_attr("max_new_tokens") == [2, 2] and vec_env.get_attr("split", indices=1) == ["train"]
    assert vec_env.has_attr("action_masks") and np.stack(vec_env.env_method("action_masks")).shape == (
        2,
        vec_env.venv.vocab_size,
    )
    assert vec_env.env_is_wrapped(gymnasium.Wrapper) == [False, False]
    with pytest.raises(ConfigurationError, match="SameStep"):
        SB3VecEnv(
            gymnasium.make_vec(
                "lm_gym/Prompts-v0",
                2,
                vectorization_mode="vector_entry_point",
                action_level="token",
                max_new_tokens=6,
                **tiny_prompts_kwargs(),
            )
        )


def test_sb3_ppo_trains_on_the_token_vector_env():
    from stable_baselines3 import PPO

    from lm_gym.integrations.sb3 import make_sb3_vec_env

    vec_env = make_sb3_vec_env("lm_gym/Prompts-v0", 4, max_new_tokens=4, **tiny_prompts_kwargs())
    model = PPO(
        "MultiInputPolicy",
        vec_env,
        n_steps=8,
        batch_size=16,
        n_epochs=1,
        policy_kwargs={"net_arch": [16]},
        seed=0,
        device="cpu",
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger leaves an SB3-<time> folder in /tmp
    model.learn(total_timesteps=64)
    assert model.num_timesteps == 64


def test_maskable_ppo_reads_the_action_masks():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from lm_gym.integrations.sb3 import make_sb3_vec_env

    vec_env = make_sb3_vec_env("lm_gym/Prompts-v0", 4, max_new_tokens=4, min_new_tokens=2, **tiny_prompts_kwargs())
    model = sb3_contrib.MaskablePPO(
        "MultiInputPolicy", vec_env, n_steps=8, batch_size=16, n_epochs=1, seed=0, device="cpu"
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger leaves an SB3-<time> folder in /tmp
    model.learn(total_timesteps=64)
    assert model.num_timesteps == 64
