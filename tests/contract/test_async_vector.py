"""``gymnasium.make_vec(id, 2, vectorization_mode="async")``, with Gymnasium's defaults, plays as the scalar env does.

Each id is played in a fresh process (run as ``python test_async_vector.py <env_id>``, it
prints the episodes as JSON), so that a worker that hangs fails the test at the timeout
instead of hanging the suite, and its whole process group is killed.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from contract_episodes import env_ids, make, offline_kwargs

from lm_gym.core.registration import ACTION_LEVELS
from lm_gym.testing import to_data

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TIMEOUT_S = 120
SEED = 7
ACTIONS = {"utterance": ["the cast was superb", "crane"], "token": np.array([5, 7])}


def copy_data(observation, index: int, level: str):
    """The observation of copy ``index`` of a batch, as :func:`to_data` gives a scalar env's."""
    if level == "token":
        return to_data({key: value[index] for key, value in observation.items()})
    return to_data(observation[index])


def async_episodes(env_id: str) -> dict:
    """Reset with ``SEED`` and one step of ``ACTIONS``, per level, of an async vector env of 2 copies."""
    episodes = {}
    for level in ACTION_LEVELS:
        venv = gymnasium.make_vec(env_id, 2, vectorization_mode="async", **offline_kwargs(env_id, level))
        observation, _ = venv.reset(seed=SEED)
        step_observation, rewards, *_ = venv.step(ACTIONS[level])
        venv.close()
        episodes[level] = [
            [copy_data(observation, i, level), copy_data(step_observation, i, level), float(rewards[i])]
            for i in range(2)
        ]
    return episodes


def scalar_episodes(env_id: str, level: str) -> list:
    """What :func:`async_episodes` gives, from the scalar env: copy ``i`` is reset with ``SEED + i``."""
    env = make(env_id, level)
    episodes = []
    for i in range(2):
        observation, _ = env.reset(seed=SEED + i)
        step_observation, reward, *_ = env.step(ACTIONS[level][i])
        episodes.append([to_data(observation), to_data(step_observation), float(reward)])
    return episodes


@pytest.mark.slow  # about 80 s for all ids: each builds 3 envs per level in 3 processes
@pytest.mark.parametrize("env_id", env_ids())
def test_async_vector_env_with_default_arguments_plays_like_the_scalar_env(env_id):
    expected = {
        level: scalar_episodes(env_id, level) for level in ACTION_LEVELS
    }  # also fills the cache the workers read
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    }  # this checkout's lm_gym, and tests/user_tasks.py
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__)), env_id],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the vector env's workers too
        process.communicate()
        pytest.fail(f"make_vec({env_id!r}, 2, vectorization_mode='async') hung for {TIMEOUT_S} s")
    assert process.returncode == 0, stderr[-3000:]
    assert json.loads(stdout) == json.loads(json.dumps(expected))


if __name__ == "__main__":
    json.dump(async_episodes(sys.argv[1]), sys.stdout)
