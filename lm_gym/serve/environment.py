"""The served task as an OpenEnv ``Environment``, with OpenEnv's action and observation types.

:class:`TaskService` builds the task once per process (data and reward model loaded once) and
gives each session a copy (``TextEnv.replicate()``; at token level a ``TokenLevel`` around one,
with the task's tokenizer and settings). :class:`SessionEnvironment` is one session: OpenEnv's
server makes one per WebSocket connection and calls its ``reset_async`` and ``step_async``,
which go through the service's :class:`~lm_gym.serve.batching.StepBatcher`.

Wire types (``GET /schema`` publishes them):

- actions: :class:`UtteranceAction` ``{"text": str}`` or :class:`TokenAction` ``{"token": int}``
  (strict: no ``"5"`` for ``5``);
- observations: :class:`UtteranceObservation` ``text``, or :class:`TokenObservation`
  ``prompt_ids``, ``prompt_mask``, ``context_ids``, ``context_mask``; both with ``terminated``,
  ``truncated`` and ``info``, and OpenEnv's ``reward`` and ``done`` (``terminated or truncated``);
- state: :class:`TaskState`, OpenEnv's ``episode_id`` and ``step_count`` with ``env_id``,
  ``action_level``, ``spaces`` (:func:`~lm_gym.serve.wire.describe_spaces`) and ``task_digest``
  (:meth:`~lm_gym.serve.config.ServeConfig.task_digest`: servers whose digests are equal play the
  same episodes from the same seeds, and the kwargs themselves stay on the server).

``reset`` takes ``seed`` (``None`` or an int >= 0) and ``options`` (the task's reset options);
copy ``i`` reset with seed ``s`` plays the episode a local env reset with ``s`` plays.
"""

from __future__ import annotations

import inspect
import uuid
from typing import Any

import gymnasium
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import ConfigDict, Field, create_model
from starlette.concurrency import run_in_threadpool

from lm_gym.core.episodes import SPLITS, TaskEpisodes
from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.registration import task_class, task_spec
from lm_gym.core.token_level import TokenLevel
from lm_gym.serve.batching import StepBatcher
from lm_gym.serve.config import ServeConfig
from lm_gym.serve.errors import ServerShuttingDownError, to_wire
from lm_gym.serve.routes import task_split
from lm_gym.serve.wire import describe_spaces, encode_info, to_json

#: How many episodes ``POST /{env}/tasks`` lists (OpenEnv allows a preview; ``/num_tasks`` counts them all).
TASK_PREVIEW = 100

_STRICT = ConfigDict(extra="forbid", strict=True, validate_assignment=True, arbitrary_types_allowed=True)


class UtteranceAction(Action):
    """An utterance-level action: the utterance."""

    model_config = _STRICT
    text: str = Field(description="the utterance (at most the task's max_action_length characters)")


class TokenAction(Action):
    """A token-level action: one token id."""

    model_config = _STRICT
    token: int = Field(description="a token id, 0 <= token < vocab_size")


class _Step(Observation):
    terminated: bool = Field(default=False, description="the episode ended (Gymnasium's terminated)")
    truncated: bool = Field(default=False, description="the episode was cut (Gymnasium's truncated)")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info (JSON; see lm_gym.serve.wire)")


class UtteranceObservation(_Step):
    """An utterance-level observation: the text the policy sees."""

    text: str = Field(default="", description="the observation text")


class TokenObservation(_Step):
    """A token-level observation: the four arrays of the token MDP, as lists."""

    prompt_ids: list[int] = Field(default_factory=list)
    prompt_mask: list[int] = Field(default_factory=list)
    context_ids: list[int] = Field(default_factory=list)
    context_mask: list[int] = Field(default_factory=list)


class TaskState(State):
    """OpenEnv's state with what a client needs to rebuild the spaces."""

    env_id: str = ""
    action_level: str = "utterance"
    spaces: dict[str, Any] = Field(default_factory=dict)
    task_digest: str = Field(default="", description="SHA-256 of the task's id, kwargs and action level")
    split: str | None = Field(default=None, description="the split the session plays (None: the task takes none)")


def wire_types(spaces: dict[str, Any]) -> tuple[type[Action], type[Observation]]:
    """The action and observation types of a server whose spaces :func:`describe_spaces` described.

    The action's JSON schema (``GET /schema``) carries the task's limits (``maxLength`` of the
    text; ``minimum`` and ``maximum`` of the token); the env checks them, so an action over them
    gets ``InvalidActionError`` as from a local env.
    """
    if spaces["action_level"] == "token":
        limits = {"minimum": 0, "maximum": spaces["vocab_size"] - 1}
        token = (int, Field(description=TokenAction.model_fields["token"].description, json_schema_extra=limits))
        return create_model("TokenAction", __base__=TokenAction, token=token), TokenObservation
    limits = {"maxLength": spaces["max_action_length"]}
    text = (str, Field(description=UtteranceAction.model_fields["text"].description, json_schema_extra=limits))
    return create_model("UtteranceAction", __base__=UtteranceAction, text=text), UtteranceObservation


