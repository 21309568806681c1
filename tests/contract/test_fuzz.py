"""Fuzzed bad input: typed errors (or the documented outcome), and the env goes on unchanged.

Bad actions, ``reset`` seeds and options, and constructor arguments are drawn by
Hypothesis; ``lm_gym.testing.check_bad_call`` checks each bad action or reset: it must raise
an ``lm_gym`` error (or Gymnasium's own typed error) and leave the episode exactly as it was
(the trial with the bad call in the middle plays the same as the reference without it). A
constructor argument either builds a working env or raises a typed error.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import gymnasium
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from contract_episodes import NUM_VECTOR_ENVS, cases, env_ids, make, offline_kwargs
from hypothesis import assume, given
from hypothesis import strategies as st

from lm_gym.core.errors import safe_repr
from lm_gym.core.registration import _TOKEN_ARGUMENTS, ACTION_LEVELS, task_class
from lm_gym.testing import TYPED_ERRORS, check_bad_call, is_valid_action, is_valid_seed

ODD_VALUES = (
    np.int64(2),
    np.uint8(7),
    np.float32(1.5),
    np.bool_(True),
    np.timedelta64(3),
    np.datetime64("2020-01-01"),
    np.array(3),
    np.array([4], dtype=np.uint8),
    np.array([1, 2]),
    np.array(["x"]),
    np.array([2.0]),
    object(),
    Path("/nonexistent/lm-gym"),
    "\x00",
    "/",
    "token",
    "synthetic",
    "caf\u00e9",
    "x" * 5000,
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


@functools.cache
def shared_env(env_id: str, level: str, kind: str):
    return make(env_id, level, kind)


@pytest.mark.parametrize("env_id, level, kind", cases())
@given(bad=st.one_of(JUNK, st.integers()), seed=st.integers(0, 10**6), at=st.integers(0, 5))
def test_bad_actions_raise_typed_errors_and_change_nothing(env_id, level, kind, bad, seed, at):
    env = shared_env(env_id, level, kind)
    if kind == "vector" and not seed % 2:  # one copy's bad action among valid ones
        position = seed % NUM_VECTOR_ENVS
        valid = ["x" if level == "utterance" else 0] * NUM_VECTOR_ENVS
        bad = valid[:position] + [bad] + valid[position + 1 :]
    assume(not is_valid_action(env, bad))
    check_bad_call(env, lambda e: e.step(bad), f"step({safe_repr(bad)})", seed=seed, at=at)


@pytest.mark.parametrize("env_id, level, kind", cases())
@given(bad_seed=JUNK, seed=st.integers(0, 10**6), at=st.integers(0, 5))
def test_bad_reset_seeds_raise_typed_errors_and_change_nothing(env_id, level, kind, bad_seed, seed, at):
    assume(not is_valid_seed(bad_seed, NUM_VECTOR_ENVS if kind == "vector" else None))
    env = shared_env(env_id, level, kind)
    check_bad_call(env, lambda e: e.reset(seed=bad_seed), f"reset(seed={safe_repr(bad_seed)})", seed=seed, at=at)


@pytest.mark.parametrize("env_id, level, kind", cases())
@given(bad_options=JUNK, known_key=st.booleans(), seed=st.integers(0, 10**6), at=st.integers(0, 5))
def test_bad_reset_options_raise_typed_errors_or_reset(env_id, level, kind, bad_options, known_key, seed, at):
    """Options that are not a dict, or hold unknown keys, are refused; a known key with any value resets or is
    refused."""
    env = shared_env(env_id, level, kind)
    keys = task_class(env_id).reset_options
    if known_key and keys:
        bad_options = {keys[seed % len(keys)]: bad_options}
    else:
        known_key = False
        assume(bad_options is not None and not (isinstance(bad_options, dict) and not bad_options))
    call = f"reset(options={safe_repr(bad_options)})"
    check_bad_call(env, lambda e: e.reset(options=bad_options), call, seed=seed, at=at, may_accept=known_key)


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
