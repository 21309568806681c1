"""One episode of an lm-gym task played by a model's replies, as the chat-based trainers (SkyRL, GEM) step it.

Those trainers make an env per trajectory and step it with the model's raw reply. A
:class:`ChatSession` is that env's lm-gym side: the task's utterance-level env (a
:meth:`~lm_gym.core.text_env.TextEnv.replicate` of one prototype per task and arguments, so a
trajectory does not rebuild the task's data and reward model), its chat
(:class:`~lm_gym.core.chat.ChatTranscript`) and the two rules both adapters share:

* a reply longer than the task's action space is cut to its first ``action_space.max_length``
  characters (what the task then plays; ``info["lm_gym_chars_cut"]`` says how many were dropped):
  a trainer's generation is bounded in tokens, not characters, and a refused step would end its
  rollout. Anything else that the env refuses (a reply that is not a ``str``, a step after the
  episode ended) raises as the env raises it
  (:class:`~lm_gym.core.errors.InvalidActionError`, :class:`~lm_gym.core.errors.ResetNeededError`);
  a reply the task judges bad (a Wordle guess that is not a word) gets the task's own penalty;
* ``info`` goes out as JSON-able Python (:func:`json_info`): NumPy values as Python numbers and
  lists, tuples as lists, other objects as their ``str``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from lm_gym.core.chat import ChatTranscript, Message, chat_task
from lm_gym.core.errors import ConfigurationError, ResetNeededError, safe_repr
from lm_gym.core.text_env import TextEnv

#: The ``info`` key that says how many characters of an over-long reply were cut (present only when some were).
CHARS_CUT_KEY = "lm_gym_chars_cut"

_PROTOTYPES: dict[tuple[str, str], TextEnv] = {}
_PROTOTYPES_LOCK = threading.Lock()  # the trainers make their envs from several threads


def task_env(env_id: str, env_kwargs: Mapping[str, Any]) -> TextEnv:
    """A fresh utterance-level env of task ``env_id`` built with ``env_kwargs``: a replicate of the
    prototype ``gymnasium.make(env_id, **env_kwargs)`` built once per task and arguments (its own
    RNG and episode, the task's data and reward model shared). A token-level env is refused with
    :class:`~lm_gym.core.errors.ConfigurationError`: the trainers send replies, not token ids."""
    import gymnasium

    kwargs = dict(env_kwargs)
    if kwargs.get("action_level", "utterance") != "utterance":
        raise ConfigurationError(
            f"a chat trainer plays a task at the utterance level; drop action_level={safe_repr(kwargs['action_level'])}"
        )
    key = (env_id, json.dumps(kwargs, sort_keys=True, default=repr))
    with _PROTOTYPES_LOCK:
        prototype = _PROTOTYPES.get(key)
        if prototype is None:
            prototype = _PROTOTYPES[key] = chat_task(gymnasium.make(env_id, **kwargs))
    return prototype.replicate()


def json_info(value: Any) -> Any:
    """``value`` (an ``info`` dict) as JSON-able Python: NumPy arrays and scalars as lists and Python
    numbers, tuples as lists, keys as ``str``, other objects as their ``str``."""
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return str(value)


@dataclass
class ReplyStep:
    """What a reply did: the step's lm-gym ``observation``, ``reward``, ``terminated``, ``truncated``
    and JSON-able ``info``, and ``answer``: the env's answer as the chat's user message
    (:meth:`~lm_gym.core.text_env.TextEnv.chat_user_message`), ``None`` when the step ended the episode."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    answer: str | None


class ChatSession:
    """Episodes of task ``env_id`` (built with ``env_kwargs``, see :func:`task_env`) played by replies.

    :meth:`start` resets the env and gives the chat's first messages; :meth:`play` steps it with a
    reply. ``task`` is the lm-gym env, ``transcript`` the current episode's chat.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]):
        self.env_id = env_id
        self.task = task_env(env_id, env_kwargs)
        self.transcript: ChatTranscript | None = None

    def start(self, seed: int | None = None, index: int | None = None) -> tuple[list[Message], dict[str, Any]]:
        """Reset the env with ``seed`` (and, for a task whose ``reset`` takes it, ``options={"index": index}``):
        the chat's first messages (the task's rules as the system message, if any, then the first
        observation as the user's) and the reset's JSON-able ``info``."""
        observation, info = self.task.reset(seed=seed, options=None if index is None else {"index": index})
        self.transcript = ChatTranscript.start(self.task, observation)
        return [dict(message) for message in self.transcript.messages], json_info(info)

    def play(self, reply: Any) -> ReplyStep:
        """Step the env with ``reply``, cut to the action space when longer (see the module docstring)."""
        if self.transcript is None:
            raise ResetNeededError(f"{self.env_id}: play() called before start(); start an episode first")
        max_chars = self.task.action_space.max_length
        chars_cut = len(reply) - max_chars if isinstance(reply, str) and len(reply) > max_chars else 0
        action = reply[:max_chars] if chars_cut else reply
        observation, reward, terminated, truncated, info = self.task.step(action)
        previous = len(self.transcript.messages)
        self.transcript.record(action, observation, terminated, truncated)
        answers = self.transcript.messages[previous + 1 :]  # after the reply's assistant message
        info = json_info(info)
        if chars_cut:
            info[CHARS_CUT_KEY] = chars_cut
        return ReplyStep(
            observation=observation,
            reward=float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=info,
            answer=answers[0]["content"] if answers else None,
        )

    def close(self) -> None:
        """Close the env."""
        self.task.close()
