"""Offline RL data of the Reddit task: every comment of a split, played as the reply to its parent.

One single-step trajectory per comment, in the format of :mod:`lm_gym.offline`: the
observation is the env's observation at reset (the parent, or ``""`` without it), the action
the comment, the reward the env's reward for it (ILQL trained on exactly these, for each of
its four rewards). Metadata columns: ``seed`` and ``sample_index`` (``env.reset(seed=seed,
options={"index": sample_index})`` then ``env.step(action)`` replays the row, noise
included), ``comment_id``, ``parent_id``, ``link_id`` and ``score`` (the real score)::

    from lm_gym.tasks.reddit import comment_trajectories

    toxicity = comment_trajectories("train", {"source": "synthetic"})
    upvotes = comment_trajectories("train", {"source": "local", "data_dir": "data/reddit", "reward": "upvotes_real"})
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import score_queries
from lm_gym.core.validation import check_int
from lm_gym.offline import trajectories_from_rows
from lm_gym.tasks.reddit.env import RedditEnv

ENV_ID = "lm_gym/Reddit-v0"


def metadata_features() -> dict[str, Any]:
    import datasets

    return {
        "seed": datasets.Value("int64"),
        "sample_index": datasets.Value("int64"),
        "comment_id": datasets.Value("string"),
        "parent_id": datasets.Value("string"),
        "link_id": datasets.Value("string"),
        "score": datasets.Value("int64"),
    }


def comment_trajectories(
    split: str = "train",
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    max_samples: int | None = None,
    batch_size: int = 256,
    progress: bool = True,
):
    """The comments of ``split`` as trajectories (see the module docstring).

    ``env_kwargs`` are :class:`RedditEnv`'s arguments but ``split`` (``source``, ``reward``,
    ...). Comment ``i`` is played in an episode reset with seed ``seed + i``; ``max_samples``
    keeps the first comments; each batch of ``batch_size`` comments is scored with one reward call.
    """
    from tqdm.auto import tqdm

    if env_kwargs is None:
        env_kwargs = {}
    if not isinstance(env_kwargs, Mapping):
        raise ConfigurationError(
            f"env_kwargs must be a dict of RedditEnv's arguments or None, got {type(env_kwargs).__name__}"
        )
    unknown = sorted(set(env_kwargs) - (set(inspect.signature(RedditEnv).parameters) - {"split"}))
    if unknown:
        raise ConfigurationError(
            f"env_kwargs {safe_repr(unknown)} are not RedditEnv arguments here (pass split as its own argument)"
        )
    seed = check_int("seed", seed, 0)
    batch_size = check_int("batch_size", batch_size, 1)
    env = RedditEnv(split=split, **env_kwargs)
    num_samples = (
        len(env.samples) if max_samples is None else min(check_int("max_samples", max_samples, 1), len(env.samples))
    )

    rows = []
    with tqdm(total=num_samples, desc=f"{ENV_ID} {split}", unit="trajectory", disable=not progress) as bar:
        for start in range(0, num_samples, batch_size):
            indices = range(start, min(start + batch_size, num_samples))
            observations, queries = [], []
            for index in indices:
                observation, _ = env.reset(seed=seed + index, options={"index": index})
                observations.append(observation)
                _, query = env.prepare_step(env.current_sample.references[0])  # the real comment as the reply
                queries.append(query)
            rewards = env.scale_reward(score_queries(env.reward_fn, queries))
            for index, observation, query, reward in zip(indices, observations, queries, rewards):
                rows.append(
                    {
                        "env_id": ENV_ID,
                        "observations": [observation],
                        "actions": [query.utterance],
                        "rewards": [float(reward)],
                        "dones": [True],
                        "seed": seed + index,
                        "sample_index": index,
                        "comment_id": query.meta["id"],
                        "parent_id": query.meta["parent_id"],
                        "link_id": query.meta["link_id"],
                        "score": query.meta["score"],
                    }
                )
            bar.update(len(indices))
    return trajectories_from_rows(rows, metadata_features())
