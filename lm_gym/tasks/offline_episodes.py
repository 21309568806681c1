"""One env episode as a trajectory row of :mod:`lm_gym.offline`, for the tasks' offline data generators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium


def record_episode(
    env: gymnasium.Env, env_id: str, choose: Callable[[str, int], str], reset_options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Play one episode of ``env``, reset with ``reset_options``, until it terminates.

    ``choose(observation, turn)`` gives the action of turn ``turn`` (0, 1, ...). Returns the row's
    core columns (``env_id``, ``observations``: the observation before each action, ``actions``,
    ``rewards``, ``dones``) and the ``info`` of the last step; the caller adds its metadata columns.
    """
    observation, info = env.reset(options=reset_options)
    row: dict[str, Any] = {"env_id": env_id, "observations": [], "actions": [], "rewards": [], "dones": []}
    terminated = False
    while not terminated:
        action = choose(observation, len(row["actions"]))
        row["observations"].append(observation)
        observation, reward, terminated, _, info = env.step(action)
        row["actions"].append(action)
        row["rewards"].append(reward)
        row["dones"].append(terminated)
    return row, info
