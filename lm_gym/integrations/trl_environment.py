"""lm-gym's tasks as TRL environments: ``GRPOTrainer(environment_factory=...)`` plays any task through a named tool.

TRL's ``GRPOTrainer`` (1.16) takes an ``environment_factory``: a class with a no-argument
constructor, a ``reset(**row)`` called with each dataset row before the model writes (a string
it returns is appended to the row's last user message), every other public method a tool the
model calls (its Google-style docstring is the tool's schema), and an optional ``get_reward()``
that scores the rollout when the model is done. :func:`environment_factory` makes that class for
any lm-gym task, yours included (``pip install "lm-gym[trl]"``):

* ``reset(**row)`` plays the row's episode: ``lm_gym_seed`` (a multi-turn task's game,
  ``reset(seed=...)``) or ``lm_gym_index`` (a single-turn task's sample,
  ``reset(options={"index": ...})``), the columns of :func:`lm_gym.integrations.trl.prompt_dataset`,
  so every rollout of a GRPO group plays the same episode. It returns the first observation, or
  ``None`` when the row's prompt already ends with it (rows of ``prompt_dataset(..., chat=True)``
  and :func:`environment_dataset`).
* The task's action is one tool of one text argument: Wordle's ``guess(word)``, VisDial's
  ``ask(question)``, your task's from its class attributes ``tool_name``, ``tool_argument`` and
  ``tool_argument_description`` (defaults ``act(text)``, see :class:`TaskTool`). A call is one
  step of the env; it returns what the env answered (the chat view's user message,
  :meth:`~lm_gym.core.text_env.TextEnv.chat_user_message`) and records the step's reward. A bad
  action is the env's to judge: Wordle's invalid guess costs its -1 as in any game; an action the
  env refuses (:class:`~lm_gym.core.errors.InvalidActionError`: not text, over the action space's
  length) plays nothing and the tool answers with the error's text rather than raising, so TRL
  shows the model what was wrong. After the episode ends the tool says so and plays nothing.
* ``get_reward()`` is the episode's return. A model that stops calling the tool before the
  episode ends has its remaining turns played as the empty utterance (what the env gives a player
  who says nothing: Wordle's invalid guess, -1 each), so stopping early never scores better than
  playing on.

Each instance records its episode for checks and logs: ``seed`` or ``index``, ``actions`` (the
utterances the env was stepped with, in order), ``model_turns`` (how many of them the model's
calls sent; the rest were played by ``get_reward``), ``rewards`` (one per step), ``calls`` (every
tool call with its answer and whether it played a turn), ``done`` and ``info`` (the last step's).
TRL runs a turn's tool calls before it drops results that would pass ``max_completion_length``
(and runs none past ``max_tool_calling_iterations``), so an episode's last call may be missing
from the completion the model is trained on; the reward is always the episode the env played.

Wordle::

    from trl import GRPOConfig, GRPOTrainer
    from lm_gym.integrations.trl_environment import environment_dataset, environment_factory

    trainer = GRPOTrainer(
        model="Qwen/Qwen3-0.6B",
        train_dataset=environment_dataset("lm_gym/Wordle-v0", num_prompts=256),
        environment_factory=environment_factory("lm_gym/Wordle-v0"),
        args=GRPOConfig(output_dir="runs/trl-wordle-tools", num_generations=4, max_completion_length=512),
    )
    trainer.train()

TRL's OpenEnv recipe: with ``url=`` (and ``token=``, or the ``LM_GYM_SERVE_TOKEN`` environment
variable, for a server with a token), every instance plays its episodes in a session of a server
of ``python -m lm_gym.serve`` through OpenEnv's own ``GenericEnvClient`` (the ``serve`` extra);
``env_id`` is the served task's id (checked against the server) or ``"lm_gym/Remote-v0"`` (whatever
the server plays), and the task's kwargs are the server's. The dataset: ``environment_dataset(env_id,
url=..., token=...)``.
"""

from __future__ import annotations

import inspect
import keyword
import math
import re
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

from lm_gym.core.errors import ConfigurationError, InvalidActionError, safe_repr
from lm_gym.core.registration import split_kwargs, task_class
from lm_gym.core.text_env import TextEnv, checked_utterance
from lm_gym.integrations.trl import INDEX_COLUMN, MAX_TURNS, REMOTE_ID, SEED_COLUMN, prompt_dataset

