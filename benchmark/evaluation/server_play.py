"""Episodes of a task played by a model behind an OpenAI-compatible server.

Each round plays one episode per sub-env of the task's native vector env: every turn, the active
sub-envs' prompts (their chats, or their observation texts for ``--api completions`` without a chat)
go to the server together, ``concurrency`` requests in flight (:class:`CompletionClient`), and the
vector env steps once with the replies (one batched reward call). Episode ``j``'s sample ``s`` is reset
with seed ``seed + j``; its requests carry ``sample_index = j * samples + s``, so every (episode,
sample) is its own draw (a server that takes a ``seed`` gets it) and its own cache entry, while a
rerun of the same evaluation asks nothing again. A reply the server could not give well (malformed,
empty) is played as an empty utterance and counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmark.evaluation.completions import CompletionClient, CompletionRequest
from lm_gym.core.chat import ChatBatch, plain_chat_prompt
from lm_gym.core.vector import episode_info
from lm_toolkit.rollouts import MAX_TURNS, numeric_metrics

#: Where a model prompted with a plain chat (no chat template) would start the user's next turn.
PLAIN_CHAT_STOP = ("\n\nUser:",)


@dataclass(frozen=True)
class SamplingSettings:
    """How each reply is sampled: ``temperature`` (0: greedy), ``top_p``, ``max_tokens``."""

    temperature: float
    top_p: float
    max_tokens: int


@dataclass
class PlayedEpisodes:
    """Per (episode, sample): return, ``info["metrics"]`` and final info, in the order episode-major
    (``index = j * samples + s``); and how many replies were malformed."""

    returns: list[float] = field(default_factory=list)
    metrics: list[dict[str, float]] = field(default_factory=list)
    finals: list[dict[str, Any]] = field(default_factory=list)
    malformed_replies: int = 0


def play_with_server(
    venv,
    client: CompletionClient,
    num_episodes: int,
    samples: int,
    seed: int,
    settings: SamplingSettings,
    chat: bool,
    on_episode: Callable[[int], None] | None = None,
) -> PlayedEpisodes:
    """``num_episodes`` x ``samples`` episodes of ``venv``'s task answered by ``client``'s model (see the module
    docstring). ``chat``: prompt with the episode's chat (messages for the chat API, the plain chat text for
    the completions API); else the observation text (completions API only). ``on_episode(n)`` is called as
    ``n`` more episodes end."""
    pairs = [(episode, sample) for episode in range(num_episodes) for sample in range(samples)]
    played = PlayedEpisodes()
    max_chars = venv.single_action_space.max_length
    for first in range(0, len(pairs), venv.num_envs):
        batch = pairs[first : first + venv.num_envs]
        # a last, smaller round fills its other sub-envs with its first pair's episode; they are not counted
        seeds = [seed + episode for episode, _ in batch] + [seed + batch[0][0]] * (venv.num_envs - len(batch))
        observations, _ = venv.reset(seed=seeds)
        chats = ChatBatch(venv, observations) if chat else None
        active = np.zeros(venv.num_envs, dtype=bool)
        active[: len(batch)] = True
        totals = np.zeros(venv.num_envs)
        metrics: list[dict[str, float]] = [{} for _ in range(venv.num_envs)]
        finals: list[dict[str, Any]] = [{} for _ in range(venv.num_envs)]
        for _ in range(MAX_TURNS):
            indices = np.flatnonzero(active)
            requests = [_request(client.api, chats, observations, i, first + i, settings) for i in indices.tolist()]
            completions = client.complete(requests)
            actions = [""] * venv.num_envs  # ended sub-envs: NextStep autoreset ignores their action
            for index, completion in zip(indices, completions, strict=True):
                played.malformed_replies += completion.error is not None
                actions[index] = completion.text[:max_chars]
            observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
            if chats is not None:
                chats.record(actions, observations, terminations, truncations)
            dones = terminations | truncations
            totals[indices] += rewards[indices]
            for index in indices[dones[indices]]:
                active[index] = False
                finals[index] = {**episode_info(infos, index), "observation": observations[index]}
                if isinstance(infos.get("metrics"), dict):
                    metrics[index] = numeric_metrics(episode_info(infos["metrics"], index))
            if on_episode is not None and dones[indices].any():
                on_episode(int(dones[indices].sum()))
            if not active.any():
                break
        else:
            raise RuntimeError(f"episodes still running after {MAX_TURNS} turns")
        played.returns.extend(totals[: len(batch)].tolist())
        played.metrics.extend(metrics[: len(batch)])
        played.finals.extend(finals[: len(batch)])
    return played


def _request(
    api: str, chats: ChatBatch | None, observations, index: int, pair: int, settings: SamplingSettings
) -> CompletionRequest:
    """The request of sub-env ``index`` (pair ``pair`` of the evaluation, its ``sample_index``)."""
    common = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "sample_index": pair,
    }
    if chats is None:
        return CompletionRequest(prompt=observations[index], **common)
    messages = chats.transcripts[index].messages
    if api == "chat":
        return CompletionRequest(messages=tuple(dict(message) for message in messages), **common)
    return CompletionRequest(prompt=plain_chat_prompt(messages), stop=PLAIN_CHAT_STOP, **common)
