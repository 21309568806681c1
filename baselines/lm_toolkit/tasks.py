"""What a baseline reads about its task: env kwargs per split, token lengths, vector envs.

Everything here reads the task's registered class (``lm_gym.core.registration.task_class``);
nothing builds an env (and its data, its reward model) to look at a signature.

A served task (``--env-id lm_gym/Remote-v0 --env-kwargs '{"url": ...}'``, docs/serving.md) has no
class here: its vector env is the client (``lm_gym.serve.client.RemoteVectorEnv``, asked for the
split it plays: ``url`` may be ``{"train": ..., "validation": ...}``), and
``lm_gym.metrics.corpus.task_env`` of it is what a baseline reads about the task (its defaults,
tokenizer corpus and corpus metrics): the client, whose server answers. ``lm_gym.serve`` (the
``serve`` extra) is imported only for that id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core import registration

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
    kwargs = kwargs_for_split(env_id, env_kwargs, split)
    if is_remote(env_id):
        kwargs.setdefault("action_level", "utterance")  # the baselines play utterances; a token-level server is refused
    return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


@dataclass(frozen=True)
class Lengths:
    """The token-level protocol of a run: how prompts are cut and how long utterances may be."""

    max_prompt_length: int
    max_new_tokens: int
    min_new_tokens: int = 0
    truncation_side: str = "left"


def task_lengths(
    env_id: str,
    max_prompt_length: int | None = None,
    max_new_tokens: int | None = None,
    min_new_tokens: int | None = None,
    env: Any = None,
) -> Lengths:
    """The task's ``token_level_defaults`` and ``generation_defaults`` (IMDB: EOS impossible before 48
    tokens, as RL4LMs generates), overridden by the flags that are set.

    ``env``, one of the task's built envs (``lm_gym.metrics.corpus.task_env`` of a vector env), is read
    instead of the class when given: an env's defaults may depend on its arguments (``lm_gym/Mixture-v0``: its tasks'
    longest lengths, no minimum). A served task (``lm_gym/Remote-v0``) needs ``env``: its server has them."""
    if env is None and is_remote(env_id):
        raise ValueError(f"the lengths of a served task ({env_id}) come from its server: pass env=task_env(vector_env)")
    cls = registration.task_class(env_id) if env is None else env
    max_new = max_new_tokens or cls.token_level_defaults["max_new_tokens"]
    if min_new_tokens is None:
        min_new_tokens = min(cls.generation_defaults.get("min_new_tokens", 0), max_new)
    elif not 0 <= min_new_tokens <= max_new:
        raise ValueError(
            f"--min-new-tokens must be in [0, {max_new}] (the task's max_new_tokens), got {min_new_tokens}"
        )
    return Lengths(
        max_prompt_length=max_prompt_length or cls.token_level_defaults["max_prompt_length"],
        max_new_tokens=max_new,
        min_new_tokens=min_new_tokens,
        truncation_side=cls.token_level_defaults.get("prompt_truncation_side", "left"),
    )