DEFAULT_TOOL_NAME = "act"  #: the tool of a task whose class sets no ``tool_name``
DEFAULT_TOOL_ARGUMENT = "text"  #: its argument, when the class sets no ``tool_argument``
DEFAULT_TOOL_ARGUMENT_DESCRIPTION = "your move, as text, as the rules ask for it"
ENDED = "The episode has ended: {name} plays nothing more."
TRL_METHODS = ("reset", "get_reward")  #: the environment's methods that TRL does not offer as tools


@dataclass(frozen=True)
class TaskTool:
    """The tool a task's actions are played through: ``name(argument: str) -> str``.

    Read from the task class's attributes (``getattr`` with defaults, so any ``TextEnv`` works):
    ``tool_name`` (default ``"act"``), ``tool_argument`` (default ``"text"``) and
    ``tool_argument_description`` (one line for the tool's schema). ``rules`` are the task's chat
    rules (``chat_instructions``, else its docstring's "Description" section), whose first
    paragraph the tool's docstring quotes.
    """

    name: str
    argument: str
    argument_description: str
    title: str
    rules: str | None

    @classmethod
    def of(cls, task: type[TextEnv] | None, title: str) -> TaskTool:
        """The tool of task class ``task`` (``None``: a served task unknown here, the defaults), task ``title``."""
        name = getattr(task, "tool_name", None) or DEFAULT_TOOL_NAME
        argument = getattr(task, "tool_argument", None) or DEFAULT_TOOL_ARGUMENT
        description = getattr(task, "tool_argument_description", None) or DEFAULT_TOOL_ARGUMENT_DESCRIPTION
        owner = task.__name__ if task is not None else title
        for attribute, value in (("tool_name", name), ("tool_argument", argument)):
            if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
                raise ConfigurationError(f"{owner}.{attribute} must be a Python identifier, got {safe_repr(value)}")
        if name.startswith("_") or name in TRL_METHODS:
            raise ConfigurationError(
                f"{owner}.tool_name must be a public name other than {' and '.join(TRL_METHODS)} "
                f"(TRL does not offer those as tools), got {name!r}"
            )
        if argument == "self":
            raise ConfigurationError(f"{owner}.tool_argument must not be 'self'")
        if not isinstance(description, str):
            raise ConfigurationError(f"{owner}.tool_argument_description must be a str, got {safe_repr(description)}")
        rules = None
        if task is not None:
            rules = task.chat_instructions if task.chat_instructions is not None else task.default_chat_instructions()
        return cls(name, argument, " ".join(description.split()), title, rules or None)

    def docstring(self) -> str:
        """The tool's Google-style docstring (TRL and ``transformers.utils.get_json_schema`` read its schema)."""
        summary = f"Play one turn of {self.title}: send your {self.argument} and read what the environment answers."
        rules = self.rules.split("\n\n", 1)[0] if self.rules else None
        return "\n\n".join(
            [
                summary,
                *([rules] if rules else []),
                f"Args:\n    {self.argument}: {self.argument_description}",
                f"Returns:\n    The environment's answer to your {self.argument}; once the episode has ended, "
                "a message saying so.",
            ]
        )

    def instructions(self) -> str:
        """A system prompt for a model playing the task through the tool: the rules, then how to play."""
        play = f"Play by calling the tool {self.name}({self.argument}) once per turn until the episode ends."
        return f"{self.rules}\n\n{play}" if self.rules else play


class _LocalEpisodes:
    """Episodes of the task in this process: ``gymnasium.make(env_id, **kwargs)``, its chat hooks."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]):
        import gymnasium

        self.env = gymnasium.make(env_id, **kwargs)
        self.task: TextEnv = self.env.unwrapped

    def reset(self, seed: int | None, index: int | None) -> str:
        options = None if index is None else {"index": index}
        return self.env.reset(seed=seed, options=options)[0]

    def step(self, utterance: Any) -> tuple[str, str, float, bool, dict[str, Any]]:
        """The env's step: ``(utterance as the task saw it, observation, reward, ended, info)``."""
        said = self.task.parse_action(utterance)
        observation, reward, terminated, truncated, info = self.env.step(utterance)
        return said, observation, float(reward), bool(terminated or truncated), info

    def answer(self, previous: str, said: str, observation: str) -> str:
        return self.task.chat_user_message(previous, said, observation)

    def close(self) -> None:
        self.env.close()


