"""Offline trajectories (``lm_gym.offline``'s format) for the baselines that learn from data:
loading and checking them, %BC's best fraction, and their turns as token ids."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lm_gym.offline import load_trajectories, reference_trajectories
from lm_toolkit.tasks import Lengths
from lm_toolkit.tokens import encode_prompts, encode_targets, supervised_batch


def load_offline_dataset(path: str, env_id: str, top_fraction: float = 1.0, agent: str | None = None):
    """Trajectories in ``lm_gym.offline``'s format, checked to be ``env_id``'s, or with ``agent`` the rows of
    that agent of a multi-agent dataset (``lm_gym.multiagent.demonstrations``); with ``top_fraction`` < 1
    only the trajectories with the highest returns (ties kept in dataset order: the ILQL paper's %BC)."""
    trajectories = load_trajectories(path)
    if agent is not None:
        agents = trajectories.unique("agent") if "agent" in trajectories.column_names else []
        if agent not in agents:
            raise ValueError(f"--agent {agent!r}: --dataset {path!r} holds the agents {sorted(agents)}")
        trajectories = trajectories.filter(lambda row: row["agent"] == agent)
    else:
        other = sorted(set(trajectories.unique("env_id")) - {env_id})
        if other:
            raise ValueError(f"--dataset {path!r} holds trajectories of {other}, not of --env-id {env_id!r}")
    if top_fraction < 1:
        keep = max(1, math.ceil(top_fraction * len(trajectories)))
        best = np.argsort(-np.asarray(trajectories["return"]), kind="stable")[:keep]
        trajectories = trajectories.select(np.sort(best))
    return trajectories


@dataclass
class Turns:
    """Every turn of the dataset, tokenized: its observation, its utterance + EOS, its reward, whether
    the episode ended there and, when it did not, the next turn's observation (the state to bootstrap from)."""

    prompts: list[list[int]]
    actions: list[list[int]]
    rewards: np.ndarray
    dones: np.ndarray
    next_prompts: list[list[int] | None]


def trajectories_or_references(
    path: str | None, env_id: str, env_kwargs: dict[str, Any], max_trajectories: int | None = None
):
    """``path``'s trajectories (``--dataset``, checked to be ``env_id``'s) or, without one, the task's
    train-split references scored by its reward; the first ``max_trajectories`` of them."""
    if path is None:
        dataset = reference_trajectories(env_id, split="train", env_kwargs=env_kwargs, max_samples=max_trajectories)
    else:
        dataset = load_offline_dataset(path, env_id)
    if max_trajectories is not None:
        dataset = dataset.select(range(min(max_trajectories, len(dataset))))
    if len(dataset) == 0:
        raise ValueError(f"the dataset of {env_id} is empty")
    return dataset


def encode_turns(dataset, tokenizer, lengths: Lengths) -> Turns:
    """Every turn of ``dataset``'s trajectories as token ids, linked to the next turn's observation."""
    observations, actions, rewards, dones, next_observations = [], [], [], [], []
    for row in dataset.select_columns(["observations", "actions", "rewards", "dones"]):
        for t in range(len(row["actions"])):
            observations.append(row["observations"][t])
            actions.append(row["actions"][t])
            rewards.append(row["rewards"][t])
            dones.append(row["dones"][t])
            next_observations.append(None if row["dones"][t] else row["observations"][t + 1])
    following = iter(encode_prompts(tokenizer, [text for text in next_observations if text is not None], lengths))
    return Turns(
        prompts=encode_prompts(tokenizer, observations, lengths),
        actions=encode_targets(tokenizer, actions, lengths),
        rewards=np.asarray(rewards, dtype=np.float32),
        dones=np.asarray(dones, dtype=bool),
        next_prompts=[None if text is None else next(following) for text in next_observations],
    )


def transition_batch(turns: Turns, index: np.ndarray, pad_id: int, device) -> dict[str, Any]:
    """Turns ``index`` as a batch: right-padded ``observation + utterance + EOS`` with the action tokens
    marked, rewards, ends, and the next observations' tokens (what per-token offline RL bootstraps from)."""
    batch = supervised_batch(
        [turns.prompts[i] for i in index], [turns.actions[i] for i in index], pad_id, False, device
    )
    following = [turns.next_prompts[i] for i in index if turns.next_prompts[i] is not None]
    return {
        "input_ids": batch["input_ids"],
        "attention_mask": batch["attention_mask"],
        "action_mask": batch["labels"] != -100,
        "rewards": torch.tensor(turns.rewards[index], device=device),
        "dones": torch.tensor(turns.dones[index], device=device),
        "has_next": torch.tensor([turns.next_prompts[i] is not None for i in index], device=device),
        "next_prompts": following,
        "pad_id": pad_id,
    }
