"""The registered envs of the contract suite (also run as a script in a fresh process).

``make(env_id, level, kind)`` builds a registered env offline (the task's own
``offline_kwargs``) as a scalar env or a native vector env; ``lm_gym.testing.play`` plays it
with a seeded policy and returns every reset and step as plain JSON-able data, so two runs can
be compared exactly, in one process or across processes.

Run as ``python contract_episodes.py`` it prints the episodes of every registered id, level
and kind as JSON (the fresh-process determinism test).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import gymnasium
import user_tasks  # noqa: F401  (registers tasks written as a user writes them: the contract holds for them too)

from lm_gym import registered_tasks
from lm_gym.core.registration import ACTION_LEVELS, NATIVE_VECTOR_LEVELS, task_class
from lm_gym.testing import play

KINDS = ("scalar", "vector")
NUM_VECTOR_ENVS = 3


def env_ids() -> list[str]:
    """Every registered lm-gym task: the built-in ones and :mod:`user_tasks`'."""
    return registered_tasks()


def cases() -> list[tuple[str, str, str]]:
    """``(env_id, level, kind)`` for every id and level, with the native vector env where it exists."""
    return [
        (env_id, level, kind)
        for env_id in env_ids()
        for level in ACTION_LEVELS
        for kind in KINDS
        if kind == "scalar" or level in NATIVE_VECTOR_LEVELS
    ]


def offline_kwargs(env_id: str, level: str) -> dict[str, Any]:
    kwargs = dict(task_class(env_id).offline_kwargs)
    if level != "utterance":
        kwargs["action_level"] = level
    return kwargs


def make(env_id: str, level: str, kind: str = "scalar", **kwargs: Any):
    kwargs = {**offline_kwargs(env_id, level), **kwargs}
    if kind == "vector":
        return gymnasium.make_vec(env_id, num_envs=NUM_VECTOR_ENVS, vectorization_mode="vector_entry_point", **kwargs)
    return gymnasium.make(env_id, **kwargs)


def all_episodes(seed: int) -> dict[str, Any]:
    """Episodes of every case, keyed ``"<id>|<level>|<kind>"``."""
    result = {}
    for env_id, level, kind in cases():
        env = make(env_id, level, kind)
        result[f"{env_id}|{level}|{kind}"] = play(env, seed)
        env.close()
    return result


if __name__ == "__main__":
    json.dump(all_episodes(int(sys.argv[1])), sys.stdout)