class _OpenEnvEpisodes:
    """Episodes in a session of a ``python -m lm_gym.serve`` server, through OpenEnv's ``GenericEnvClient``."""

    def __init__(self, url: str, token: str | None, split: str):
        from openenv.core.generic_client import GenericEnvClient

        headers = {"Authorization": f"Bearer {token}"} if token else None
        self.split = split
        try:
            self.client = GenericEnvClient(base_url=url, headers=headers).sync()
            self.client.connect()
            self.state = self.client.state()
        except Exception as error:  # the handshake's refusal or an unreachable address, named
            from lm_gym.serve.errors import AuthenticationError, RemoteError

            kind = AuthenticationError if "401" in str(error) else RemoteError
            raise kind(f"the lm-gym server at {url} refused or did not answer a session: {error}") from None
        spaces = self.state.get("spaces", {})
        if spaces.get("action_level") != "utterance":
            self.close()
            raise ConfigurationError(
                f"the server at {url} plays its task at the {spaces.get('action_level')!r} level; "
                "a tool plays utterances: serve it with --action-level utterance"
            )
        self.max_length = int(spaces["max_action_length"])
        self.env_id = str(self.state.get("env_id", ""))

    def reset(self, seed: int | None, index: int | None) -> str:
        if index is None:
            result = self.client.reset(seed=seed, split=self.split)
        else:
            result = self.client.reset(options={"index": index}, split=self.split)
        return str(result.observation["text"])

    def step(self, utterance: Any) -> tuple[str, str, float, bool, dict[str, Any]]:
        said = checked_utterance(utterance, self.max_length)  # the rule the server applies, without a round trip
        try:
            result = self.client.step({"text": utterance})
        except RuntimeError as error:  # OpenEnv's "Server error: <lm-gym's typed error>: ..."
            if "InvalidActionError" in str(error):
                raise InvalidActionError(str(error).removeprefix("Server error: ")) from None
            raise
        observation = result.observation
        return said, str(observation["text"]), float(result.reward), bool(result.done), observation.get("info", {})

    def answer(self, previous: str, said: str, observation: str) -> str:
        # the served task's own hook runs on the server's env, out of reach: TextEnv's rule, which reads
        # only the texts (what the observation adds, without the echo of the reply)
        return TextEnv.chat_user_message(self, previous, said, observation)  # type: ignore[arg-type]

    def close(self) -> None:
        self.client.close()


def _close(episodes: Any) -> None:
    if episodes is not None:
        episodes.close()


