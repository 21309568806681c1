"""``lm_gym/Mixture-v0``: episodes of several registered tasks, drawn by weight, in one env."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lm_gym.core.errors import ConfigurationError, ResetNeededError, safe_repr
from lm_gym.core.registration import takes_argument, task_class, task_spec, token_settings, unknown_arguments
from lm_gym.core.text_env import RewardQuery, StepResult, TextEnv, checked_utterance
from lm_gym.core.token_level import MAX_TOKENS
from lm_gym.core.validation import check_choice, check_int, check_number

#: Token-level arguments that a task's entry of ``task_kwargs`` may hold: that task's protocol in the mixture.
PROTOCOL_ARGUMENTS = ("max_prompt_length", "max_new_tokens", "min_new_tokens", "prompt_truncation_side")
#: Arguments of the whole mixture, never of one task.
MIXTURE_ARGUMENTS = ("action_level", "tokenizer", "early_eos_penalty", "render_mode")
#: The offline tasks of :attr:`MixtureEnv.offline_kwargs`: a single-turn pair and a multi-turn game.
OFFLINE_TASKS = ("lm_gym/IMDB-v0", "lm_gym/CommonGen-v0", "lm_gym/Wordle-v0")


class TaskMeta(dict):
    """A query's ``meta`` as its task gave it, plus the task's name in :attr:`task` (not a key, so
    the task's own reward sees exactly its own meta); :class:`MixtureReward` routes by it."""

    __slots__ = ("task",)

    def __init__(self, meta: Mapping[str, Any], task: str):
        dict.__init__(self, meta)
        self.task = task

    def __reduce__(self):
        return TaskMeta, (dict(self), self.task)


class MixtureReward:
    """The batched reward of a :class:`MixtureEnv`: the queries of each task (their ``meta`` is a
    :class:`TaskMeta`) scored by that task's own batched reward, one call per task with queries."""

    def __init__(self, reward_fns: Mapping[str, Any]):
        self.reward_fns = dict(reward_fns)

    def __call__(self, prompts, utterances, references, meta) -> np.ndarray:
        tasks = [getattr(query_meta, "task", None) for query_meta in meta]
        first = tasks[0] if tasks else None
        if tasks and self.reward_fns.get(first) is not None and tasks.count(first) == len(tasks):
            # one task's queries only (a one-task mixture, or a step where all copies play one task):
            # its reward sees the lists as they are, in the same order as the grouping below gives them
            return self._score(first, prompts, utterances, references, meta)
        groups: dict[str, list[int]] = {}
        for index, task in enumerate(tasks):
            if self.reward_fns.get(task) is None:
                raise ConfigurationError(
                    f"MixtureReward scores the queries of a MixtureEnv's prepare_step (their meta names a task "
                    f"with a reward model); query {index} has meta {safe_repr(meta[index])}"
                )
            groups.setdefault(task, []).append(index)
        scores = np.zeros(len(meta), dtype=np.float64)
        for task, rows in groups.items():
            scores[rows] = self._score(
                task, [prompts[i] for i in rows], [utterances[i] for i in rows], [references[i] for i in rows],
                [meta[i] for i in rows],
            )  # fmt: skip
        return scores

    def _score(self, task: str, prompts, utterances, references, meta) -> np.ndarray:
        """Task ``task``'s batched reward of its queries, as ``float64``, checked for shape."""
        values = np.array(self.reward_fns[task](prompts, utterances, references, meta), dtype=np.float64)
        if values.shape != (len(meta),):
            raise ValueError(f"the reward of {task} returned shape {values.shape}, expected ({len(meta)},)")
        return values


@dataclasses.dataclass(frozen=True)
class _Task:
    """One task of a mixture as it is built: its class, constructor arguments and token-level protocol."""

    name: str
    cls: type[TextEnv]
    kwargs: dict[str, Any]
    protocol: dict[str, Any]


class MixtureEnv(TextEnv):
    """Several registered tasks in one env: each episode is one of them, drawn by weight.

    ## Description
    A run on several tasks at once (multi-task RL, a policy that must do each of them). Every
    episode draws a task from ``tasks`` with probability proportional to its weight, using the
    env's RNG, and plays one episode of it exactly as the task's own env does: its
    observations, rewards, ``info`` and metrics. ``info["task"]`` names the episode's task
    (the key given in ``tasks``) at reset and at every step. Any registered lm-gym task can be
    part of a mixture (single-turn and multi-turn ones, a user's own), except a mixture.

    For example, IMDB and CommonGen, drawn alike, offline::

        gymnasium.make_vec(
            "lm_gym/Mixture-v0", num_envs=16, vectorization_mode="vector_entry_point",
            tasks={"lm_gym/IMDB-v0": 1.0, "lm_gym/CommonGen-v0": 1.0},
            task_kwargs={"lm_gym/IMDB-v0": {"source": "synthetic"}, "lm_gym/CommonGen-v0": {"source": "synthetic"}},
        )

    ## Action Space
    ``Text`` of printable ASCII, as long as the longest action of its tasks: the utterance. It is
    cut to the episode's task's own limit and handed to that task, which treats it as its own
    env does. A non-``str`` action or one over the mixture's limit raises ``InvalidActionError``.
    At ``action_level="token"`` the action is a token id (``Discrete(vocab_size)``, see
    ``lm_gym.core.TokenLevel``) and every utterance follows its task's own token-level
    protocol: its ``max_new_tokens``, ``min_new_tokens`` (EOS masked before; IMDB: 48),
    prompt length, truncation side and character limit (``TextEnv.token_protocol``).

    ## Observation Space
    ``Text`` as long as the longest observation of its tasks: the episode's task's observation.
    At token level: the ``Dict`` of token ids and masks of ``TokenLevel``, arrays as wide as the
    mixture's ``max_prompt_length`` and ``max_new_tokens`` (the largest of its tasks' by
    default); a task with shorter limits uses its own within them (its prompt keeps at most its
    own ``max_prompt_length`` tokens, left-padded).

    ## Rewards
    The episode's task's rewards. At every step the utterances of each task are scored by that
    task's own batched reward: ``reward_fn`` is a ``MixtureReward`` that routes each query
    (its ``meta`` is a ``TaskMeta`` naming the task) to its task's reward, one call per task
    that has queries; tasks whose reward needs no model (Wordle) need no call.

    ## Starting State
    A task drawn by weight with the env's RNG (or ``reset(options={"task": name})``), then its
    own starting state (``options={"task": name, "task_options": {...}}`` passes reset options
    to it, e.g. ``{"index": 3}``). Each task's env is seeded from the mixture's RNG the first
    time it plays after the mixture was seeded, so the same seed plays the same episodes.
    ``info`` is the task's, plus ``task``.

    ## Episode End
    When the task's episode ends. ``info["metrics"]`` is the task's (IMDB: ``sentiment``,
    ``num_words``; Wordle: ``solved``, ``num_guesses``, ``return``), with ``info["task"]``
    beside it: evaluations group episodes by it (the baselines report every task's results,
    see the results format). ``env.task_corpus_metrics(final_infos)`` gives each task's corpus
    metrics of its own episodes, named ``"<task>/<metric>"``; ``lm_gym.metrics.corpus_metrics(
    env.task_envs[name], its_final_infos)`` gives one task's with diversity and perplexity.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``tasks`` | (required) | ``{task id: weight}`` (weights >= 0, not all 0), or a list of ids (equal weights) |
    | ``task_kwargs`` | ``None`` | ``{task id: {argument: value}}``: each task's arguments (see below) |
    | ``split`` | ``None`` | given to every task that takes a ``split`` and has none in ``task_kwargs`` |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: one tokenizer for every task; ``None``: see below |
    | ``max_prompt_length`` | the tasks' largest | token level: the prompt arrays' width; caps every task's |
    | ``max_new_tokens`` | the tasks' largest | token level: the context arrays' width; caps every task's |
    | ``min_new_tokens`` | ``0`` | token level: a floor under every task's own ``min_new_tokens`` |
    | ``prompt_truncation_side`` | ``"left"`` | token level: unused, each task keeps its own |
    | ``early_eos_penalty`` | ``1.0`` | token level: the penalty for EOS before the task's ``min_new_tokens`` |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    ``task_kwargs[id]`` holds the task's constructor arguments and its token-level
    ``max_prompt_length``, ``max_new_tokens``, ``min_new_tokens`` and ``prompt_truncation_side``
    in the mixture. ``split`` is what the baselines pass (``"train"``, ``"validation"``). At
    token level a ``tokenizer`` is a ``transformers`` tokenizer, hub name or path; ``None``
    trains a byte-level BPE on the union of the tasks' corpora (cached).

    A task id is a registered id (``"module:id"`` imports ``module`` first); its registered
    default arguments apply, overridden by ``task_kwargs``. Each task's token-level protocol is
    its class's ``token_level_defaults`` and ``generation_defaults`` (``min_new_tokens`` lowered
    to ``max_new_tokens`` when larger), overridden by its ``task_kwargs``. A weight of 0 keeps a
    task in the mixture (``reset(options={"task": ...})`` plays it) without drawing it.

    Bad arguments raise ``ConfigurationError`` naming the argument, before any task is built:
    an unknown task id, a weight that is not a number, negative, or all weights zero,
    ``task_kwargs`` for a task not in ``tasks`` or holding an argument the task does not take,
    a mixture inside a mixture. A task that fails to build closes those built before it.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/Mixture-v0", num_envs=N, vectorization_mode="vector_entry_point",
    tasks=...)`` returns a ``TextVectorEnv``: N copies, copy ``i`` seeded with ``seed + i``, each
    drawing its own tasks; a step scores all utterances with one call of ``MixtureReward``, so
    one batched call of each task's reward. With ``action_level="token"``, a ``TokenVectorEnv``
    whose copies each follow their episode's task's protocol. The copies share every task's
    data and reward model.

    ## Version History
    * v0: initial version.
    """

    offline_kwargs: ClassVar[dict[str, Any]] = {
        "tasks": dict.fromkeys(OFFLINE_TASKS, 1.0),
        "task_kwargs": {"lm_gym/IMDB-v0": {"source": "synthetic"}, "lm_gym/CommonGen-v0": {"source": "synthetic"}},
    }
    reset_options: ClassVar[tuple[str, ...]] = ("task", "task_options")

    def __init__(
        self,
        tasks: Mapping[str, float] | Sequence[str],
        task_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
        split: str | None = None,
        render_mode: str | None = None,
    ):
        if render_mode is not None:
            check_choice("render_mode", render_mode, self.metadata["render_modes"])
        weights = _check_tasks(tasks)
        planned = _plan_tasks(weights, _check_task_kwargs(task_kwargs, weights), split)
        envs: dict[str, TextEnv] = {}
        try:
            for task in planned:
                try:
                    envs[task.name] = task.cls(**task.kwargs)
                except Exception as error:
                    error.add_note(f"(while building task {task.name!r} of lm_gym/Mixture-v0)")
                    raise
        except BaseException:
            for env in envs.values():
                env.close()
            raise
        super().__init__(
            max_observation_length=max(env.observation_space.max_length for env in envs.values()),
            max_action_length=max(env.action_space.max_length for env in envs.values()),
            render_mode=render_mode,
        )
        self._envs = envs
        self.task_names: tuple[str, ...] = tuple(envs)
        total = sum(weights.values())
        #: Each task's probability of being drawn, in the order of ``task_names``.
        self.probabilities: tuple[float, ...] = tuple(weights[name] / total for name in self.task_names)
        self._cumulative = np.cumsum(self.probabilities)
        self._cumulative[-1] = 1.0
        self._protocols = {
            task.name: {**task.protocol, "max_utterance_chars": envs[task.name].action_space.max_length}
            for task in planned
        }
        #: The MDP's settings at token level: the tasks' largest (per instance; the class's is a placeholder).
        self.token_level_defaults = {
            "max_prompt_length": max(p["max_prompt_length"] for p in self._protocols.values()),
            "max_new_tokens": max(p["max_new_tokens"] for p in self._protocols.values()),
        }
        self.generation_defaults = {}  # each utterance follows its task's (token_protocol)
        fns = {name: env.reward_fn for name, env in envs.items()}
        self.reward_fn = MixtureReward(fns) if any(fn is not None for fn in fns.values()) else None
        self._task: str | None = None
        self._env: TextEnv | None = None  # the current task's env
        self._limit = self.action_space.max_length  # its action limit (the mixture's before the first reset)
        self._seeded_from: Any = None  # the RNG that seeded the tasks' envs
        self._pending_seeds: dict[str, int] = {}  # seeds of the tasks not yet played since then
        self._limits = {name: env.action_space.max_length for name, env in envs.items()}

    # ---- what the mixture holds ----------------------------------------------------------
    @property
    def task_envs(self) -> Mapping[str, TextEnv]:
        """Each task's env, by name (the keys of ``tasks``): read-only."""
        return dict(self._envs)

    @property
    def current_task(self) -> str:
        """The task of the current episode (of the last one once it ended).

        Raises :class:`~lm_gym.core.errors.ResetNeededError` before the first ``reset()``."""
        if self._task is None:
            raise ResetNeededError("MixtureEnv has no current task before reset(); call reset() first")
        return self._task

    # ---- task hooks ----------------------------------------------------------------------
    def _new_episode(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        task, task_options = self._episode_options(options) if options else (None, None)
        rng = self.np_random
        saved = rng.bit_generator.state if task_options else None  # the task may refuse its options
        pending = self._pending_seeds
        if self._seeded_from is not rng:  # seeded anew: every task's env gets a seed from this RNG
            seeds = rng.integers(2**31, size=len(self.task_names))
            pending = {name: int(seed) for name, seed in zip(self.task_names, seeds, strict=True)}
        if task is None:
            task = self.task_names[self._draw(rng)]
        return self._start_task(task, task_options, rng, pending, saved)

    def _start_task(
        self, task: str, task_options: dict[str, Any] | None, rng: Any, pending: dict[str, int], saved: Any
    ) -> tuple[str, dict[str, Any]]:
        """Reset ``task``'s env (with its pending seed, if any) and make it the current task; on failure
        restore the RNG state ``saved`` (unless ``None``) and keep the mixture's state."""
        env = self._envs[task]
        seed = pending.get(task)
        try:
            observation, info = env.reset(seed=seed, options=task_options)
        except Exception:
            if saved is not None:
                rng.bit_generator.state = saved
            raise
        if task in pending:
            pending = {name: seed for name, seed in pending.items() if name != task}
        self._pending_seeds = pending
        self._seeded_from, self._task, self._env, self._limit = rng, task, env, self._limits[task]
        return observation, {**info, "task": task}

    def _draw(self, rng: np.random.Generator) -> int:
        if len(self.task_names) == 1:  # nothing to draw: the RNG is left as it is
            return 0
        return int(np.searchsorted(self._cumulative, rng.random(), side="right"))

    def _episode_options(self, options: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        task, task_options = options.get("task"), options.get("task_options")
        if task is not None and (not isinstance(task, str) or task not in self._envs):
            raise ConfigurationError(f"options['task'] must be one of {list(self.task_names)}, got {safe_repr(task)}")
        if task_options is not None:
            if task is None:
                raise ConfigurationError("options['task_options'] needs options['task'], the task they are for")
            if not isinstance(task_options, dict):
                raise ConfigurationError(
                    f"options['task_options'] must be a dict of {task}'s reset options, got {safe_repr(task_options)}"
                )
        return task, task_options

    def prepare_step(self, action: Any) -> tuple[str, RewardQuery | None]:
        if self._needs_reset:
            raise ResetNeededError(
                "MixtureEnv.step() called before reset() or after the episode ended; call reset() first"
            )
        utterance, query = self._env.prepare_step(self._fit(action))
        if query is not None:
            query = RewardQuery(query.prompt, query.utterance, query.references, TaskMeta(query.meta, self._task))
        return utterance, query

    def parse_action(self, action: Any) -> str:
        """The utterance of ``action`` for the current episode's task: a ``str`` within the mixture's
        limit, cut to the task's and parsed as the task parses it. Changes no state."""
        if self._env is None:
            return checked_utterance(action, self.action_space.max_length)
        return self._env.parse_action(self._fit(action))

    def _fit(self, action: Any) -> Any:
        """``action`` for the episode's task: one within the task's limit goes as it is (the task checks it
        as its own env does); a longer one is checked against the mixture's limit and cut to the task's."""
        if isinstance(action, str) and len(action) <= self._limit:
            return action
        return checked_utterance(action, self.action_space.max_length)[: self._limit]

    def _transition(self, utterance: str, score: float | None) -> StepResult:
        # the task's own step's last part: the task's env fitted the observation into its observation
        # space, which the mixture's contains (``_observe``)
        observation, reward, terminated, truncated, info = self._env.finish_step(utterance, score)
        return observation, reward, terminated, truncated, {**info, "task": self._task}

    def _observe(self, text: str) -> str:
        # the task's env fitted it into its observation space, which the mixture's contains
        self._last_observation = text
        return text

    def token_protocol(self) -> dict[str, Any]:
        """The current episode's task's token-level protocol (its lengths, truncation side and character
        limit); ``{}`` before the first reset."""
        return {} if self._task is None else self._protocols[self._task]

    def task_protocol(self, task: str) -> dict[str, Any]:
        """Task ``task``'s token-level protocol in this mixture (a copy): ``max_prompt_length``,
        ``max_new_tokens``, ``min_new_tokens``, ``prompt_truncation_side``, ``max_utterance_chars``."""
        return dict(self._protocols[task])

    # ---- optional hooks ------------------------------------------------------------------
    def chat_system_message(self) -> str | None:
        """The current episode's task's chat system message (its own ``chat_system_message()``), unless
        ``chat_instructions`` is set on the mixture; before the first reset, the mixture's own."""
        if self._env is None or self.chat_instructions is not None:
            return super().chat_system_message()
        return self._env.chat_system_message()

    def chat_user_message(self, previous_observation: str, utterance: str, observation: str) -> str:
        """The current episode's task's chat user message for the step (its own ``chat_user_message``)."""
        if self._env is None:
            return super().chat_user_message(previous_observation, utterance, observation)
        return self._env.chat_user_message(previous_observation, utterance, observation)

    def demonstrations(self) -> list[tuple[str, str]]:
        """Every task's demonstrations that it has (tasks without any are left out)."""
        pairs: list[tuple[str, str]] = []
        for env in self._envs.values():
            try:
                pairs.extend(env.demonstrations())
            except ConfigurationError:
                continue
        if not pairs:
            raise ConfigurationError(f"none of the tasks {list(self.task_names)} has demonstrations")
        return pairs

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        """The union of the tasks' corpora, cached under a key of theirs."""
        keys, corpora = [], []
        for name, env in self._envs.items():
            try:
                key, corpus = env.tokenizer_corpus()
            except ConfigurationError as error:
                raise ConfigurationError(
                    f"task {name} of the mixture has no tokenizer corpus ({error}); pass tokenizer=<name or path>"
                ) from error
            keys.append(key)
            corpora.append(corpus)
        digest = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]
        return f"mixture-{digest}", itertools.chain.from_iterable(corpora)

    def task_corpus_metrics(self, episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
        """Each task's ``task_corpus_metrics`` of its own episodes (grouped by ``info["task"]``),
        named ``"<task>/<metric>"``."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for episode in episodes:
            task = episode.get("task")
            if task not in self._envs:
                raise ConfigurationError(
                    f"each episode's info must name one of the tasks {list(self.task_names)} in info['task'], "
                    f"got {safe_repr(task)}"
                )
            groups.setdefault(task, []).append(episode)
        return {
            f"{task}/{key}": value
            for task, group in groups.items()
            for key, value in self._envs[task].task_corpus_metrics(group).items()
        }

    # ---- copies and clean-up -------------------------------------------------------------
    def replicate(self) -> MixtureEnv:
        clone = super().replicate()
        clone._envs = {name: env.replicate() for name, env in self._envs.items()}
        clone._task, clone._env, clone._limit = None, None, self.action_space.max_length
        clone._seeded_from, clone._pending_seeds = None, {}
        return clone

    def close(self) -> None:
        for env in self._envs.values():
            env.close()


def _check_tasks(tasks: Any) -> dict[str, float]:
    """``tasks`` as ``{id: weight}``: ids are strs, weights finite numbers >= 0, not all 0."""
    if isinstance(tasks, (list, tuple)) and all(isinstance(task, str) for task in tasks):
        if len(set(tasks)) != len(tasks):
            raise ConfigurationError(f"tasks names a task twice: {safe_repr(tasks)}")
        tasks = dict.fromkeys(tasks, 1.0)
    if not isinstance(tasks, Mapping) or not tasks:
        raise ConfigurationError(
            "tasks must be a non-empty dict {task id: weight} or a list of task ids, got " + safe_repr(tasks)
        )
    weights = {}
    for task, weight in tasks.items():
        if not isinstance(task, str) or not task:
            raise ConfigurationError(f"tasks: each key must be a registered task id (a str), got {safe_repr(task)}")
        if isinstance(weight, (bool, np.bool_)):
            raise ConfigurationError(f"tasks[{task!r}] must be a non-negative number, got {safe_repr(weight)}")
        weights[task] = check_number(f"tasks[{task!r}]", weight, minimum=0)
    if not sum(weights.values()) > 0:
        raise ConfigurationError(f"tasks: the weights must not all be 0, got {safe_repr(dict(tasks))}")
    return weights


def _check_task_kwargs(task_kwargs: Any, weights: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    if task_kwargs is None:
        return {}
    if not isinstance(task_kwargs, Mapping):
        raise ConfigurationError(
            f"task_kwargs must be None or a dict {{task id: {{argument: value}}}}, got {safe_repr(task_kwargs)}"
        )
    checked = {}
    for task, kwargs in task_kwargs.items():
        if task not in weights:
            raise ConfigurationError(f"task_kwargs names {safe_repr(task)}, which is not in tasks ({list(weights)})")
        if not isinstance(kwargs, Mapping) or not all(isinstance(key, str) for key in kwargs):
            raise ConfigurationError(f"task_kwargs[{task!r}] must be a dict of arguments, got {safe_repr(kwargs)}")
        mixture_wide = sorted(set(kwargs) & set(MIXTURE_ARGUMENTS))
        if mixture_wide:
            raise ConfigurationError(
                f"task_kwargs[{task!r}] holds {mixture_wide}, which apply to the whole mixture: pass them to it"
            )
        checked[task] = dict(kwargs)
    return checked


def _plan_tasks(weights: Mapping[str, float], task_kwargs: Mapping[str, dict[str, Any]], split: Any) -> list[_Task]:
    """Each task's class, constructor arguments and token protocol, checked before any is built."""
    planned = []
    for name in weights:
        try:
            cls = task_class(name)
            spec = task_spec(name)
        except ConfigurationError as error:
            raise ConfigurationError(f"tasks: {error}") from None
        if issubclass(cls, MixtureEnv):
            raise ConfigurationError(f"tasks: {name} is a mixture; a mixture cannot hold a mixture (list its tasks)")
        # the registered default arguments (the mixture-wide ones are the mixture's own to set)
        arguments = {key: value for key, value in spec.kwargs.items() if key not in MIXTURE_ARGUMENTS}
        arguments.update(task_kwargs.get(name, {}))
        given = {key: arguments.pop(key) for key in PROTOCOL_ARGUMENTS if key in arguments}
        if split is not None and "split" not in arguments and takes_argument(cls, "split"):
            arguments["split"] = split
        unknown, accepted = unknown_arguments(cls, arguments)
        if unknown:
            raise ConfigurationError(
                f"task_kwargs[{name!r}]: {cls.__name__} takes no argument {', '.join(unknown)}; it takes "
                f"{accepted} and the token level's {list(PROTOCOL_ARGUMENTS)}"
            )
        planned.append(_Task(name, cls, arguments, _protocol(name, cls, given)))
    return planned


def _protocol(name: str, cls: type[TextEnv], given: Mapping[str, Any]) -> dict[str, Any]:
    """Task ``name``'s token-level protocol: its class's settings as ``gymnasium.make`` gives them
    (:func:`~lm_gym.core.registration.token_settings`, ``given`` over its defaults), checked, with the
    token level's defaults where the class has none."""
    settings = {"prompt_truncation_side": "left", **token_settings(cls, given)}
    where = f"task_kwargs[{name!r}]"
    max_new = check_int(f"{where}['max_new_tokens']", settings.get("max_new_tokens", 64), 1, MAX_TOKENS)
    if "min_new_tokens" in given:
        min_new = check_int(f"{where}['min_new_tokens']", given["min_new_tokens"], 0, max_new)
    else:
        min_new = min(int(settings.get("min_new_tokens", 0)), max_new)
    return {
        "max_prompt_length": check_int(
            f"{where}['max_prompt_length']", settings.get("max_prompt_length", 128), 1, MAX_TOKENS
        ),
        "max_new_tokens": max_new,
        "min_new_tokens": min_new,
        "prompt_truncation_side": check_choice(
            f"{where}['prompt_truncation_side']", settings["prompt_truncation_side"], ("left", "right")
        ),
    }
