"""Trajectories of any lm-gym task: single-turn tasks' references scored by the task's reward,
and episodes of any env played by a policy. Both play through the native vector env, so each
step scores its whole batch with one reward call."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import task_class
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.validation import check_int
from lm_gym.core.vector import MAX_ENVS, TextVectorEnv
from lm_gym.offline.trajectories import trajectories_from_rows

#: A batched policy: the observations of the envs that await an action -> one utterance for each.
Policy = Callable[[list[str]], list[str]]


def reference_trajectories(
    env_id: str,
    split: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    max_samples: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
):
    """One single-step trajectory per (sample, reference) pair of a single-turn task's split.

    Each reference is played as the utterance of its sample's episode and scored by the
    task's reward exactly as the env scores it (through the native vector env, ``batch_size``
    utterances per reward call). ``split`` is passed to tasks whose class takes one;
    ``max_samples`` keeps the first samples of the split. Metadata columns:
    ``sample_index`` (``reset(options={"index": sample_index})`` replays it),
    ``reference_index`` and ``source`` (``"reference"``).
    """
    import gymnasium
    from tqdm.auto import tqdm

    env_class = task_class(env_id)
    if not issubclass(env_class, SingleTurnTextEnv):
        raise ConfigurationError(
            f"reference_trajectories needs a single-turn task (a SingleTurnTextEnv, whose samples have references); "
            f"{env_id!r} is a {env_class.__name__}: record a policy's episodes with record_trajectories instead"
        )
    kwargs = _env_kwargs(env_kwargs)
    if split is not None and "split" in inspect.signature(env_class.__init__).parameters:
        kwargs["split"] = split
    batch_size = check_int("batch_size", batch_size, 1, MAX_ENVS)
    if max_samples is not None:
        max_samples = check_int("max_samples", max_samples, 1)

    venv = gymnasium.make_vec(env_id, num_envs=batch_size, vectorization_mode="vector_entry_point", **kwargs)
    try:
        samples = venv.envs[0].samples
        num_samples = len(samples) if max_samples is None else min(max_samples, len(samples))
        pairs = [
            (sample_index, reference_index, reference)
            for sample_index in range(num_samples)
            for reference_index, reference in enumerate(samples[sample_index].references)
        ]
        rows = []
        with tqdm(total=len(pairs), desc=env_id, unit="trajectory", disable=not progress) as bar:
            for start in range(0, len(pairs), batch_size):
                batch = pairs[start : start + batch_size]
                observations = []
                for copy, (sample_index, _, _) in enumerate(batch):
                    reset_mask = np.arange(batch_size) == copy
                    observations.append(venv.reset(options={"index": sample_index, "reset_mask": reset_mask})[0][copy])
                # Copies a short last batch leaves out have finished (or never started) an episode,
                # so the NextStep autoreset resets them and ignores their action.
                actions = [reference for _, _, reference in batch] + [""] * (batch_size - len(batch))
                _, rewards, terminations, truncations, _ = venv.step(actions)
                for copy, (sample_index, reference_index, reference) in enumerate(batch):
                    rows.append(
                        {
                            "env_id": env_id,
                            "observations": [observations[copy]],
                            "actions": [reference],
                            "rewards": [float(rewards[copy])],
                            "dones": [bool(terminations[copy] or truncations[copy])],
                            "truncated": bool(truncations[copy]),
                            "sample_index": sample_index,
                            "reference_index": reference_index,
                            "source": "reference",
                        }
                    )
                bar.update(len(batch))
    finally:
        venv.close()
    return trajectories_from_rows(rows, _reference_features())


def _reference_features() -> dict[str, Any]:
    import datasets

    return {
        "sample_index": datasets.Value("int64"),
        "reference_index": datasets.Value("int64"),
        "source": datasets.Value("string"),
    }


def record_trajectories(
    env_id_or_vector_env: str | TextVectorEnv,
    policy: Policy,
    num_episodes: int,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    num_envs: int = 16,
    progress: bool = True,
):
    """``num_episodes`` episodes of ``policy`` in an lm-gym env (utterance level), as trajectories.

    ``env_id_or_vector_env`` is a registered id (the native vector env of ``num_envs``
    copies is built with ``env_kwargs``) or such a vector env, with the default
    ``"NextStep"`` autoreset mode. ``policy`` is called with the list of observations of the
    copies that await an action and returns one utterance (``str``) for each, in order.

    Episode ``j`` is reset with seed ``seed + j``: ``env.reset(seed=row["seed"])`` and then
    the row's actions replay it, and the rows (ordered by ``j``) do not depend on
    ``num_envs`` when the policy is deterministic. Metadata column: ``seed`` (int64).
    """
    import gymnasium
    from tqdm.auto import tqdm

    if not callable(policy):
        raise ConfigurationError(f"policy must be a callable list[str] -> list[str], got {type(policy).__name__}")
    num_episodes = check_int("num_episodes", num_episodes, 1)
    seed = check_int("seed", seed, 0)
    if isinstance(env_id_or_vector_env, str):
        num_envs = min(check_int("num_envs", num_envs, 1, MAX_ENVS), num_episodes)
        venv = gymnasium.make_vec(
            env_id_or_vector_env, num_envs=num_envs, vectorization_mode="vector_entry_point", **_env_kwargs(env_kwargs)
        )
    elif isinstance(env_id_or_vector_env, TextVectorEnv):
        venv = env_id_or_vector_env
        if env_kwargs is not None:
            raise ConfigurationError("env_kwargs only apply to an env id; the vector env given is already built")
        if venv.spec is None:
            raise ConfigurationError("the vector env has no spec (build it with gymnasium.make_vec) to name its env id")
        if venv.autoreset_mode != AutoresetMode.NEXT_STEP:
            raise ConfigurationError(
                f"the vector env's autoreset_mode must be 'NextStep', got {venv.autoreset_mode.value!r}"
            )
    else:
        raise ConfigurationError(
            "env_id_or_vector_env must be a registered env id or an lm-gym TextVectorEnv, "
            f"got {type(env_id_or_vector_env).__name__}"
        )
    env_id = venv.spec.id

    episodes: list[dict[str, Any]] = []  # in the order they start: episode j is reset with seed + j
    playing = np.full(venv.num_envs, -1)  # the episode each copy plays; -1: none
    observations: list[str] = [""] * venv.num_envs
    try:
        with tqdm(total=num_episodes, desc=env_id, unit="episode", disable=not progress) as bar:
            while True:
                idle = np.flatnonzero(playing < 0)[: num_episodes - len(episodes)]
                if len(idle):
                    seeds: list[int | None] = [None] * venv.num_envs
                    for copy in idle:
                        playing[copy], seeds[copy] = len(episodes), seed + len(episodes)
                        episodes.append(
                            {"observations": [], "actions": [], "rewards": [], "dones": [], "seed": seeds[copy]}
                        )
                    observations = list(
                        venv.reset(seed=seeds, options={"reset_mask": np.isin(np.arange(venv.num_envs), idle)})[0]
                    )
                active = np.flatnonzero(playing >= 0)
                if not len(active):
                    break
                utterances = policy([observations[copy] for copy in active])
                if not isinstance(utterances, (list, tuple)) or len(utterances) != len(active):
                    raise ConfigurationError(
                        f"policy must return a list of {len(active)} utterances (one per observation), "
                        f"got {safe_repr(utterances)}"
                    )
                # Copies with no episode left have finished one: the NextStep autoreset ignores their action.
                actions = [""] * venv.num_envs
                for copy, utterance in zip(active, utterances):
                    actions[copy] = utterance
                next_observations, rewards, terminations, truncations, _ = venv.step(actions)
                for copy, utterance in zip(active, utterances):
                    episode = episodes[playing[copy]]
                    done = bool(terminations[copy] or truncations[copy])
                    episode["observations"].append(observations[copy])
                    episode["actions"].append(utterance)
                    episode["rewards"].append(float(rewards[copy]))
                    episode["dones"].append(done)
                    if done:
                        episode["truncated"] = bool(truncations[copy])
                        playing[copy] = -1
                        bar.update()
                observations = list(next_observations)
    finally:
        if venv is not env_id_or_vector_env:
            venv.close()
    return trajectories_from_rows([{"env_id": env_id, **episode} for episode in episodes], _recorded_features())


def _recorded_features() -> dict[str, Any]:
    import datasets

    return {"seed": datasets.Value("int64")}


def _env_kwargs(env_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, Mapping):
        raise ConfigurationError(
            f"env_kwargs must be a dict of the env's arguments or None, got {type(env_kwargs).__name__}"
        )
    return dict(env_kwargs)
