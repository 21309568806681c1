"""How lm-gym envs are built by ``gymnasium.make`` and ``gymnasium.make_vec``.

Every task registers two entry points made here: a scalar one that builds the task's
:class:`TextEnv` and, for ``action_level="token"``, wraps it in :class:`TokenLevel`; and a
vector one that builds the native :class:`TextVectorEnv`. The task class is named by a
``"module:Class"`` string and imported on first use, so ``import lm_gym`` stays light.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import gymnasium

from lm_gym.core.errors import ConfigurationError
from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenLevel
from lm_gym.core.tokenizer import load_tokenizer, train_tokenizer
from lm_gym.core.vector import TextVectorEnv

ACTION_LEVELS = ("utterance", "token")
_TOKEN_ARGUMENTS = ("tokenizer", "max_prompt_length", "max_new_tokens", "prompt_truncation_side")


def _load_class(path: str) -> type[TextEnv]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def make_env(env_class: str, *, action_level: str = "utterance", **kwargs: Any) -> gymnasium.Env:
    """Build ``env_class(**kwargs)`` at the requested action level.

    At ``action_level="token"``, ``tokenizer`` (a ``transformers`` tokenizer, or a hub name
    or local path; ``None`` trains one on the task's text), ``max_prompt_length``,
    ``max_new_tokens`` and ``prompt_truncation_side`` go to :class:`TokenLevel`, with the
    task's ``token_level_defaults``.
    """
    if action_level not in ACTION_LEVELS:
        raise ConfigurationError(f"action_level must be one of {ACTION_LEVELS}, got {action_level!r}")
    token_kwargs = {key: kwargs.pop(key) for key in _TOKEN_ARGUMENTS if key in kwargs}
    if action_level == "utterance" and token_kwargs:
        raise ConfigurationError(f"{sorted(token_kwargs)} only apply with action_level='token'")
    cls = _load_class(env_class)
    env = cls(**kwargs)
    if action_level == "utterance":
        return env
    tokenizer = resolve_tokenizer(env, token_kwargs.pop("tokenizer", None))
    return TokenLevel(env, tokenizer, **{**cls.token_level_defaults, **token_kwargs})


def resolve_tokenizer(env: TextEnv, tokenizer: Any):
    """A tokenizer object from a name/path, an object, or ``None`` (train on the task's text)."""
    if tokenizer is None:
        key, corpus = env.tokenizer_corpus()
        return train_tokenizer(corpus, key)
    if isinstance(tokenizer, str):
        return load_tokenizer(tokenizer)
    return tokenizer


def make_vector_env(env_class: str, num_envs: int = 1, *, action_level: str = "utterance", autoreset_mode: str = "NextStep", **kwargs: Any) -> TextVectorEnv:
    """Build the native batched vector env of ``env_class`` (utterance level)."""
    if action_level != "utterance":
        raise ConfigurationError(
            "the native vector env is utterance-level; for token-level envs use "
            "gymnasium.make_vec(id, num_envs, vectorization_mode='sync', action_level='token')"
        )
    return TextVectorEnv(_load_class(env_class)(**kwargs), num_envs, autoreset_mode)


def register_task(env_id: str, env_class: str) -> None:
    """Register ``env_id`` with both entry points for the ``"module:Class"`` ``env_class``."""
    gymnasium.register(
        id=env_id,
        entry_point=functools.partial(make_env, env_class),
        vector_entry_point=functools.partial(make_vector_env, env_class),
        disable_env_checker=False,
    )