class TaskEnvironment:
    """The base of the classes :func:`environment_factory` makes (each adds its task's tool method).

    Only ``reset``, ``get_reward`` and the tool are public functions: TRL offers every other
    public method of the class to the model as a tool.
    """

    env_id: ClassVar[str]
    split: ClassVar[str]
    env_kwargs: ClassVar[dict[str, Any]]
    url: ClassVar[str | None] = None
    _token: ClassVar[str | None] = None  # a server's bearer token (private: kept out of logs and reprs)
    tool: ClassVar[TaskTool]

    def __init__(self):
        self._episodes: _LocalEpisodes | _OpenEnvEpisodes | None = None  # opened on the first reset
        self._finalizer: weakref.finalize | None = None
        self._observation = ""
        self.seed: int | None = None
        self.index: int | None = None
        self.actions: list[str] = []
        self.model_turns = 0
        self.rewards: list[float] = []
        self.calls: list[dict[str, Any]] = []
        self.done = True
        self.info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str | None:
        """Play the episode of dataset row ``row``: its ``lm_gym_seed`` (``reset(seed=...)``) or ``lm_gym_index``
        (``reset(options={"index": ...})``). Returns the first observation, or ``None`` when the row's
        ``prompt`` already ends with it."""
        seed, index = row.get(SEED_COLUMN), row.get(INDEX_COLUMN)
        if seed is None and index is None:
            raise ConfigurationError(
                f"a row of {self.env_id}'s dataset needs {SEED_COLUMN!r} (a game's seed) or {INDEX_COLUMN!r} "
                f"(a sample's index): build it with environment_dataset({self.env_id!r}, ...)"
            )
        prompt = row.get("prompt")
        if isinstance(prompt, str):
            raise ConfigurationError(
                "TRL plays tools in chats: build the dataset with environment_dataset(...) or prompt_dataset(..., "
                "chat=True), whose prompts are chat messages"
            )
        if self._episodes is None:
            self._episodes = self._open()
            self._finalizer = weakref.finalize(self, _close, self._episodes)
        self.seed, self.index = (None, int(index)) if index is not None else (int(seed), None)
        self._observation = self._episodes.reset(self.seed, self.index)
        self.actions, self.model_turns, self.rewards, self.calls = [], 0, [], []
        self.done, self.info = False, {}
        shown = prompt[-1].get("content") if prompt else None
        if isinstance(shown, str) and shown.strip().endswith(self._observation.strip()):
            return None
        if isinstance(shown, str) and shown and not shown[-1].isspace():
            return "\n\n" + self._observation
        return self._observation

    def get_reward(self) -> float:
        """The episode's return: the sum of its rewards, after playing the turns the model did not take as the
        empty utterance (stopping where the env refuses that utterance)."""
        if self._episodes is None:
            raise ConfigurationError("get_reward() before reset(): TRL resets each environment with its row first")
        while not self.done:
            if len(self.actions) >= MAX_TURNS:
                raise RuntimeError(f"{self.env_id}'s episode still running after {MAX_TURNS} turns")
            try:
                self._step("")
            except InvalidActionError:
                break
        return math.fsum(self.rewards)

    def _call_tool(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        """A call of the tool by the model: one step, or an answer saying why nothing was played."""
        tool = self.tool
        if len(args) == 1 and not kwargs:  # called from Python as its signature shows: tool(value)
            args, kwargs = (), {tool.argument: args[0]}
        call: dict[str, Any] = {"arguments": dict(kwargs) if not args else {"args": list(args), **kwargs}}
        self.calls.append(call)
        if args or set(kwargs) != {tool.argument}:
            call["played"] = False
            call["answer"] = f"{tool.name} takes one argument, {tool.argument}; got {safe_repr(call['arguments'])}."
        elif self.done:
            call["played"] = False
            call["answer"] = ENDED.format(name=tool.name)
        else:
            try:
                answer = self._step(kwargs[tool.argument])
            except InvalidActionError as error:  # the env refused it: nothing played, the episode goes on
                call["played"], call["answer"] = False, f"Invalid {tool.argument}: {error}"
            else:
                self.model_turns += 1
                call["played"], call["answer"] = True, answer
        return call["answer"]

    def _step(self, utterance: Any) -> str:
        """One step of the episode; the answer the tool gives."""
        said, observation, reward, ended, info = self._episodes.step(utterance)
        self.actions.append(utterance)
        self.rewards.append(reward)
        self.done, self.info = ended, info
        previous, self._observation = self._observation, observation
        if ended:
            return f"{ENDED.format(name=self.tool.name)} Its return: {math.fsum(self.rewards):g}."
        return self._episodes.answer(previous, said, observation)

    def _open(self) -> _LocalEpisodes | _OpenEnvEpisodes:
        if self.url is None:
            return _LocalEpisodes(self.env_id, split_kwargs(self.env_id, self.env_kwargs, self.split))
        return _OpenEnvEpisodes(self.url, self._token, self.split)


def _tool_method(tool: TaskTool):
    """The tool as a method named ``tool.name`` of one ``str`` argument ``tool.argument``, documented (TRL reads
    its signature, type hints and docstring)."""

    def method(self: TaskEnvironment, *args: Any, **kwargs: Any) -> str:
        return self._call_tool(args, kwargs)

    parameters = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter(tool.argument, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str),
    ]
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)
    method.__annotations__ = {tool.argument: str, "return": str}
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = tool.docstring()
    return method


def _class_name(env_id: str) -> str:
    """``lm_gym/Wordle-v0`` -> ``WordleEnvironment`` (TRL logs ``get_reward`` under the class's name)."""
    words = re.split(r"[^0-9A-Za-z]+", env_id.rsplit("/", 1)[-1].rsplit("-v", 1)[0])
    name = "".join(word[:1].upper() + word[1:] for word in words)
    return f"{name if name[:1].isalpha() else 'Task' + name}Environment"


