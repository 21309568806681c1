"""Fuzzed bad input: typed errors (or the documented outcome), and the env goes on unchanged.

Bad actions, ``reset`` seeds and options, and constructor arguments are drawn by
Hypothesis. A bad action or reset must raise an ``lm_gym`` error (or Gymnasium's own
typed error) and leave the episode exactly as it was: the trial with the bad call in the
middle plays the same as the reference without it. A constructor argument either builds a
working env or raises a typed error.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import gymnasium
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from contract_episodes import NUM_VECTOR_ENVS, Player, cases, env_ids, make, offline_kwargs, to_data
from hypothesis import assume, given
from hypothesis import strategies as st

from lm_gym.core.errors import LMGymError
from lm_gym.core.registration import ACTION_LEVELS, _TOKEN_ARGUMENTS, task_class

TYPED_ERRORS = (LMGymError, gymnasium.error.Error)

ODD_VALUES = (
    np.int64(2), np.uint8(7), np.float32(1.5), np.bool_(True), np.timedelta64(3), np.datetime64("2020-01-01"),
    np.array(3), np.array([4], dtype=np.uint8), np.array([1, 2]), np.array(["x"]), np.array([2.0]),
    object(), Path("/nonexistent/lm-gym"), "\x00", "/", "token", "synthetic", "caf\u00e9", "x" * 5000,
)
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([-1, -(2**63), 2**63, 2**70, 10**9]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=6),
    st.lists(st.integers(-2, 5), max_size=3),
    st.tuples(st.text(max_size=3)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sets(st.integers(0, 3), max_size=2),
    st.complex_numbers(max_magnitude=5),
    st.integers(0, len(ODD_VALUES) - 1).map(ODD_VALUES.__getitem__),  # sampled_from would hash them
    hnp.arrays(dtype=hnp.scalar_dtypes(), shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)),
    st.iterables(st.integers(0, 3), max_size=3),
)


def is_valid_seed(seed) -> bool:
    return seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.timedelta64)) and seed >= 0)


def is_valid_action(env, action) -> bool:
    if isinstance(env.action_space, gymnasium.spaces.Text):
        return isinstance(action, str) and len(action) <= env.action_space.max_length
    if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
        action = action.reshape(()).item()
    integer = isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.timedelta64))
    return integer and 0 <= action < env.action_space.n


def is_valid_vector_action(venv, level: str, actions) -> bool:
    """A native vector env's action: a list/tuple of valid utterances, or (token level) an integer
    array of shape ``(num_envs,)`` or a list/tuple of ``num_envs`` integers, in range."""
    if level == "token" and isinstance(actions, np.ndarray):
        return actions.dtype.kind in "iu" and actions.shape == (venv.num_envs,) and bool(((actions >= 0) & (actions < venv.vocab_size)).all())
    if not (isinstance(actions, (list, tuple)) and len(actions) == venv.num_envs):
        return False
    if level == "token":
        return all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.timedelta64)) and 0 <= a < venv.vocab_size for a in actions)
    return all(is_valid_action(venv.envs[0], a) for a in actions)


@functools.cache
def shared_env(env_id: str, level: str, kind: str):
    return make(env_id, level, kind)


def trial(env, level: str, kind: str, seed: int, interrupt_at: int, interrupt=None, steps: int = 6) -> list:
    """Play ``steps`` steps from ``reset(seed)``; call ``interrupt(env)`` before step ``interrupt_at``."""
    player = Player(seed)
    observation, info = env.reset(seed=seed)
    records = [to_data((observation, info))]
    for step in range(steps):
        if step == interrupt_at and interrupt is not None:
            interrupt(env)
        observation, reward, terminated, truncated, info = env.step(player.act(env, level, kind, observation))
        records.append(to_data((observation, reward, terminated, truncated, info)))
        if kind == "scalar" and (terminated or truncated):
            observation, info = env.reset()
            records.append(to_data((observation, info)))
    return records


def expect_typed_error(call):
    def interrupt(env):
        with pytest.raises(TYPED_ERRORS):
            call(env)

    return interrupt


@pytest.mark.parametrize("env_id, level, kind", cases())
@given(bad=st.one_of(JUNK, st.integers()), seed=st.integers(0, 10**6), at=st.integers(0, 5))
def test_bad_actions_raise_typed_errors_and_change_nothing(env_id, level, kind, bad, seed, at):
    env = shared_env(env_id, level, kind)
    if kind == "vector":
        position = seed % NUM_VECTOR_ENVS
        valid = ["x" if level == "utterance" else 0] * NUM_VECTOR_ENVS
        bad = bad if seed % 2 else valid[:position] + [bad] + valid[position + 1 :]
        assume(not is_valid_vector_action(env, level, bad))
    else:
        assume(not is_valid_action(env, bad))
    reference = trial(env, level, kind, seed, at)
    assert trial(env, level, kind, seed, at, expect_typed_error(lambda e: e.step(bad))) == reference


@pytest.mark.parametrize("env_id, level, kind", cases())
@given(bad_seed=JUNK, seed=st.integers(0, 10**6), at=st.integers(0, 5))
def test_bad_reset_seeds_raise_typed_errors_and_change_nothing(env_id, level, kind, bad_seed, seed, at):
    one_seed_each = isinstance(bad_seed, (list, tuple, np.ndarray)) and len(np.atleast_1d(np.asarray(bad_seed, dtype=object))) == NUM_VECTOR_ENVS
    assume(not is_valid_seed(bad_seed) and not (kind == "vector" and one_seed_each and all(map(is_valid_seed, bad_seed))))
    env = shared_env(env_id, level, kind)
    reference = trial(env, level, kind, seed, at)
    assert trial(env, level, kind, seed, at, expect_typed_error(lambda e: e.reset(seed=bad_seed))) == reference


@pytest.mark.parametrize("env_id, level, kind", cases())
@given(bad_options=JUNK, known_key=st.booleans(), seed=st.integers(0, 10**6), at=st.integers(0, 5))
def test_bad_reset_options_raise_typed_errors_or_reset(env_id, level, kind, bad_options, known_key, seed, at):
    """Options that are not a dict, or hold unknown keys, are refused; a known key with any value resets or is refused."""
    env = shared_env(env_id, level, kind)
    keys = task_class(env_id).reset_options
    if known_key and keys:
        bad_options = {keys[seed % len(keys)]: bad_options}
    else:
        assume(bad_options is not None and not (isinstance(bad_options, dict) and not bad_options))
    reference = trial(env, level, kind, seed, at)

    def interrupt(env):
        try:
            env.reset(options=bad_options)
        except TYPED_ERRORS:
            return
        raise Accepted

    try:
        assert trial(env, level, kind, seed, at, interrupt) == reference
    except Accepted:
        assert known_key, f"reset(options={bad_options!r}) was accepted"


class Accepted(Exception):
    """The env took the options as a valid reset."""


def constructor_arguments(env_id: str, level: str) -> list[str]:
    names = [name for name in inspect.signature(task_class(env_id)).parameters]
    return names + ["action_level"] + (list(_TOKEN_ARGUMENTS) if level == "token" else [])


@pytest.mark.parametrize("level", ACTION_LEVELS)
@pytest.mark.parametrize("env_id", env_ids())
@given(data=st.data(), value=JUNK)
def test_bad_constructor_arguments_raise_typed_errors_or_build_a_working_env(env_id, level, data, value):
    name = data.draw(st.sampled_from(constructor_arguments(env_id, level)), label="argument")
    try:
        env = gymnasium.make(env_id, **{**offline_kwargs(env_id, level), name: value})
    except TYPED_ERRORS:
        return
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    env.step(env.action_space.sample())


@pytest.mark.parametrize("env_id", env_ids())
@given(name=st.sampled_from(["num_envs", "autoreset_mode", "action_level"]), value=JUNK)
def test_bad_vector_constructor_arguments_raise_typed_errors_or_build_a_working_env(env_id, name, value):
    kwargs = {"num_envs": 2, **offline_kwargs(env_id, "utterance"), name: value}
    try:
        venv = gymnasium.make_vec(env_id, vectorization_mode="vector_entry_point", **kwargs)
    except TYPED_ERRORS:
        return
    observations, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(observations)
