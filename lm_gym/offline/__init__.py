"""Offline RL data for every lm-gym task, in one trajectory format.

A trajectory is one episode of an utterance-level env, stored as one row of a Hugging Face
``datasets.Dataset`` whose features are :func:`trajectory_features`. Core columns:

================  ==================  ==========================================================
field             type                meaning
================  ==================  ==========================================================
``env_id``        string              the registered env id, e.g. ``lm_gym/Wordle-v0``
``observations``  list of string      the observation text before each turn
``actions``       list of string      the utterance played at each turn
``rewards``       list of float32     the reward of each turn
``dones``         list of bool        True on the last turn only: the episode ended there
``truncated``     bool                the episode ended by a time limit, not by termination;
                                      consumers that cannot bootstrap treat it as terminal
``return``        float32             the sum of ``rewards``
================  ==================  ==========================================================

Every other column is task metadata, kept as it is and not checked, e.g. Wordle's
``answer``, ``kind`` and ``policy`` (:mod:`lm_gym.tasks.wordle.offline_data`), or
``sample_index``, ``reference_index`` and ``source`` of :func:`reference_trajectories`.

:func:`validate_trajectories` raises :class:`TrajectoryFormatError` naming the column, the
row and what was expected when a core column is missing or of another type, a trajectory
has no turn, its lists differ in length, ``dones`` is not True exactly on the last turn, a
reward is not finite, ``return`` is not the sum of the rewards (1e-4 relative tolerance)
or ``env_id`` is empty. :func:`save_trajectories` (validates first) and
:func:`load_trajectories` (validates after reading) handle ``.parquet``, ``.jsonl`` and
``save_to_disk`` directories.

Producers: :func:`reference_trajectories` (a single-turn task's references, scored by its
reward), :func:`record_trajectories` (any env played by a batched policy) and the Wordle
games of scripted policies (``python -m lm_gym.tasks.wordle.offline_data``)::

    from lm_gym.offline import record_trajectories, reference_trajectories

    references = reference_trajectories("lm_gym/CommonGen-v0", split="train", env_kwargs={"source": "synthetic"})
    echo = record_trajectories("lm_gym/IMDB-v0", lambda observations: [o[-40:] for o in observations],
                               num_episodes=64, env_kwargs={"source": "synthetic"})
"""

from lm_gym.core.errors import TrajectoryFormatError
from lm_gym.offline.producers import Policy, record_trajectories, reference_trajectories
from lm_gym.offline.trajectories import (
    load_trajectories,
    save_trajectories,
    trajectories_from_rows,
    trajectory_features,
    validate_trajectories,
)

__all__ = [
    "Policy",
    "TrajectoryFormatError",
    "load_trajectories",
    "record_trajectories",
    "reference_trajectories",
    "save_trajectories",
    "trajectories_from_rows",
    "trajectory_features",
    "validate_trajectories",
]
