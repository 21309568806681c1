"""Any task as a chat: the view an instruct (chat) model plays a :class:`~lm_gym.core.text_env.TextEnv` through.

A chat of one episode is a list of messages in the format of OpenAI's chat API and of
``transformers``' chat templates (``{"role": ..., "content": ...}``):

1. ``system``: the task's rules, :meth:`TextEnv.chat_system_message` (the class attribute
   ``chat_instructions``, by default the "Description" section of the task's docstring); left out
   when the task has none;
2. ``user``: the episode's first observation;
3. per step, ``assistant``: the model's reply, then, unless the step ended the episode, ``user``:
   what the env answered, :meth:`TextEnv.chat_user_message` (by default the text the new
   observation adds to the previous one, without the echo of the reply).

So a single-turn task (IMDB, CommonGen, ...) is a system message and one user message, and a
multi-turn one (Wordle, VisDial, yours) goes on turn by turn. Wordle, after the guess ``crane``::

    [{"role": "system", "content": "Guess a hidden five-letter word in at most six guesses. ..."},
     {"role": "user", "content": "Wordle: guess the hidden five-letter word in 6 tries. ..."},
     {"role": "assistant", "content": "crane"},
     {"role": "user", "content": "byybb"}]

:class:`ChatTranscript` records the chat of one env's episode; :class:`ChatBatch` one per copy
of a vector env, for a round of one episode each; :func:`chat_prompt` renders messages as the
prompt text of a model (its tokenizer's chat template, or a plain fallback). The view changes
nothing in the env: the caller steps the env with the model's replies and records what it
returned::

    observation, _ = env.reset(seed=0)
    chat = ChatTranscript.start(env, observation)
    while not chat.done:
        reply = my_model(chat_prompt(chat.messages, tokenizer))
        observation, _, terminated, truncated, _ = env.step(reply)
        chat.record(reply, observation, terminated, truncated)

The view needs the task's utterance-level env (token-level envs take token ids, not replies); a
Gymnasium observation space of message lists is not a ``Text`` space, so it is not a wrapper of
the env: the env keeps the contract and the chat lives beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gymnasium.vector import SyncVectorEnv

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import TextEnv
from lm_gym.core.vector import TextVectorEnv

#: One chat message: ``{"role": "system" | "user" | "assistant", "content": text}``.
Message = dict[str, str]

#: The role labels of :func:`plain_chat_prompt`.
PLAIN_ROLE_LABELS = {"system": "System", "user": "User", "assistant": "Assistant"}


def chat_task(env: Any) -> TextEnv:
    """The :class:`TextEnv` whose chat hooks a chat of ``env`` follows: ``env`` itself or the env
    under its Gymnasium wrappers; anything else (a token-level env, another library's env) raises
    :class:`~lm_gym.core.errors.ConfigurationError`."""
    task = getattr(env, "unwrapped", env)
    if not isinstance(task, TextEnv):
        raise ConfigurationError(
            f"a chat plays an utterance-level lm-gym env (a TextEnv, or one made with action_level='utterance'), "
            f"got {type(task).__name__}: {safe_repr(task)}"
        )
    return task


@dataclass
class ChatTranscript:
    """The chat messages of one episode of a task (see the module docstring for their order).

    Start it with the episode's first observation (:meth:`start`), then :meth:`record` each step's
    reply and result. ``task`` is the :class:`TextEnv` whose hooks give the system and user
    messages; ``observation`` is the env's latest observation; ``done`` says the episode ended.
    """

    task: TextEnv
    observation: str
    messages: list[Message] = field(default_factory=list)
    done: bool = False

    @classmethod
    def start(cls, env: Any, observation: str) -> ChatTranscript:
        """The chat of the episode that ``env`` (a :class:`TextEnv`, or one under Gymnasium's wrappers)
        just started with ``observation``: the task's system message, if any, and ``observation`` as the
        user's. Call it after ``reset``: an env that plays several tasks gives its episode's rules."""
        task = chat_task(env)
        system = task.chat_system_message()
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": observation})
        return cls(task=task, observation=observation, messages=messages)

    def record(self, reply: str, observation: str, terminated: bool, truncated: bool) -> None:
        """Add a step: ``reply`` (the action the env was stepped with) as the assistant's message and,
        unless the step ended the episode, the env's answer (:meth:`TextEnv.chat_user_message` of
        the previous ``observation``, the reply as the task saw it and this ``observation``) as the
        user's. A chat whose episode ended refuses more steps with
        :class:`~lm_gym.core.errors.ConfigurationError`."""
        if self.done:
            raise ConfigurationError("this chat's episode has ended; start a new ChatTranscript after reset()")
        self.messages.append({"role": "assistant", "content": reply})
        self.done = bool(terminated or truncated)
        if not self.done:
            utterance = self.task.parse_action(reply)
            answer = self.task.chat_user_message(self.observation, utterance, observation)
            self.messages.append({"role": "user", "content": answer})
        self.observation = observation


class ChatBatch:
    """One :class:`ChatTranscript` per copy of a vector env, for a round in which each copy plays one episode.

    ``envs`` says whose chat hooks each copy follows: lm-gym's native vector env
    (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``) or Gymnasium's
    ``SyncVectorEnv``, whose copies it reads; a sequence of one env per copy; or one
    :class:`TextEnv` for all copies (the task's env, for a vector env whose copies live in other
    processes, such as ``AsyncVectorEnv``'s). Give the copies for an env whose episodes play
    different tasks (``lm_gym/Mixture-v0``): each chat then gets its copy's task's rules.

    Make it after the vector env's ``reset`` with the observations it returned; after each
    ``step``, :meth:`record` the actions and what the step returned. Copies whose episode has ended
    are left as they are (a ``NextStep`` autoreset's new episode is not recorded), so
    ``transcripts[i]`` is copy ``i``'s first episode of the round.
    """

    def __init__(self, envs: Any, observations: Sequence[str]):
        count = len(observations)
        copies = _copies(envs, count)
        #: The chats, one per copy.
        self.transcripts: list[ChatTranscript] = [
            ChatTranscript.start(env, observation) for env, observation in zip(copies, observations, strict=True)
        ]

    def active(self) -> list[int]:
        """The copies whose episode has not ended."""
        return [index for index, transcript in enumerate(self.transcripts) if not transcript.done]

    def messages(self, indices: Sequence[int] | None = None) -> list[list[Message]]:
        """The messages of the chats of copies ``indices`` (default: :meth:`active`), to prompt the model with."""
        return [self.transcripts[index].messages for index in (self.active() if indices is None else indices)]

    def record(
        self,
        replies: Sequence[str],
        observations: Sequence[str],
        terminations: Sequence[bool],
        truncations: Sequence[bool],
    ) -> None:
        """Add a vector step to the chats of the active copies: each copy's reply (the actions the vector env
        was stepped with, one per copy; those of ended copies are ignored), observation, termination and truncation."""
        count = len(self.transcripts)
        for name, values in (
            ("replies", replies), ("observations", observations), ("terminations", terminations),
            ("truncations", truncations),
        ):  # fmt: skip
            if len(values) != count:
                raise ConfigurationError(f"{name} must hold one entry per copy ({count}), got {len(values)}")
        for index in self.active():
            self.transcripts[index].record(
                replies[index], observations[index], bool(terminations[index]), bool(truncations[index])
            )


def _copies(envs: Any, count: int) -> list[Any]:
    """The env whose chat hooks each of ``count`` copies follows (see :class:`ChatBatch`)."""
    vector_env = getattr(envs, "unwrapped", envs)
    if isinstance(vector_env, (TextVectorEnv, SyncVectorEnv)):
        envs = vector_env.envs
    elif not isinstance(envs, Sequence):
        return [envs] * count
    if len(envs) != count:
        raise ConfigurationError(f"envs must hold one env per observation ({count}), got {len(envs)}")
    return list(envs)


def chat_prompt(messages: Sequence[Mapping[str, str]], tokenizer: Any = None) -> str:
    """The prompt text of a model that replies to ``messages``: with a ``transformers`` tokenizer that
    has a chat template, ``tokenizer.apply_chat_template(messages, add_generation_prompt=True,
    tokenize=False)``; otherwise (no tokenizer, or none with a ``chat_template``) :func:`plain_chat_prompt`."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            [dict(message) for message in messages], add_generation_prompt=True, tokenize=False
        )
    return plain_chat_prompt(messages)


def plain_chat_prompt(messages: Sequence[Mapping[str, str]]) -> str:
    """``messages`` as plain text for a model without a chat template: each message as ``"<Role>: <content>"``
    (``System``, ``User``, ``Assistant``: :data:`PLAIN_ROLE_LABELS`; another role capitalised),
    separated by blank lines, then ``"Assistant:"`` for the reply. The model's next turn would start
    with ``"\\n\\nUser:"``: a caller may stop generating there."""
    blocks = [
        f"{PLAIN_ROLE_LABELS.get(message['role'], message['role'].capitalize())}: {message['content']}"
        for message in messages
    ]
    return "\n\n".join([*blocks, f"{PLAIN_ROLE_LABELS['assistant']}:"])
