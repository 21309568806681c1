"""What a baseline reads about its task: env kwargs per split, token lengths, vector envs.

Everything here reads the task's registered class (``lm_gym.core.registration.task_class``);
nothing builds an env (and its data, its reward model) to look at a signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium

import lm_gym  # noqa: F401  (registers the envs)
from lm_gym.core.registration import split_kwargs, task_class


def make_vector_env(env_id: str, env_kwargs: dict[str, Any], split: str, num_envs: int) -> gymnasium.vector.VectorEnv:
    """The task's native batched vector env on ``split``: one batched reward call per step."""
    kwargs = split_kwargs(env_id, env_kwargs, split)
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

    ``env``, one of the task's built envs, is read instead of the class when given: an env's defaults
    may depend on its arguments (``lm_gym/Mixture-v0``: its tasks' longest lengths, no minimum)."""
    cls = task_class(env_id) if env is None else env
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
