"""What a trainer or an evaluation plays a task with, read from its id and keyword arguments.

:func:`set_up_task` gives a :class:`TaskSetup`: the task's native vector env on each split asked
for, the env that answers for the task (:func:`task_env`), its token-level settings (the task's
defaults with the caller's overrides, as ``gymnasium.make(..., action_level="token")`` takes them)
and the policy's tokenizer (:func:`policy_tokenizer`). The baselines start from it, so every run
reads a task the same way::

    setup = set_up_task("lm_gym/IMDB-v0", {"source": "synthetic"}, {"train": 8, "validation": 4})
    setup.envs["train"], setup.token_settings["max_new_tokens"], setup.tokenizer

A served task (``lm_gym/Remote-v0``, registered by ``import lm_gym.serve``) is set up with
``served=True``: each split's env is its client, asked for that split, at utterance level; its
server answers the defaults and the tokenizer corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import resolve_tokenizer, split_kwargs, token_settings
from lm_gym.core.text_env import TextEnv
from lm_gym.core.token_level import TokenLevel
from lm_gym.core.vector import NativeVectorEnv


def task_env(env: Any) -> Any:
    """What answers for ``env``'s task: the utterance-level :class:`~lm_gym.core.text_env.TextEnv` of an
    lm-gym env (itself, the env under Gymnasium's wrappers, a token-level env's inner env, or a native
    vector env's first copy); an env that serves its task itself, i.e. has its own
    ``corpus_metrics(episodes, language_model=None, task=None)`` method (a served task's client,
    ``lm_gym/Remote-v0``, whose server answers ``token_level_defaults``, ``tokenizer_corpus()`` and the
    corpus metrics), is that env. Anything else: :class:`~lm_gym.core.errors.ConfigurationError`."""
    task = getattr(env, "unwrapped", env)
    if isinstance(task, NativeVectorEnv):
        task = task.envs[0]
    if isinstance(task, TokenLevel):
        task = getattr(task.env, "unwrapped", task.env)
    if not isinstance(task, TextEnv) and not callable(getattr(task, "corpus_metrics", None)):
        raise ConfigurationError(
            f"env must be an lm-gym env (a TextEnv, or made from one) or a served task's client, "
            f"got {type(env).__name__}: {safe_repr(env)}"
        )
    return task


def policy_tokenizer(task: Any, source: Any = None):
    """The tokenizer of a policy playing ``task`` (a :func:`task_env`): ``source``'s (a hub name, a local
    directory or a tokenizer object), or with ``source=None`` the BPE tokenizer lm-gym trains offline on
    the task's text; given a pad token (its EOS token) when it has none, as batched sampling needs one."""
    tokenizer = resolve_tokenizer(task, source)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


@dataclass
class TaskSetup:
    """A task ready to be played: see :func:`set_up_task`."""

    #: The task's native (batched) vector env on each split, at utterance level.
    envs: dict[str, gymnasium.vector.VectorEnv]
    #: The env that answers for the task (:func:`task_env` of the first split's vector env).
    task: Any
    #: ``max_prompt_length``, ``max_new_tokens``, ``min_new_tokens`` (where the task sets one) and
    #: ``prompt_truncation_side`` (where the task sets one): the task's defaults with the overrides.
    token_settings: dict[str, Any]
    #: The policy's tokenizer (:func:`policy_tokenizer`).
    tokenizer: Any


def make_split_envs(
    env_id: str, env_kwargs: Mapping[str, Any], num_envs: Mapping[str, int], *, served: bool = False
) -> dict[str, gymnasium.vector.VectorEnv]:
    """The task's native batched vector env (one batched reward call per step) on each split of ``num_envs``,
    built in that order with ``num_envs[split]`` sub-envs; arguments as :func:`set_up_task`'s."""
    if not num_envs:
        raise ConfigurationError("num_envs must name at least one split, e.g. {'train': 8}")
    envs = {}
    for split, count in num_envs.items():
        if served:
            kwargs = {"action_level": "utterance", **env_kwargs, "split": split}
        else:
            kwargs = split_kwargs(env_id, dict(env_kwargs), split)
        envs[split] = gymnasium.make_vec(env_id, num_envs=count, vectorization_mode="vector_entry_point", **kwargs)
    return envs


def set_up_task(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    num_envs: Mapping[str, int],
    *,
    tokenizer: Any = None,
    served: bool = False,
    **token_overrides: Any,
) -> TaskSetup:
    """The task ``env_id`` with ``env_kwargs``, set up to be played on each split of ``num_envs``.

    Args:
        env_id: a registered task's id (``"module:id"`` imports ``module`` first).
        env_kwargs: the task's keyword arguments; each split's env is also given ``split=<split>`` when
            the task takes one (a task without splits is played as it is).
        num_envs: the number of sub-envs of each split's vector env, in the order they are built
            (``{"train": 16, "validation": 8}``); at least one split.
        tokenizer: the policy's tokenizer source for :func:`policy_tokenizer` (``None``: trained offline on
            the task's text).
        served: ``env_id`` is a served task's client (``lm_gym/Remote-v0``): each split's client is
            asked for its split, at utterance level unless ``env_kwargs`` says otherwise.
        token_overrides: ``max_prompt_length``, ``max_new_tokens``, ``min_new_tokens``, ... over the task's
            defaults (``None`` values are left out).
    """
    envs = make_split_envs(env_id, env_kwargs, num_envs, served=served)
    task = task_env(next(iter(envs.values())))
    given = {key: value for key, value in token_overrides.items() if value is not None}
    return TaskSetup(envs, task, token_settings(task, given), policy_tokenizer(task, tokenizer))