def task_metadata(env_id: str, registered_id: str, action_level: str) -> EnvironmentMetadata:
    """``GET /metadata`` of task ``env_id`` (``registered_id``: as the command line named it): the first line
    of its class docstring as the description, the whole docstring (its manual) as the readme, lm-gym's
    version, and the task's page of lm-gym's documentation (an lm-gym task's generated page, else the
    serving page), as a path in lm-gym's repository: there is no hosted site to link to."""
    from lm_gym import __version__

    manual = inspect.getdoc(task_class(registered_id)) or ""
    summary = manual.split("\n", 1)[0].strip() or f"lm-gym task {env_id}"
    namespace, _, name = env_id.partition("/")
    page = f"docs/environments/{name.lower()}.md" if namespace == "lm_gym" else "docs/serving.md"
    return EnvironmentMetadata(
        name=env_id,
        description=f"lm-gym task {env_id} ({action_level} level): {summary}",
        readme_content=manual,
        version=__version__,
        author="lm-gym",
        documentation_url=page,
    )


class TaskService:
    """The task of one server process: the built env, its copies for sessions, and the batcher."""

    def __init__(self, config: ServeConfig):
        self.config = config
        spec = task_spec(config.env_id)  # ConfigurationError for an id that is not an lm-gym task
        self.env_id = spec.id
        env = gymnasium.make(config.env_id, action_level=config.action_level, **config.env_kwargs).unwrapped
        self.prototype = env
        #: The split the server was started on; ``reset(split=...)`` plays another one's env, built on first use.
        self.split = task_split(config.env_id, config.env_kwargs)
        self.episodes = TaskEpisodes(
            config.env_id,
            config.env_kwargs,
            build=lambda kwargs: gymnasium.make(config.env_id, action_level=config.action_level, **kwargs).unwrapped,
        )
        if self.split in SPLITS or self.split is None:
            self.episodes.add_env(self.split or SPLITS[0], env)
        self.spaces = describe_spaces(env, config.action_level)
        self.action_cls, self.observation_cls = wire_types(self.spaces)
        #: Sessions that have reset at least once and are open: once that many steps wait, a batch goes.
        self.sessions = 0
        self.draining = False
        self.batcher = StepBatcher(config.batch_window_ms / 1000.0, config.batching, lambda: self.sessions)
        self.metadata = task_metadata(self.env_id, config.env_id, config.action_level)

    def new_env(self, split: str | None = None) -> Any:
        """A session's own env: a copy (sharing the task's data, reward model and tokenizer) of the env of
        ``split`` (default: the split the server was started on)."""
        env = self.prototype if split is None else self.episodes.env(split)
        if isinstance(env, TokenLevel):
            return TokenLevel(
                env.env.replicate(),
                env.tokenizer,
                max_prompt_length=env.max_prompt_length,
                max_new_tokens=env.max_new_tokens,
                min_new_tokens=env.min_new_tokens,
                prompt_truncation_side=env.prompt_truncation_side,
                early_eos_penalty=env.early_eos_penalty,
            )
        return env.replicate()

    def observation(self, result: tuple[Any, ...]) -> Observation:
        """A reset's ``(obs, info)`` or a step's five values as the wire observation."""
        if len(result) == 2:
            obs, info = result
            reward, terminated, truncated = None, False, False
        else:
            obs, reward, terminated, truncated, info = result
            reward = float(reward)
        fields = {"text": obs} if self.config.action_level == "utterance" else {k: v.tolist() for k, v in obs.items()}
        return self.observation_cls(
            **fields,
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=encode_info(info),
            reward=reward,
            done=bool(terminated or truncated),
        )


