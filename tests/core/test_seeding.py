"""Same seed, same episodes (Gymnasium seeding semantics)."""

import gymnasium
import numpy as np


def play(env, seed, episodes=5):
    prompts = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        prompts.append(obs)
        env.step("a fine film")
        obs, _ = env.reset()
    return prompts


def test_same_seed_same_episodes(imdb_env):
    other = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
    assert play(imdb_env, 123) == play(other, 123)
    assert play(imdb_env, 123) != play(imdb_env, 124)


def test_same_seed_same_token_level_observations(imdb_token_env):
    first, _ = imdb_token_env.reset(seed=5)
    again, _ = imdb_token_env.reset(seed=5)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])


def test_same_seed_same_rewards(imdb_env):
    rewards = []
    for _ in range(2):
        imdb_env.reset(seed=9)
        rewards.append(imdb_env.step("the soundtrack was lovely")[1])
    assert rewards[0] == rewards[1]
