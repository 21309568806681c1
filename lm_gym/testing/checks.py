"""The three checks of the whole contract, each running checks 1 to 4 in order: :func:`check_text_env`,
:func:`check_token_env` and :func:`check_vector_env`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
from gymnasium.vector import VectorEnv

from lm_gym.testing.api import check_api
from lm_gym.testing.bad_input import check_bad_actions, check_bad_resets
from lm_gym.testing.episodes import check_determinism, check_random_play
from lm_gym.testing.kinds import expect_kind, level_and_kind

UTTERANCE_STEPS, TOKEN_STEPS, VECTOR_STEPS = 200, 2_000, 100


def check_text_env(
    env: gymnasium.Env,
    *,
    num_steps: int | None = None,
    seed: int = 0,
    make_env: Callable[[], gymnasium.Env] | None = None,
    seed_sensitive: bool = True,
    sb3: bool | None = None,
) -> None:
    """Check an lm-gym env against the whole contract (see the module docstring).

    Args:
        env: a :class:`~lm_gym.core.text_env.TextEnv`, or an env made from one
            (``gymnasium.make``, Gymnasium's wrappers that keep its spaces). A token-level env
            (``action_level="token"``, :class:`~lm_gym.core.token_level.TokenLevel`) is checked
            by :func:`check_token_env`.
        num_steps: steps of random play; default 200 utterances (2,000 token steps at token level).
        seed: the seed of the episodes played.
        make_env: builds a second env like ``env`` for the determinism check (default
            ``gymnasium.make(env.spec)`` or ``copy.deepcopy(env)``).
        seed_sensitive: whether two seeds must play different episodes.
        sb3: stable-baselines3's checker at token level (``None``: when installed).

    Raises:
        AssertionError: what broke the contract.
    """
    level = "token" if level_and_kind(env) == ("token", "scalar") else "utterance"
    expect_kind(env, level, "scalar", "check_text_env")
    default_steps = TOKEN_STEPS if level == "token" else UTTERANCE_STEPS
    _run_checks(env, default_steps if num_steps is None else num_steps, seed, make_env, seed_sensitive, sb3)


def check_token_env(env: gymnasium.Env, **options: Any) -> None:
    """Check a token-level env (:class:`~lm_gym.core.token_level.TokenLevel` of a
    :class:`~lm_gym.core.text_env.TextEnv`) against the contract: :func:`check_text_env` with its
    keyword ``options`` (``num_steps``, ``seed``, ``make_env``, ``seed_sensitive``, ``sb3``), for a
    token-level env only; ``num_steps`` defaults to 2,000 token steps, ``sb3=True`` fails without
    stable-baselines3, ``sb3=False`` skips its checker.
    """
    expect_kind(env, "token", "scalar", "check_token_env")
    check_text_env(env, **options)


def check_vector_env(
    venv: VectorEnv,
    *,
    num_steps: int = VECTOR_STEPS,
    seed: int = 0,
    make_env: Callable[[], VectorEnv] | None = None,
    seed_sensitive: bool = True,
) -> None:
    """Check a native vector env (:class:`~lm_gym.core.vector.TextVectorEnv` or
    :class:`~lm_gym.core.token_vector.TokenVectorEnv`, any autoreset mode): its spaces and
    returns, determinism (``make_env`` default: ``gymnasium.make_vec(venv.spec)`` or
    ``copy.deepcopy(venv)``), ``num_steps`` vector steps of random play and bad input (actions
    of the wrong type or shape, bad copies' actions, seeds and ``reset_mask``)."""
    expect_kind(venv, None, "vector", "check_vector_env")
    _run_checks(venv, num_steps, seed, make_env, seed_sensitive)


def _run_checks(
    env: gymnasium.Env | VectorEnv,
    num_steps: int,
    seed: int,
    make_env: Callable[[], Any] | None,
    seed_sensitive: bool,
    sb3: bool | None = None,
) -> None:
    """Checks 1 to 4 in order (``sb3`` matters at token level only)."""
    check_api(env, sb3=sb3)
    check_determinism(env, seed=seed, make_env=make_env, seed_sensitive=seed_sensitive)
    check_random_play(env, num_steps, seed=seed)
    check_bad_actions(env, seed=seed)
    check_bad_resets(env, seed=seed)
