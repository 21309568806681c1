"""lm-gym's tasks as SkyRL-Gym environments (``pip install "lm-gym[skyrl]"``, skyrl-gym 0.4).

SkyRL's generator makes one environment per trajectory, ``skyrl_gym.make(env_class,
env_config=..., extras=...)``: ``env_class`` is the dataset row's ``env_class`` column,
``env_config`` the config block ``environment.skyrl_gym.<env_class>``, and ``extras`` every other
column of the row (plus the generator's ``max_turns``). It calls ``init(prompt)`` for the chat the
model starts from, then ``step(reply)`` with each generated reply until ``done``. Here:

* :func:`register_all` registers every lm-gym task (built-in, plugins' and yours: call it after
  registering your own) under its lm-gym id, so ``env_class`` is the task's id
  (``"lm_gym/Wordle-v0"``); :class:`LmGymTextEnv` is the environment.
* the task's constructor arguments: ``env_config`` (a mapping or an OmegaConf ``DictConfig``),
  overridden by the row's ``lm_gym_env_kwargs`` (a dict or its JSON text), so a dataset can carry
  them itself (``split``, ``source="synthetic"``, ...);
* the episode: the row's ``lm_gym_seed`` is the reset seed (so every trajectory of a GRPO group
  plays one game) and, for a single-turn task, ``lm_gym_index`` the sample; without them each
  trajectory draws its own episode;
* ``init`` returns the task's chat (:mod:`lm_gym.core.chat`): its rules as the system message (if
  it has some) and the first observation as the user's; it replaces the row's ``prompt`` (which
  :func:`prompt_rows` makes equal to it);
* ``step`` returns the env's answer as one user message (:meth:`~lm_gym.core.text_env.TextEnv.chat_user_message`;
  none once done), the step's reward (SkyRL places each turn's reward at that turn's last token),
  ``done`` and as ``metadata`` the step's lm-gym ``info`` as JSON-able Python, with
  ``terminated`` and ``truncated``. An extras ``max_turns`` (SkyRL's ``generator.max_turns``,
  which is 1 unless set) ends an episode still running after that many turns as truncated: set it
  to at least the task's turns (Wordle: 6);
* over-long replies are cut to the action space, anything the env refuses raises
  (:mod:`lm_gym.integrations.chat_session`); ``get_metrics`` gives the episode's return, turns
  and final ``info["metrics"]`` (Wordle's ``solved``), which SkyRL averages over episodes.

A dataset for SkyRL's trainer (its ``data.train_data`` parquet files)::

    from datasets import Dataset
    from lm_gym.integrations.skyrl import prompt_rows, register_all

    register_all()  # in the process that runs SkyRL's generator (e.g. its entry point)
    Dataset.from_list(prompt_rows("lm_gym/Wordle-v0", num_prompts=1024)).to_parquet("wordle/train.parquet")
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from skyrl_gym import register, registry
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import registered_tasks, split_kwargs, task_id
from lm_gym.core.text_env import SingleTurnTextEnv
from lm_gym.core.validation import check_int
from lm_gym.integrations.chat_session import ChatSession, task_env

SEED_KEY = "lm_gym_seed"  #: a row's reset seed
INDEX_KEY = "lm_gym_index"  #: a single-turn row's sample index
ENV_KWARGS_KEY = "lm_gym_env_kwargs"  #: a row's task arguments (JSON text, or a dict)
MAX_TURNS_KEY = "max_turns"  #: the turn limit SkyRL's generator puts into the extras
ENTRY_POINT = "lm_gym.integrations.skyrl:LmGymTextEnv"
DEFAULT_GAMES = 1024  #: rows of a multi-turn task's dataset (games, seeds 0 .. 1023)


class LmGymTextEnv(BaseTextEnv):
    """A SkyRL-Gym text environment playing one episode of lm-gym task ``env_id`` (see the module docstring).

    ``task`` is the lm-gym env, ``transcript`` the episode's chat, ``rewards`` the rewards so far.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None, *, env_id: str):
        super().__init__()
        extras = _mapping("extras", extras)
        env_kwargs = {**_mapping("env_config", env_config), **_row_kwargs(extras.get(ENV_KWARGS_KEY))}
        self.env_id = env_id
        self.seed = _optional_int(extras, SEED_KEY)
        self.index = _optional_int(extras, INDEX_KEY)
        max_turns = extras.get(MAX_TURNS_KEY)
        self.max_turns = None if max_turns is None else check_int(f"extras[{MAX_TURNS_KEY!r}]", max_turns, 1)
        self.session = ChatSession(env_id, env_kwargs)
        self.task = self.session.task
        self.rewards: list[float] = []
        self._final_metrics: dict[str, Any] = {}

    @property
    def transcript(self):
        """The episode's chat (:class:`~lm_gym.core.chat.ChatTranscript`); ``None`` before ``init``."""
        return self.session.transcript

    def init(self, prompt: ConversationType | None = None) -> tuple[ConversationType, dict[str, Any]]:
        """Start the row's episode: the task's chat (replacing ``prompt``) and the reset's JSON-able ``info``."""
        self.turns, self.rewards, self._final_metrics = 0, [], {}
        return self.session.start(self.seed, self.index)

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Play the reply ``action``: the env's answer as a user message (none once done), reward, done, info."""
        result = self.session.play(action)
        self.turns += 1
        self.rewards.append(result.reward)
        turn_limit = self.max_turns is not None and self.turns >= self.max_turns
        done = result.terminated or result.truncated or turn_limit
        if done:
            self._final_metrics = dict(result.info.get("metrics") or {})
        observations = [] if done else [{"role": "user", "content": result.answer}]
        metadata = {**result.info, "terminated": result.terminated, "truncated": done and not result.terminated}
        return BaseTextEnvStepOutput(observations=observations, reward=result.reward, done=done, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's ``return`` (sum of its rewards), ``turns`` and final ``info["metrics"]``."""
        return {**self._final_metrics, "return": sum(self.rewards), "turns": self.turns}

    def close(self) -> None:
        self.session.close()


def _mapping(name: str, value: Any) -> dict[str, Any]:
    """``value`` (``None``, a mapping, or an OmegaConf ``DictConfig``, resolved) as a plain dict."""
    if value is None:
        return {}
    if isinstance(value, DictConfig):
        return OmegaConf.to_container(value, resolve=True)
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{name} must be a mapping or None, got {type(value).__name__}: {safe_repr(value)}")
    return dict(value)


def _row_kwargs(value: Any) -> dict[str, Any]:
    """A row's ``lm_gym_env_kwargs``: ``None``, a dict, or its JSON text."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigurationError(f"extras[{ENV_KWARGS_KEY!r}] is not JSON text: {error}") from error
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"extras[{ENV_KWARGS_KEY!r}] must be a dict of the task's arguments or its JSON text, "
            f"got {safe_repr(value)}"
        )
    return dict(value)


def _optional_int(extras: Mapping[str, Any], key: str) -> int | None:
    value = extras.get(key)
    return None if value is None else check_int(f"extras[{key!r}]", value, 0)


def register_all() -> list[str]:
    """Register every lm-gym task not yet in SkyRL-Gym's registry under its lm-gym id; the ids registered.

    Call it again after registering more tasks. An id that SkyRL-Gym already has for another
    environment raises :class:`~lm_gym.core.errors.ConfigurationError`.
    """
    added = []
    for env_id in registered_tasks():
        spec = registry.get(env_id)
        if spec is not None:
            if spec.entry_point != ENTRY_POINT:
                raise ConfigurationError(
                    f"SkyRL-Gym already has an environment {env_id!r} (entry point {safe_repr(spec.entry_point)})"
                )
            continue
        register(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})
        added.append(env_id)
    return added


def prompt_rows(
    env_id: str, split: str = "train", *, num_prompts: int | None = None, **env_kwargs: Any
) -> list[dict[str, Any]]:
    """Rows of a SkyRL dataset of task ``env_id`` on ``split``: ``prompt`` (the chat ``init`` starts the
    episode with), ``env_class`` (the id), ``lm_gym_env_kwargs`` (the task's arguments as JSON text,
    ``split`` included where the task takes one) and the episode: ``lm_gym_index`` for a single-turn
    task (its first ``num_prompts`` samples, default all), ``lm_gym_seed`` for a multi-turn one
    (seeds ``0 .. num_prompts - 1``, default 1,024); the other of the two is ``None``, so rows of
    several tasks share the columns. Write them with ``datasets.Dataset.from_list(rows).to_parquet(path)``."""
    if num_prompts is not None:
        num_prompts = check_int("num_prompts", num_prompts, 1)
    env_id = task_id(env_id)
    kwargs = split_kwargs(env_id, env_kwargs, split)
    task = task_env(env_id, kwargs)
    single_turn = isinstance(task, SingleTurnTextEnv)
    if single_turn:
        count = len(task.samples) if num_prompts is None else min(num_prompts, len(task.samples))
    else:
        count = DEFAULT_GAMES if num_prompts is None else num_prompts
    text_kwargs = json.dumps(kwargs, sort_keys=True)
    rows = []
    for episode in range(count):
        extras = {
            SEED_KEY: None if single_turn else episode,
            INDEX_KEY: episode if single_turn else None,
            ENV_KWARGS_KEY: text_kwargs,
        }
        messages, _ = LmGymTextEnv(extras=extras, env_id=env_id).init()
        rows.append({"prompt": messages, "env_class": env_id, **extras})
    return rows