def _served_task(url: str, token: str | None, env_id: str, split: str) -> tuple[str, type[TextEnv] | None]:
    """The id of the task the server at ``url`` plays and its class (``None`` when not registered here);
    checks that it plays ``env_id`` unless that is ``lm_gym/Remote-v0``."""
    probe = _OpenEnvEpisodes(url, token, split)
    probe.close()
    if env_id != REMOTE_ID and probe.env_id != env_id:
        raise ConfigurationError(f"the server at {url} plays {probe.env_id!r}, not env_id={env_id!r}")
    try:
        return probe.env_id, task_class(probe.env_id)
    except Exception:  # a task registered only on the server's side: the default tool
        return probe.env_id, None


def environment_factory(
    env_id: str,
    split: str = "train",
    *,
    url: str | None = None,
    token: str | None = None,
    **env_kwargs: Any,
) -> type[TaskEnvironment]:
    """The class ``GRPOTrainer(environment_factory=...)`` takes for task ``env_id`` on ``split`` (see the module
    docstring): a no-argument constructor, ``reset(**row)``, the task's tool and ``get_reward()``.

    ``env_kwargs`` are the task's (as for ``gymnasium.make``; each instance makes its env on its first
    reset). With ``url``, the instances play in sessions of the ``lm_gym.serve`` server there, through
    OpenEnv's ``GenericEnvClient`` (``token``: its bearer token, default the ``LM_GYM_SERVE_TOKEN``
    environment variable); the server is asked now, so a wrong address, token or task fails here.
    """
    if not isinstance(env_id, str):
        raise ConfigurationError(f"env_id must be a task id such as 'lm_gym/Wordle-v0', got {safe_repr(env_id)}")
    if not isinstance(split, str):
        raise ConfigurationError(f"split must be a str such as 'train', got {safe_repr(split)}")
    if url is None:
        if token is not None:
            raise ConfigurationError("token is a server's: give it with url=...")
        if env_id == REMOTE_ID:
            raise ConfigurationError(f"{REMOTE_ID} is a served task: give the server's url=...")
        served_id, task = env_id, task_class(env_id)
    else:
        if env_kwargs:
            raise ConfigurationError(
                f"a served task's kwargs are the server's; got {sorted(env_kwargs)} with url={url!r}"
            )
        from lm_gym.serve.auth import client_token

        token = client_token(token)
        served_id, task = _served_task(url, token, env_id, split)
    tool = TaskTool.of(task, title=served_id)
    namespace = {
        "env_id": env_id,
        "split": split,
        "env_kwargs": dict(env_kwargs),
        "url": url,
        "_token": token,
        "tool": tool,
        tool.name: _tool_method(tool),
        "__doc__": f"{env_id} as a TRL environment: reset(**row), {tool.name}({tool.argument}) and get_reward().",
        "__module__": __name__,
    }
    return type(_class_name(served_id), (TaskEnvironment,), namespace)


def environment_dataset(
    env_id: str,
    split: str = "train",
    *,
    num_prompts: int | None = None,
    url: str | None = None,
    token: str | None = None,
    **env_kwargs: Any,
):
    """The ``train_dataset`` of :func:`environment_factory`'s class: :func:`~lm_gym.integrations.trl.prompt_dataset`
    as chats (a row per game with ``lm_gym_seed``, or per sample with ``lm_gym_index``), the system message
    the task's rules and how to call its tool (:meth:`TaskTool.instructions`), the user message the
    episode's first observation. With ``url`` (and ``token``), the served task's."""
    if url is None:
        task = task_class(env_id)
        return prompt_dataset(
            env_id,
            split,
            num_prompts=num_prompts,
            chat=True,
            system_prompt=TaskTool.of(task, env_id).instructions(),
            **env_kwargs,
        )
    tool = environment_factory(env_id, split, url=url, token=token, **env_kwargs).tool
    kwargs = {"url": url} if token is None else {"url": url, "token": token}
    return prompt_dataset(
        REMOTE_ID, split, num_prompts=num_prompts, chat=True, system_prompt=tool.instructions(), **kwargs
    )
