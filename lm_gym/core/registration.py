"""How lm-gym envs are built by ``gymnasium.make`` and ``gymnasium.make_vec``.

Every task registers two entry points: a scalar one, :func:`make_env`, that builds the task's
:class:`TextEnv` and, for ``action_level="token"``, the :class:`TokenLevel` MDP around it;
and a vector one, :func:`make_vector_env`, that builds the native :class:`TextVectorEnv`
(or, at token level, :class:`TokenVectorEnv`). Gymnasium records them in ``env.spec`` and
can serialise a spec (``spec.to_json()``) only when they are ``"module:callable"`` strings,
so each id's pair is named in :mod:`lm_gym.envs`. The task class is named by a
``"module:Class"`` string and imported on first use, so ``import lm_gym`` stays light.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import gymnasium

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenLevel
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.tokenizer import load_tokenizer, train_tokenizer
from lm_gym.core.validation import check_choice, is_integer
from lm_gym.core.vector import TextVectorEnv

ACTION_LEVELS = ("utterance", "token")
#: Action levels that have a native ``vector_entry_point`` env.
NATIVE_VECTOR_LEVELS = ("utterance", "token")
_TOKEN_ARGUMENTS = (
    "tokenizer",
    "max_prompt_length",
    "max_new_tokens",
    "min_new_tokens",
    "prompt_truncation_side",
    "early_eos_penalty",
)
#: ``env_id -> "module:Class"`` of every task registered by :func:`register_task`.
TASKS: dict[str, str] = {}


def task_class(env_id: str) -> type[TextEnv]:
    """The utterance-level :class:`TextEnv` class registered as ``env_id``."""
    if env_id not in TASKS:
        raise ConfigurationError(f"{safe_repr(env_id)} is not an lm-gym task; registered: {sorted(TASKS)}")
    module, _, name = TASKS[env_id].partition(":")
    return getattr(importlib.import_module(module), name)


def split_kwargs(env_id: str, env_kwargs: dict[str, Any], split: str) -> dict[str, Any]:
    """``env_kwargs`` plus ``split`` when task ``env_id`` takes one (tasks without splits are played as they are)."""
    takes_split = "split" in inspect.signature(task_class(env_id).__init__).parameters
    return {**env_kwargs, "split": split} if takes_split else dict(env_kwargs)


def make_env(env_id: str, *, action_level: str = "utterance", **kwargs: Any) -> gymnasium.Env:
    """Build task ``env_id`` with ``kwargs`` at the requested action level.

    At ``action_level="token"``, ``tokenizer`` (a ``transformers`` tokenizer, or a hub name
    or local path; ``None`` trains one on the task's text), ``max_prompt_length``,
    ``max_new_tokens``, ``min_new_tokens``, ``prompt_truncation_side`` and
    ``early_eos_penalty`` go to :class:`TokenLevel`, with the task's
    ``token_level_defaults`` and ``generation_defaults`` (a default ``min_new_tokens`` above
    ``max_new_tokens`` is lowered to it).
    """
    env, token_settings = _build_task(env_id, action_level, kwargs)
    if token_settings is None:
        return env
    return TokenLevel(env, **token_settings)


def _build_task(env_id: str, action_level: str, kwargs: dict[str, Any]) -> tuple[TextEnv, dict[str, Any] | None]:
    """The task's utterance-level env and, at token level, the token-level arguments (see :func:`make_env`)."""
    check_choice("action_level", action_level, ACTION_LEVELS)
    token_kwargs = {key: kwargs.pop(key) for key in _TOKEN_ARGUMENTS if key in kwargs}
    if action_level == "utterance" and token_kwargs:
        raise ConfigurationError(f"{sorted(token_kwargs)} only apply with action_level='token'")
    cls = task_class(env_id)
    env = cls(**kwargs)
    if action_level == "utterance":
        return env, None
    tokenizer = resolve_tokenizer(env, token_kwargs.pop("tokenizer", None))
    settings = {**cls.token_level_defaults, **token_kwargs}
    if "min_new_tokens" not in token_kwargs and "min_new_tokens" in cls.generation_defaults:
        max_new_tokens = settings["max_new_tokens"]
        settings["min_new_tokens"] = cls.generation_defaults["min_new_tokens"]
        if is_integer(max_new_tokens):  # TokenLevel reports a bad max_new_tokens itself
            settings["min_new_tokens"] = min(settings["min_new_tokens"], max_new_tokens)
    return env, {"tokenizer": tokenizer, **settings}


def resolve_tokenizer(env: TextEnv, tokenizer: Any):
    """A tokenizer object from a name/path, ``None`` (train on the task's text), or the object itself.

    ``TokenLevel`` checks that the object works as a tokenizer.
    """
    if tokenizer is None:
        key, corpus = env.tokenizer_corpus()
        return train_tokenizer(corpus, key)
    if isinstance(tokenizer, str):
        return load_tokenizer(tokenizer)
    return tokenizer


def make_vector_env(
    env_id: str, num_envs: int = 1, *, action_level: str = "utterance", autoreset_mode: str = "NextStep", **kwargs: Any
) -> TextVectorEnv | TokenVectorEnv:
    """Build the native batched vector env of task ``env_id``: a :class:`TextVectorEnv`, or at
    ``action_level="token"`` a :class:`TokenVectorEnv` (token arguments and defaults as :func:`make_env`)."""
    env, token_settings = _build_task(env_id, action_level, kwargs)
    if token_settings is None:
        return TextVectorEnv(env, num_envs, autoreset_mode)
    return TokenVectorEnv(env, num_envs, autoreset_mode=autoreset_mode, **token_settings)


def register_task(env_id: str, env_class: str, entry_point: str, vector_entry_point: str) -> None:
    """Register ``env_id`` for the ``"module:Class"`` ``env_class``.

    ``entry_point`` and ``vector_entry_point`` are ``"module:callable"`` strings naming
    functions that call :func:`make_env` and :func:`make_vector_env` with ``env_id``.
    """
    TASKS[env_id] = env_class
    gymnasium.register(
        id=env_id, entry_point=entry_point, vector_entry_point=vector_entry_point, disable_env_checker=False
    )
