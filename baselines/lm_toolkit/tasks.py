"""What a baseline reads about its task: env kwargs per split, token lengths, vector envs.

A run's envs, the env that answers for its task, its token settings and its tokenizer come from
``lm_gym.core.task_setup.set_up_task`` (:func:`set_up_task` here adds the served task's
registration and the lengths); the offline baselines, which build no vector env to train, read the
lengths from the task's registered class (:func:`task_lengths`): nothing builds an env (and its
data, its reward model) to look at a signature.

A served task (``--env-id lm_gym/Remote-v0 --env-kwargs '{"url": ...}'``, docs/serving.md) has no
class here: its vector env is the client (``lm_gym.serve.client.RemoteVectorEnv``, asked for the
split it plays: ``url`` may be ``{"train": ..., "validation": ...}``), and
``lm_gym.core.task_setup.task_env`` of it is what a baseline reads about the task (its defaults,
tokenizer corpus and corpus metrics): the client, whose server answers. ``lm_gym.serve`` (the
``serve`` extra) is imported only for that id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core import registration
from lm_gym.core.task_setup import TaskSetup, make_split_envs, set_up_task

#: The id of a served task (``lm_gym.serve.REMOTE_ID``; named here so that only its use imports ``lm_gym.serve``).
REMOTE_ID = "lm_gym/Remote-v0"


def is_remote(env_id: str) -> bool:
    """Whether ``env_id`` is a served task (``lm_gym/Remote-v0``); registers it (``import lm_gym.serve``) if so."""
    if env_id != REMOTE_ID:
        return False
    import lm_gym.serve

    lm_gym.serve.register_remote()
    return True


def kwargs_for_split(env_id: str, env_kwargs: dict[str, Any], split: str) -> dict[str, Any]:
    """``env_kwargs`` plus ``split`` when the task takes one; a served task is always asked for ``split``
    (its client checks the server plays it, or picks the server of ``url[split]``)."""
    if is_remote(env_id):
        return {**env_kwargs, "split": split}
    return registration.split_kwargs(env_id, env_kwargs, split)


def vector_env_for_split(
    env_id: str, env_kwargs: dict[str, Any], split: str, num_envs: int
) -> gymnasium.vector.VectorEnv:
    """The task's native batched vector env on ``split``: one batched reward call per step; for
    ``lm_gym/Remote-v0`` the client's ``num_envs`` sessions of the server (at utterance level)."""
    return make_split_envs(env_id, env_kwargs, {split: num_envs}, served=is_remote(env_id))[split]


def task_setup(
    env_id: str,
    env_kwargs: dict[str, Any],
    num_envs: Mapping[str, int],
    tokenizer: Any = None,
    min_new_tokens: int | None = None,
) -> TaskSetup:
    """The task's vector env on each split of ``num_envs`` (built in that order), the env that answers for
    it, its token settings (``min_new_tokens`` overriding the task's) and the policy's tokenizer from
    ``tokenizer`` (``lm_gym.core.task_setup.set_up_task``; a served task's clients at utterance level)."""
    return set_up_task(
        env_id, env_kwargs, num_envs, tokenizer=tokenizer, served=is_remote(env_id), min_new_tokens=min_new_tokens
    )


@dataclass(frozen=True)
class Lengths:
    """The token-level protocol of a run: how prompts are cut and how long utterances may be."""

    max_prompt_length: int
    max_new_tokens: int
    min_new_tokens: int = 0
    truncation_side: str = "left"

    @classmethod
    def of(cls, token_settings: Mapping[str, Any]) -> Lengths:
        """The lengths of a task's token settings (``lm_gym.core.registration.token_settings``), checked:
        ``min_new_tokens`` in ``[0, max_new_tokens]``."""
        max_new = token_settings["max_new_tokens"]
        min_new = token_settings.get("min_new_tokens", 0)
        if not 0 <= min_new <= max_new:
            raise ValueError(f"--min-new-tokens must be in [0, {max_new}] (the task's max_new_tokens), got {min_new}")
        return cls(
            max_prompt_length=token_settings["max_prompt_length"],
            max_new_tokens=max_new,
            min_new_tokens=min_new,
            truncation_side=token_settings.get("prompt_truncation_side", "left"),
        )


def task_lengths(
    env_id: str,
    max_prompt_length: int | None = None,
    max_new_tokens: int | None = None,
    min_new_tokens: int | None = None,
) -> Lengths:
    """The lengths of task ``env_id``'s registered class: its ``token_level_defaults`` and
    ``generation_defaults`` (IMDB: EOS impossible before 48 tokens, as RL4LMs generates), overridden by
    the flags that are set (0 or ``None``: the task's). A served task's lengths come from its server:
    :func:`task_setup`'s ``token_settings``."""
    if is_remote(env_id):
        raise ValueError(f"the lengths of a served task ({env_id}) come from its server: use task_setup")
    given = {"max_prompt_length": max_prompt_length or None, "max_new_tokens": max_new_tokens or None}
    given["min_new_tokens"] = min_new_tokens
    settings = {key: value for key, value in given.items() if value is not None}
    return Lengths.of(registration.token_settings(registration.task_class(env_id), settings))