class SessionEnvironment(Environment):
    """One session: OpenEnv's server makes one per WebSocket connection (and one per stateless HTTP call)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, service: TaskService):
        super().__init__()
        self.service = service
        self.env = service.new_env()
        self._state = TaskState(
            env_id=service.env_id,
            action_level=service.config.action_level,
            spaces=service.spaces,
            task_digest=service.config.task_digest(),
            split=service.split,
        )
        self._closed = False
        self._counted = False  # counted in service.sessions from its first reset (OpenEnv builds envs it never plays)

    # OpenEnv calls the async methods when a subclass overrides them; the sync ones serve direct use.
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        env, split, seed = self._episode_env(kwargs.pop("split", None), kwargs.pop("index", None), seed)
        result = self._reset(env, seed, kwargs)
        self.env, self._state.split = env, split
        return self.service.observation(result)

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        from lm_gym.serve.batching import play_steps

        outcome = play_steps([(self.env, self._action(action))])[0]
        if isinstance(outcome, BaseException):
            raise to_wire(outcome)
        self._state.step_count += 1
        return self.service.observation(outcome)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self._refuse_when_draining()
        if episode_id is not None and not isinstance(episode_id, str):
            raise to_wire(ConfigurationError(f"episode_id must be None or a str, got {safe_repr(episode_id)}"))
        try:
            split, index = kwargs.pop("split", None), kwargs.pop("index", None)
            env, split, seed = await run_in_threadpool(self._episode_env, split, index, seed)  # may build a split
            result = await self.service.batcher.call(lambda: self._reset(env, seed, kwargs))
        except Exception as error:
            raise to_wire(error) from None
        self.env = env
        self._state = self._state.model_copy(
            update={"episode_id": episode_id or str(uuid.uuid4()), "step_count": 0, "split": split}
        )
        if not self._counted and not self._closed:
            self._counted = True
            self.service.sessions += 1
        return self.service.observation(result)

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._refuse_when_draining()
        try:
            result = await self.service.batcher.step(self.env, self._action(action))
        except Exception as error:
            raise to_wire(error) from None
        self._state.step_count += 1
        return self.service.observation(result)

    @property
    def state(self) -> TaskState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return self.service.metadata

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._counted:
                self.service.sessions -= 1

    # ---- OpenEnv's Task API (GET /{env}/splits, POST /{env}/tasks, /num_tasks, /task, /task_range) ----
    # OpenEnv calls these on a throwaway session; lm_gym.core.episodes answers (episode i is reset(seed=i)).
    async def list_splits(self) -> list[dict[str, str]]:
        return self.service.episodes.splits()

    async def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """A preview: the split's first :data:`TASK_PREVIEW` episodes (``num_tasks`` counts them all)."""
        return await self._describe(lambda episodes: episodes.describe_range(split, 0, TASK_PREVIEW))

    async def num_tasks(self, split: str) -> int:
        return await self._describe(lambda episodes: episodes.num_episodes(split))

    async def get_task(self, split: str, index: int) -> dict[str, Any]:
        return await self._describe(lambda episodes: episodes.describe(split, index))

    async def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        return await self._describe(lambda episodes: episodes.describe_range(split, start, stop))

    async def _describe(self, answer: Any) -> Any:
        """``answer(episodes)`` off the event loop (a split's env may be built), as JSON; a bad split or index
        is a typed ``ConfigurationError`` (400, named), not OpenEnv's bare "Invalid task index"."""
        try:
            return to_json(await run_in_threadpool(answer, self.service.episodes))
        except Exception as error:
            raise to_wire(error) from None

    # ---- helpers ---------------------------------------------------------------------------
    def _episode_env(self, split: Any, index: Any, seed: Any) -> tuple[Any, str | None, Any]:
        """The env, split and seed of a reset with ``split`` and ``index`` (Task API: index = seed; either may be
        left out: the session's split, the given seed)."""
        if split is None and index is None:
            return self.env, self._state.split, seed
        episodes = self.service.episodes
        if split is not None:
            split = episodes.check_split(split)
        if index is not None:
            index = episodes.check_index(split or self._state.split or "train", index)
            if seed is not None and seed != index:
                raise ConfigurationError(f"reset got index={index} and seed={safe_repr(seed)}: the index is the seed")
            seed = index
        if split is None or not episodes.takes_split:
            return self.env, self._state.split, seed
        env = self.env if split == self._state.split else self.service.new_env(split)
        return env, split, seed

    def _reset(self, env: Any, seed: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        options = kwargs.pop("options", None)
        if kwargs:
            raise ConfigurationError(
                f"reset takes seed, episode_id, options, split and index; got also {sorted(kwargs)}"
            )
        if isinstance(seed, bool):
            raise ConfigurationError(f"seed must be None or a non-negative int, got {safe_repr(seed)}")
        return env.reset(seed=seed, options=options)

    def _action(self, action: Action) -> Any:
        return action.text if isinstance(action, UtteranceAction) else action.token

    def _refuse_when_draining(self) -> None:
        if self.service.draining:
            raise to_wire(ServerShuttingDownError("the server is shutting down and takes no new steps"))
