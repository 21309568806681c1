"""Which kind of lm-gym env a check is given: utterance or token level, scalar or native vector env."""

from __future__ import annotations

from typing import Any

from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenLevel
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.vector import TextVectorEnv


def level_and_kind(env: Any) -> tuple[str, str]:
    """``(level, kind)``: ``"utterance"`` or ``"token"``, ``"scalar"`` or ``"vector"``."""
    inner = getattr(env, "unwrapped", env)
    if isinstance(inner, TokenVectorEnv):
        return "token", "vector"
    if isinstance(inner, TextVectorEnv):
        return "utterance", "vector"
    if isinstance(inner, TokenLevel):
        return "token", "scalar"
    if isinstance(inner, TextEnv):
        return "utterance", "scalar"
    raise AssertionError(
        f"{type(env).__name__} is not an lm-gym env: env.unwrapped must be a TextEnv, a TokenLevel, a TextVectorEnv "
        f"or a TokenVectorEnv, got {type(inner).__name__}"
    )


def expect_kind(env: Any, level: str | None, kind: str, check: str) -> tuple[str, str]:
    found = level_and_kind(env)
    if kind != found[1] or (level is not None and level != found[0]):
        wanted = f"a {level}-level {kind} env" if level else f"a {kind} env"
        right = "check_vector_env" if found[1] == "vector" else "check_text_env"
        raise AssertionError(f"{check} checks {wanted}; this is a {found[0]}-level {found[1]} env: use {right}")
    if kind == "scalar":
        for name in ("observation_space", "action_space"):
            assert getattr(env, name) == getattr(env.unwrapped, name), (
                f"a wrapper changed the env's {name}; check the env itself"
            )
        if found[0] == "token":
            inner = env.unwrapped.env
            assert isinstance(getattr(inner, "unwrapped", inner), TextEnv), (
                "a token-level env must play a TextEnv (env.unwrapped.env)"
            )
    return found
