"""Check 1, the API checkers: Gymnasium's (and stable-baselines3's) ``check_env``; a vector env's spaces and returns."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from lm_gym.core.errors import safe_repr
from lm_gym.core.validation import is_integer
from lm_gym.testing.kinds import level_and_kind

#: What Gymnasium's ``check_env`` says of every env that ``gymnasium.make`` wraps, whatever the env.
WRAPPED_NOTE = "is different from the unwrapped version"
#: What it says of an env built without ``gymnasium.make`` (it can only test the render mode it was built with).
NO_SPEC_NOTE = "environment not having a spec"


def check_api(env: gymnasium.Env | VectorEnv, sb3: bool | None = None) -> None:
    """Gymnasium's ``check_env`` (and at token level stable-baselines3's) on ``env.unwrapped`` and
    ``env``, without a warning; for a vector env, its spaces and what ``reset`` and ``step`` return."""
    level, kind = level_and_kind(env)
    if kind == "vector":
        _check_vector_api(env)
        return
    allowed = () if env.unwrapped.spec is not None else (NO_SPEC_NOTE,)
    _without_warnings("Gymnasium's check_env(env.unwrapped)", gymnasium_check_env, env.unwrapped, allowed)
    if env is not env.unwrapped:
        _without_warnings("Gymnasium's check_env(env)", gymnasium_check_env, env, (*allowed, WRAPPED_NOTE))
    if level == "token" and sb3 is not False:
        try:
            from stable_baselines3.common.env_checker import check_env as sb3_check_env
        except ImportError as error:
            if sb3:
                raise ImportError(f"sb3=True needs stable-baselines3: pip install 'lm-gym[sb3]' ({error})") from error
            warnings.warn(
                "stable-baselines3 is not installed, so its check_env was skipped; pip install 'lm-gym[sb3]' to run it "
                "(or pass sb3=False to skip it without this warning)",
                stacklevel=2,
            )
            return

        def sb3_check(checked: gymnasium.Env) -> None:
            sb3_check_env(checked, warn=True)

        _without_warnings("stable-baselines3's check_env(env.unwrapped)", sb3_check, env.unwrapped)
        if env is not env.unwrapped:
            _without_warnings("stable-baselines3's check_env(env)", sb3_check, env)


def _without_warnings(what: str, check: Callable[[Any], None], env: Any, allowed: Sequence[str] = ()) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check(env)
        except AssertionError as error:
            raise AssertionError(f"{what} failed: {error}") from error
        except Exception as error:  # the checker found a crash: a contract failure
            raise AssertionError(f"{what} failed with {type(error).__name__}: {error}") from error
    unexpected = [str(w.message) for w in caught if not any(note in str(w.message) for note in allowed)]
    assert not unexpected, f"{what} warned: {unexpected}"


def _check_vector_api(venv: VectorEnv) -> None:
    n = venv.num_envs
    assert is_integer(n) and n >= 1, f"num_envs must be a positive int, got {safe_repr(n)}"
    for name in ("observation_space", "action_space"):
        single, batched = getattr(venv, f"single_{name}"), getattr(venv, name)
        assert batched == batch_space(single, n), f"{name} {batched} is not single_{name} {single} batched {n} times"
    result = venv.reset(seed=0)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"reset() must return (observations, infos), got {safe_repr(result)}"
    )
    observations, infos = result
    assert venv.observation_space.contains(observations), (
        f"reset()'s observations are outside the observation space: {observations!r:.200}"
    )
    assert isinstance(infos, dict), f"reset()'s infos must be a dict, got {type(infos).__name__}"
    venv.action_space.seed(0)
    result = venv.step(venv.action_space.sample())
    assert isinstance(result, tuple) and len(result) == 5, (
        "step() must return (observations, rewards, terminations, truncations, infos)"
    )
    check_vector_step(venv, *result)


def check_vector_step(venv: VectorEnv, observations, rewards, terminations, truncations, infos) -> None:
    n = venv.num_envs
    assert venv.observation_space.contains(observations), (
        f"step()'s observations are outside the observation space: {observations!r:.200}"
    )
    assert isinstance(rewards, np.ndarray) and rewards.shape == (n,) and rewards.dtype.kind == "f", (
        f"step()'s rewards must be a float array of shape ({n},), got {safe_repr(rewards)}"
    )
    assert np.isfinite(rewards).all(), f"step()'s rewards are not finite: {rewards}"
    for name, flags in (("terminations", terminations), ("truncations", truncations)):
        assert isinstance(flags, np.ndarray) and flags.shape == (n,) and flags.dtype == bool, (
            f"step()'s {name} must be a bool array of shape ({n},), got {safe_repr(flags)}"
        )
    assert isinstance(infos, dict), f"step()'s infos must be a dict, got {type(infos).__name__}"
