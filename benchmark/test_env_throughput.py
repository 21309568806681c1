"""Throughput of the IMDB env: token-level steps/s and vector-env episodes/s.

Not part of the default test run (``testpaths = tests``). Run:

    python -m pytest benchmark --benchmark-columns=mean,ops,rounds

``ops`` is steps/s for the token-level benchmark and batched steps/s for the vector env
(multiply by the number of envs for episodes/s; ``extra_info`` reports it directly).
"""

import gymnasium
import numpy as np
import pytest

import lm_gym  # noqa: F401

STEPS_PER_ROUND = 480  # ten 48-token episodes


@pytest.fixture(scope="module")
def token_env():
    return gymnasium.make("lm_gym/IMDB-v0", source="synthetic", action_level="token")


def test_token_level_steps_per_second(benchmark, token_env):
    rng = np.random.default_rng(0)
    eos = token_env.unwrapped.eos_token_id
    actions = rng.integers(0, token_env.action_space.n, size=STEPS_PER_ROUND)
    actions[actions == eos] = eos + 1

    def play():
        token_env.reset(seed=0)
        for action in actions:
            _, _, terminated, truncated, _ = token_env.step(action)
            if terminated or truncated:
                token_env.reset()

    benchmark.pedantic(play, rounds=5, warmup_rounds=1)
    benchmark.extra_info["token_steps_per_s"] = STEPS_PER_ROUND / benchmark.stats["mean"]


@pytest.mark.parametrize("num_envs", [1, 16, 64])
def test_vector_env_episodes_per_second(benchmark, num_envs):
    venv = gymnasium.make_vec(
        "lm_gym/IMDB-v0",
        num_envs=num_envs,
        vectorization_mode="vector_entry_point",
        source="synthetic",
        autoreset_mode="SameStep",
    )
    venv.reset(seed=0)
    words = " ".join(env.samples[i].references[0] for env in venv.envs[:1] for i in range(100)).split()
    rng = np.random.default_rng(0)
    utterances = [" ".join(rng.choice(words, size=36)) for _ in range(num_envs)]

    benchmark(venv.step, utterances)
    benchmark.extra_info["episodes_per_s"] = num_envs / benchmark.stats["mean"]
