"""``env.spec`` serialises to JSON, and the env made again from that JSON plays the same episodes."""

import gymnasium
import pytest
from contract_episodes import cases, make, offline_kwargs
from gymnasium.envs.registration import EnvSpec

from lm_gym.testing import play


@pytest.mark.parametrize("env_id, level, kind", cases())
def test_spec_round_trips_through_json(env_id, level, kind):
    env = make(env_id, level, kind)
    spec = EnvSpec.from_json(env.spec.to_json())
    assert spec == env.spec
    assert spec.entry_point.startswith("lm_gym.envs:make(")
    assert spec.vector_entry_point.startswith("lm_gym.envs:make_vec(")
    again = gymnasium.make_vec(spec) if kind == "vector" else gymnasium.make(spec)
    assert type(again.unwrapped) is type(env.unwrapped)
    assert play(again, seed=2, steps=6) == play(env, seed=2, steps=6)


@pytest.mark.parametrize("env_id, level, kind", cases())
def test_spec_kwargs_are_the_arguments_given(env_id, level, kind):
    # the entry points name the task themselves, so the spec carries no argument of lm-gym's own:
    # only the defaults given to lm_gym.register and the arguments given to make
    expected = gymnasium.spec(env_id).kwargs | offline_kwargs(env_id, level)
    if kind == "vector":
        expected |= {"num_envs": 3, "vectorization_mode": "vector_entry_point"}
    assert make(env_id, level, kind).spec.kwargs == expected
