"""Gymnasium's and stable-baselines3's env checkers, on the made env and on ``env.unwrapped``."""

import warnings

import pytest
from contract_episodes import env_ids, make
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from lm_gym.core import TextEnv, TokenLevel
from lm_gym.core.registration import ACTION_LEVELS

# Gymnasium's check_env says this of every env that make() wraps (OrderEnforcing,
# PassiveEnvChecker), whatever the env; any other warning fails the contract.
WRAPPED_NOTE = "is different from the unwrapped version"


def assert_no_warnings(check, env, allowed: tuple[str, ...] = ()) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(env)
    unexpected = [str(w.message) for w in caught if not any(note in str(w.message) for note in allowed)]
    assert not unexpected, unexpected


@pytest.mark.parametrize("level", ACTION_LEVELS)
@pytest.mark.parametrize("env_id", env_ids())
def test_gymnasium_check_env(env_id, level):
    env = make(env_id, level)
    assert_no_warnings(gymnasium_check_env, env.unwrapped)
    assert_no_warnings(gymnasium_check_env, env, allowed=(WRAPPED_NOTE,))


@pytest.mark.parametrize("env_id", env_ids())
def test_sb3_check_env_at_token_level(env_id):
    # SB3 supports no Text spaces, so its checker applies to the token level only.
    env = make(env_id, "token")
    assert_no_warnings(lambda e: sb3_check_env(e, warn=True), env.unwrapped)
    assert_no_warnings(lambda e: sb3_check_env(e, warn=True), env)


@pytest.mark.parametrize("env_id", env_ids())
def test_each_level_is_that_level_all_the_way_down(env_id):
    utterance_env, token_env = make(env_id, "utterance"), make(env_id, "token")
    assert isinstance(utterance_env.unwrapped, TextEnv)
    assert isinstance(token_env.unwrapped, TokenLevel) and isinstance(token_env.unwrapped.env, TextEnv)
    assert token_env.unwrapped.observation_space is token_env.observation_space
