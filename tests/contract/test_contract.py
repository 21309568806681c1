"""Every registered env passes ``lm_gym.testing``'s contract checks, at both action levels and as
native vector envs: Gymnasium's and stable-baselines3's checkers, determinism, random play and bad
input (the checks users run on their own envs; see the README's "Write your own task").

Random play: 2,000 token steps (200 utterances) in the default run, 10,000 (1,000) in the deep run
(``CI`` or ``--run-slow``); a native vector env (3 copies) plays a quarter of those vector steps.
"""

import pytest
from contract_episodes import env_ids, make

from lm_gym.core import TextEnv, TokenLevel
from lm_gym.core.registration import ACTION_LEVELS, NATIVE_VECTOR_LEVELS
from lm_gym.testing import check_text_env, check_vector_env

STEPS, DEEP_STEPS = 2_000, 10_000


def random_steps(level: str, deep_run: bool, vector: bool = False) -> int:
    steps = DEEP_STEPS if deep_run else STEPS
    steps = steps if level == "token" else steps // 10
    return steps // 4 if vector else steps


@pytest.mark.parametrize("level", ACTION_LEVELS)
@pytest.mark.parametrize("env_id", env_ids())
def test_check_text_env(env_id, level, deep_run):
    check_text_env(make(env_id, level), num_steps=random_steps(level, deep_run))


@pytest.mark.parametrize("level", NATIVE_VECTOR_LEVELS)
@pytest.mark.parametrize("env_id", env_ids())
def test_check_vector_env(env_id, level, deep_run):
    check_vector_env(make(env_id, level, "vector"), num_steps=random_steps(level, deep_run, vector=True))


@pytest.mark.parametrize("env_id", env_ids())
def test_each_level_is_that_level_all_the_way_down(env_id):
    utterance_env, token_env = make(env_id, "utterance"), make(env_id, "token")
    assert isinstance(utterance_env.unwrapped, TextEnv)
    assert isinstance(token_env.unwrapped, TokenLevel) and isinstance(token_env.unwrapped.env, TextEnv)
    assert token_env.unwrapped.observation_space is token_env.observation_space
