"""Checks 2 and 3 over played episodes: determinism (a seed plays the same episodes) and random play
(the invariants of every step and episode end)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from lm_gym.core.errors import safe_repr
from lm_gym.core.vector import episode_info
from lm_gym.testing.api import check_vector_step
from lm_gym.testing.bad_input import expect_refused
from lm_gym.testing.kinds import level_and_kind
from lm_gym.testing.playing import play, reset_finished


def check_determinism(
    env: gymnasium.Env | VectorEnv,
    *,
    seed: int = 0,
    make_env: Callable[[], Any] | None = None,
    seed_sensitive: bool = True,
    steps: int | None = None,
) -> None:
    """The same seed plays the same episodes twice in ``env`` and in a second env from ``make_env()``
    (default ``gymnasium.make(env.spec)`` / ``gymnasium.make_vec(env.spec)``, or ``copy.deepcopy(env)``);
    with ``seed_sensitive``, ``seed + 1`` plays other episodes. ``steps``: :func:`play`'s."""
    first = play(env, seed, steps)
    assert play(env, seed, steps) == first, f"the env reset again with seed {seed} played differently"
    other = _second_env(env) if make_env is None else make_env()
    try:
        assert play(other, seed, steps) == first, f"a second env reset with seed {seed} played differently"
    finally:
        other.close()
    if seed_sensitive:
        assert play(env, seed + 1, steps) != first, (
            f"seeds {seed} and {seed + 1} played the same episodes "
            "(pass seed_sensitive=False for an env with no randomness)"
        )


def _second_env(env: Any) -> Any:
    if env.spec is not None:
        return gymnasium.make_vec(env.spec) if isinstance(env, VectorEnv) else gymnasium.make(env.spec)
    return copy.deepcopy(env)


def check_random_play(env: gymnasium.Env | VectorEnv, num_steps: int, *, seed: int = 0) -> None:
    """``num_steps`` steps of ``action_space.sample()`` (seeded with ``seed``) with the invariants of
    the module docstring; a scalar env is reset after each episode, a vector env autoresets."""
    level, kind = level_and_kind(env)
    if kind == "vector":
        _random_play_vector(env, num_steps, seed)
        return
    env.action_space.seed(seed)
    observation, info = env.reset(seed=seed)
    _check_observation(env, observation, info, "reset()")
    episodes = 0
    for step in range(num_steps):
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        where = f"step {step} of random play"
        _check_observation(env, observation, info, where)
        assert isinstance(reward, (int, float, np.integer, np.floating)) and not isinstance(reward, (bool, np.bool_)), (
            f"{where}: the reward must be a number, got {safe_repr(reward)}"
        )
        assert np.isfinite(reward), f"{where}: the reward {reward!r} is not finite"
        assert isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_)), (
            f"{where}: terminated and truncated must be bools, got {safe_repr(terminated)} and {safe_repr(truncated)}"
        )
        if level == "token":
            mask = info.get("action_mask")
            assert isinstance(mask, np.ndarray) and mask.shape == (env.action_space.n,) and mask.dtype == np.int8, (
                f"{where}: info['action_mask'] must be an int8 array of {env.action_space.n} entries, "
                f"got {safe_repr(mask)}"
            )
        if terminated or truncated:
            assert isinstance(info.get("metrics"), dict), (
                f"{where}: the episode ended without info['metrics'] (a dict): {sorted(info)}"
            )
            if not episodes:
                expect_refused(lambda: env.step(env.action_space.sample()), "step() after the episode ended")
            episodes += 1
            observation, info = env.reset()
            _check_observation(env, observation, info, "reset()")
    assert episodes > 0, f"no episode ended in {num_steps} steps of random actions"


def _check_observation(env: gymnasium.Env, observation: Any, info: Any, where: str) -> None:
    assert env.observation_space.contains(observation), (
        f"{where}: the observation is outside the observation space: {observation!r:.200}"
    )
    assert isinstance(info, dict), f"{where}: info must be a dict, got {type(info).__name__}"


def _random_play_vector(venv: VectorEnv, num_steps: int, seed: int) -> None:
    venv.action_space.seed(seed)
    venv.reset(seed=seed)
    episodes = 0
    for _ in range(num_steps):
        observations, rewards, terminations, truncations, infos = venv.step(venv.action_space.sample())
        check_vector_step(venv, observations, rewards, terminations, truncations, infos)
        ended = terminations | truncations
        for i in np.flatnonzero(ended):
            final = episode_info(infos, i)
            if venv.autoreset_mode == AutoresetMode.SAME_STEP:
                final = final.get("final_info", {})
            assert isinstance(final.get("metrics"), dict), (
                f"copy {i}'s episode ended without info['metrics'] (a dict): {sorted(final)}"
            )
        episodes += int(ended.sum())
        reset_finished(venv, "vector", terminations, truncations)
    assert episodes > 0, f"no episode ended in {num_steps} vector steps of random actions"
