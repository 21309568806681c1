"""The utterance-level text environment: the base every lm-gym task builds on.

A task is a text game. ``reset()`` returns an observation text, ``step(utterance)`` the next
one. Observation and action spaces are :func:`~lm_gym.core.spaces.text_space`.

The step protocol
-----------------
A step is split in three public parts so that a vector env (or any caller that batches) can
score many utterances with one batched reward call; ``step(action)`` is exactly these three:

1. :meth:`TextEnv.prepare_step` ``(action) -> (utterance, query)`` validates the action and
   returns the utterance as the task sees it and the :class:`RewardQuery` its reward model
   must score (``None`` when the task's reward needs no model). It changes no state, so a
   refused action (:class:`~lm_gym.core.errors.InvalidActionError`, or
   :class:`~lm_gym.core.errors.ResetNeededError` outside an episode) loses nothing.
2. :func:`score_queries` ``(env.reward_fn, queries)`` scores the queries of one or many envs
   with **one** call of the task's batched reward function.
3. :meth:`TextEnv.finish_step` ``(utterance, score) -> (observation, reward, terminated,
   truncated, info)`` applies the transition with the utterance's score (``None`` when its
   query was ``None``).

For example, two copies of one task stepped with one reward call::

    (u1, q1), (u2, q2) = env1.prepare_step("a reply"), env2.prepare_step("another reply")
    s1, s2 = score_queries(env1.reward_fn, [q1, q2])
    result1, result2 = env1.finish_step(u1, s1), env2.finish_step(u2, s2)

Steps of envs whose reward functions may differ (the vector envs' copies, a server's sessions)
score with :func:`score_by_reward_fn`: one call per reward function, for all of its queries.

:meth:`TextEnv.parse_action` validates an action without stepping (the vector env refuses a
bad action of a copy it resets instead of stepping). :attr:`SingleTurnTextEnv.current_sample`
is the dataset sample of the current episode (its prompt, references and metadata).

Writing a task
--------------
A subclass of :class:`TextEnv` implements three hooks: ``_new_episode`` (start an episode with
``self.np_random``), ``_reward_query`` (what the batched ``reward_fn`` scores, or ``None``) and
``_transition`` (apply an utterance and its score). :class:`SingleTurnTextEnv` implements them
for one-step tasks over a list of :class:`Sample`. Corpus-level metrics of a whole evaluation
(BLEU, CIDEr, ...) come from the task hook :meth:`TextEnv.task_corpus_metrics`; the metrics
package, above the core, adds diversity and perplexity to them: ``corpus_metrics(env, final_infos)``.
``lm_gym.testing.check_text_env(env)`` checks a task against the whole env contract.

Chat hooks
----------
``lm_gym.core.chat`` plays any task as a chat with an instruct model. It reads two hooks of the
task: :meth:`TextEnv.chat_system_message` (the rules: the class attribute
:attr:`TextEnv.chat_instructions`, by default the "Description" section of the class's
docstring, :meth:`TextEnv.default_chat_instructions`) and :meth:`TextEnv.chat_user_message`
(what the env answers a reply: by default the text the new observation adds to the previous one).
A tool-calling trainer (:mod:`lm_gym.integrations.trl_environment`) plays the task through one tool
of one text argument, named by the class attributes :attr:`TextEnv.tool_name`,
:attr:`TextEnv.tool_argument` and :attr:`TextEnv.tool_argument_description`; its description is
the first paragraph of the chat rules.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import gymnasium
import numpy as np

from lm_gym.core.docstrings import docstring_instructions
from lm_gym.core.errors import ConfigurationError, InvalidActionError, ResetNeededError, safe_repr
from lm_gym.core.ranges import Range
from lm_gym.core.spaces import text_space, to_charset
from lm_gym.core.validation import check_choice, check_int, check_options, check_seed

#: Episodes whose first observations :meth:`TextEnv.tokenizer_corpus` trains a tokenizer on by default.
TOKENIZER_CORPUS_EPISODES = 512


#: A batch of texts, one per query: the prompts, or the utterances, that a :class:`BatchedReward` scores.
Texts = Sequence[str]
#: Each query's references, for a :class:`BatchedReward`.
ReferenceLists = Sequence[Sequence[str]]
#: Each query's ``meta`` dict, for a :class:`BatchedReward`.
Metas = Sequence[dict[str, Any]]


class BatchedReward(Protocol):
    """A reward scored for a whole batch of utterances in one call."""

    def __call__(self, prompts: Texts, utterances: Texts, references: ReferenceLists, meta: Metas) -> np.ndarray: ...


@dataclass(frozen=True)
class RewardQuery:
    """One utterance to be scored, with what the reward may look at."""

    prompt: str
    utterance: str
    references: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


def score_queries(reward_fn: BatchedReward, queries: Sequence[RewardQuery]) -> np.ndarray:
    """Score ``queries`` with one call of ``reward_fn``; returns one float64 per query."""
    if not queries:
        return np.zeros(0, dtype=np.float64)
    scores = reward_fn(
        [q.prompt for q in queries],
        [q.utterance for q in queries],
        [q.references for q in queries],
        [q.meta for q in queries],
    )
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (len(queries),):
        raise ValueError(f"reward function returned shape {scores.shape}, expected ({len(queries)},)")
    return scores


def score_by_reward_fn(
    queries: Sequence[tuple[BatchedReward | None, RewardQuery | None]],
    score: Callable[[BatchedReward, list[RewardQuery]], Sequence[Any]] = score_queries,
) -> list[Any]:
    """The score of each ``(reward_fn, query)`` of many envs' prepared steps, in their order
    (``None`` where the query is ``None``), with one call of ``score`` per reward function.

    The queries are grouped by the reward function they go to (the copies of one task share
    theirs) in the order each function first appears, and each group is scored at once:
    ``score(reward_fn, its queries)`` gives one score per query (:func:`score_queries`, or a
    caller's variant that, say, gives an error in place of a score it could not compute).
    """
    groups: dict[int, tuple[BatchedReward, list[int]]] = {}
    for index, (reward_fn, query) in enumerate(queries):
        if query is not None:
            groups.setdefault(id(reward_fn), (reward_fn, []))[1].append(index)
    scores: list[Any] = [None] * len(queries)
    for reward_fn, indices in groups.values():
        group_scores = score(reward_fn, [queries[index][1] for index in indices])
        for index, group_score in zip(indices, group_scores, strict=True):
            scores[index] = group_score
    return scores


StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class TextEnv(gymnasium.Env[str, str]):
    """Base class of the utterance-level environments.

    Subclasses implement :meth:`_new_episode`, :meth:`_reward_query` and :meth:`_transition`,
    set ``reward_fn`` (or ``None`` for tasks whose reward needs no model) and may override
    :meth:`tokenizer_corpus` so a tokenizer can be trained on the task's own text,
    :meth:`demonstrations` (good play for warm starts), :meth:`task_corpus_metrics` and,
    for episodes of different token-level protocols, :meth:`token_protocol`.

    Public step protocol (see the module docstring): :meth:`prepare_step`, then the batched
    ``reward_fn`` on its query (:func:`score_queries`), then :meth:`finish_step`; ``step`` is
    these three for one env. :meth:`parse_action` validates an action without stepping.

    Actions must be ``str`` of at most ``action_space.max_length`` characters; characters
    outside the charset are mapped into it by :func:`~lm_gym.core.spaces.to_charset` and
    the result is cut to ``action_space.max_length`` (``info["utterance"]`` holds the text
    as the task saw it).

    ``reset`` takes ``seed`` (``None`` or a non-negative int) and ``options`` (``None`` or a
    dict with keys from :attr:`reset_options`). Bad arguments or actions raise a typed
    error before any state changes: the episode goes on as if they had not been given.
    ``reset()`` with neither (an autoreset, or an env holding others, such as
    ``lm_gym/Mixture-v0``, starting one of them) checks nothing and goes straight to the episode.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    #: Defaults of the token-level wrapper for this task (``max_prompt_length``, ``max_new_tokens``).
    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 128, "max_new_tokens": 64}
    #: Generation settings of the task's protocol that policies should follow (``min_new_tokens``).
    generation_defaults: ClassVar[dict[str, int]] = {}
    #: Constructor arguments that make the env build with no network (e.g. ``source="synthetic"``).
    offline_kwargs: ClassVar[dict[str, Any]] = {}
    #: The keys ``reset(options=...)`` accepts.
    reset_options: ClassVar[tuple[str, ...]] = ()
    #: The task's rules as the system message of a chat of the task (``lm_gym.core.chat``); ``None``: the
    #: "Description" section of the class's docstring (:meth:`default_chat_instructions`); ``""``: no system message.
    chat_instructions: ClassVar[str | None] = None
    #: The 0/1 entry of the episodes' ``info["metrics"]`` that says an episode succeeded (Wordle: ``"solved"``),
    #: which an evaluation of K samples per episode reports pass@k of; ``None``: the task has none.
    success_metric: ClassVar[str | None] = None
    #: The tool a tool-calling trainer plays the task's actions through (TRL's ``environment_factory``,
    #: :mod:`lm_gym.integrations.trl_environment`): its name; ``None``: ``"act"`` (Wordle: ``"guess"``).
    tool_name: ClassVar[str | None] = None
    #: The tool's one argument, the utterance; ``None``: ``"text"`` (Wordle: ``"word"``).
    tool_argument: ClassVar[str | None] = None
    #: What the argument is, one line, for the tool's schema; ``None``: "your move, as text, as the rules ask for it".
    tool_argument_description: ClassVar[str | None] = None

    reward_fn: BatchedReward | None = None

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The ranges this task declares for the constructor arguments ``kwargs``: of an episode's return
        (key ``"return"``) and of each value of the final ``info["metrics"]``; a key left out has no
        declared range. ``lm_gym.results.evaluation_ranges`` turns them into the ranges of an evaluation."""
        return {}

    def __init__(self, *, max_observation_length: int, max_action_length: int, render_mode: str | None = None):
        if render_mode is not None:
            check_choice("render_mode", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.observation_space = text_space(max_observation_length)
        self.action_space = text_space(max_action_length)
        self._needs_reset = True
        self._last_observation = ""

    # ---- task hooks ---------------------------------------------------------------------
    def _new_episode(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Start an episode with ``self.np_random``; return the first observation and info.

        Check ``options`` before changing any state (raise ``ConfigurationError``).
        """
        raise NotImplementedError

    def _reward_query(self, utterance: str) -> RewardQuery | None:
        """What ``reward_fn`` must score for this utterance, or ``None`` when nothing."""
        return None

    def _transition(self, utterance: str, score: float | None) -> StepResult:
        """Apply the utterance; ``score`` is ``reward_fn``'s value for :meth:`_reward_query`."""
        raise NotImplementedError

    def demonstrations(self) -> list[tuple[str, str]]:
        """``(observation, utterance)`` pairs of good play, for supervised warm starts and BC."""
        raise ConfigurationError(f"{type(self).__name__} has no demonstrations")

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        """A cache key and the texts a task tokenizer is trained on (see ``lm_gym.core.tokenizer``).

        By default: the first observations of :data:`TOKENIZER_CORPUS_EPISODES` episodes (seeds 0,
        1, ...) of a deep copy of the env (the env itself is left as it is), and its
        :meth:`demonstrations` when it has some, keyed by the class and a hash of the texts.
        Tasks with a dataset override it with their training text.
        """
        try:
            copy_of_env = copy.deepcopy(self)
        except Exception as error:  # an attribute that cannot be copied (a lock, a socket, ...)
            raise ConfigurationError(
                f"{type(self).__name__} cannot be copied to sample a tokenizer corpus ({type(error).__name__}: "
                f"{error}); pass tokenizer=<name or path>, or override tokenizer_corpus()"
            ) from error
        texts = [copy_of_env.reset(seed=seed)[0] for seed in range(TOKENIZER_CORPUS_EPISODES)]
        try:
            texts += [text for pair in copy_of_env.demonstrations() for text in pair]
        except ConfigurationError:  # a task without demonstrations
            pass
        digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
        return f"{type(self).__module__}.{type(self).__qualname__}-{digest}", texts

    def token_protocol(self) -> dict[str, Any]:
        """The token-level protocol of the utterance this env expects next, where it differs from the MDP's.

        Keys, each optional: ``max_prompt_length``, ``max_new_tokens``, ``min_new_tokens``,
        ``prompt_truncation_side`` and ``max_utterance_chars`` (the utterance's character limit).
        The token level (:class:`~lm_gym.core.token_level.TokenLevel` and the native
        ``TokenVectorEnv``) reads them whenever a copy starts an utterance, after a reset and
        after each utterance that does not end the episode, and plays that utterance by them
        within its own settings: ``max_prompt_length``, ``max_new_tokens`` and
        ``max_utterance_chars`` at most the MDP's (the observation arrays keep the MDP's
        widths), ``min_new_tokens`` at least the MDP's and at most the utterance's
        ``max_new_tokens``. The default, ``{}``, is the MDP's settings; every single task keeps
        it (its class's ``token_level_defaults`` set the MDP). An env whose episodes follow
        different protocols overrides it: ``lm_gym/Mixture-v0`` gives each episode its task's.
        """
        return {}

    def task_corpus_metrics(self, episodes: Sequence[dict[str, Any]]) -> dict[str, float]:
        """The task's own metrics of a whole evaluation (BLEU, CIDEr, ...), beyond the means of
        the episodes' ``info["metrics"]``; none by default.

        ``episodes`` are the final step's ``info`` of each episode (at least one). Evaluation
        code calls the metrics package's ``corpus_metrics(env, episodes)``, which adds the
        metrics every single-turn task shares (diversity, perplexity) to these.
        """
        return {}

    @classmethod
    def default_chat_instructions(cls) -> str | None:
        """The rules a chat of the task gets while :attr:`chat_instructions` is ``None``:
        :func:`docstring_instructions` of the class's docstring, or of its nearest base class's that
        has one, up to the task classes of ``lm_gym.core`` (whose docstrings tell how to write a
        task, not how to play it); ``None`` when none has one."""
        for klass in cls.__mro__:
            if klass in (TextEnv, SingleTurnTextEnv):
                break
            if issubclass(klass, TextEnv) and (instructions := docstring_instructions(vars(klass).get("__doc__"))):
                return instructions
        return None

    def chat_system_message(self) -> str | None:
        """The system message of a chat of the current episode (``lm_gym.core.chat``): the task's rules,
        :attr:`chat_instructions` when it is set, else :meth:`default_chat_instructions`; ``None``
        when the chat has no system message. An env whose episodes play different tasks overrides it:
        ``lm_gym/Mixture-v0`` gives its current episode's task's."""
        if self.chat_instructions is not None:
            return self.chat_instructions or None
        return self.default_chat_instructions()

    def chat_user_message(self, previous_observation: str, utterance: str, observation: str) -> str:
        """The user message of a chat that answers a reply (``lm_gym.core.chat``): what the env says
        back to ``utterance`` (the reply as the task saw it, :meth:`parse_action`), from the
        observation before the step and the step's ``observation``. Asked only after a step that does
        not end the episode.

        By default, since an lm-gym observation is the transcript so far: the text ``observation`` adds
        after ``previous_observation``, stripped, without the echo of the utterance at its start (an
        echo counts when it matches without regard to case, as Wordle lower-cases a guess, and is
        followed by whitespace or the end): Wordle's ``"...\\ncrane gyyby"`` after ``"crane"`` gives
        ``"gyyby"``. When ``observation`` does not extend ``previous_observation`` (a transcript
        cut from the left to the observation space, a task that shows only its latest state), the
        whole ``observation``. A task whose observations read otherwise overrides it.
        """
        if not observation.startswith(previous_observation):
            return observation
        added = observation[len(previous_observation) :].lstrip()
        echo = utterance.strip()
        after_echo = added[len(echo) : len(echo) + 1]
        if echo and added[: len(echo)].lower() == echo.lower() and (not after_echo or after_echo.isspace()):
            added = added[len(echo) :]
        return added.strip()

    def episode_index(self, options: dict[str, Any], count: int) -> int:
        """Which of ``count`` items (samples, images) the episode plays: ``options["index"]``, checked,
        or one drawn with ``self.np_random``; for the ``_new_episode`` of a task whose ``reset``
        takes ``options={"index": i}``."""
        index = options.get("index")
        if index is None:
            return int(self.np_random.integers(count))
        return check_int("options['index']", index, 0, count - 1)

    # ---- Gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        episode_options: dict[str, Any] = {}
        if seed is not None or options is not None:  # an autoreset gives neither: nothing to check, no new seed
            seed = check_seed(seed)
            episode_options = check_options(options, self.reset_options)
        random_state = (self._np_random, self._np_random_seed)
        if seed is not None:
            super().reset(seed=seed)
        try:
            observation, info = self._new_episode(episode_options)
        except Exception:
            self._np_random, self._np_random_seed = random_state  # a refused reset changes nothing
            raise
        self._needs_reset = False
        return self._observe(observation), info

    def step(self, action: str) -> StepResult:
        utterance, query = self.prepare_step(action)
        score = None if query is None else float(score_queries(self.reward_fn, [query])[0])
        return self.finish_step(utterance, score)

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_observation
        return None

    # ---- the step protocol: prepare_step, the batched reward, finish_step ----------------
    def prepare_step(self, action: Any) -> tuple[str, RewardQuery | None]:
        """The first part of a step: validate ``action``; return its utterance (:meth:`parse_action`)
        and the :class:`RewardQuery` that ``reward_fn`` must score (``None`` when none).

        Changes no state. Raises :class:`~lm_gym.core.errors.ResetNeededError` before
        ``reset()`` or after the episode ended, and
        :class:`~lm_gym.core.errors.InvalidActionError` for an action outside the action space.
        """
        if self._needs_reset:
            raise ResetNeededError(
                f"{type(self).__name__}.step() called before reset() or after the episode ended; call reset() first"
            )
        utterance = self.parse_action(action)
        return utterance, self._reward_query(utterance)

    def parse_action(self, action: Any) -> str:
        """The utterance of ``action`` as the task sees it, without stepping: a ``str`` of at most
        ``action_space.max_length`` characters, mapped into the charset; anything else raises
        :class:`~lm_gym.core.errors.InvalidActionError`. Changes no state."""
        return checked_utterance(action, self.action_space.max_length)

    def finish_step(self, utterance: str, score: float | None) -> StepResult:
        """The last part of a step: apply ``utterance`` (:meth:`prepare_step`'s) with ``score``, the
        value ``reward_fn`` gave its query (``None`` when the query was ``None``); returns
        ``step``'s ``(observation, reward, terminated, truncated, info)``."""
        observation, reward, terminated, truncated, info = self._transition(utterance, score)
        self._needs_reset = terminated or truncated
        return self._observe(observation), reward, terminated, truncated, info

    def _observe(self, text: str) -> str:
        """Fit ``text`` into the observation space, keeping its end (the most recent text)."""
        text = to_charset(text)[-self.observation_space.max_length :]
        self._last_observation = text
        return text

    def num_episodes(self) -> int | None:
        """How many episodes this env's split has, for OpenEnv's Task API and the trainers' adapters
        (:mod:`lm_gym.core.episodes`: episode ``i`` is ``reset(seed=i)``): a single-turn task's number of
        samples, VisDial's of images; ``None`` (the default): no count of its own, every seed is an episode."""
        return None

    def replicate(self) -> TextEnv:
        """A copy sharing data and reward model, with its own RNG and episode state."""
        clone = copy.copy(self)
        clone._np_random = None
        clone._np_random_seed = None
        clone._needs_reset = True
        clone._last_observation = ""
        return clone


@dataclass(frozen=True)
class Sample:
    """One prompt of a single-turn task, with its references and metadata."""

    prompt: str
    references: tuple[str, ...]
    meta: dict[str, Any]


class SingleTurnTextEnv(TextEnv):
    """A one-step episode per dataset sample: the prompt is observed, one utterance answers it.

    Subclasses fill ``self.samples`` and ``self.reward_fn`` and may override
    :meth:`_episode_metrics` and :meth:`task_corpus_metrics` (:func:`episode_texts` gives the
    episodes' prompts, utterances and references). ``reset(options={"index": i})`` plays
    sample ``i``; otherwise the sample is drawn uniformly with the env's RNG.
    :attr:`current_sample` is the sample being played.
    """

    samples: Sequence[Sample]
    reset_options: ClassVar[tuple[str, ...]] = ("index",)
    _sample: Sample | None = None

    @property
    def current_sample(self) -> Sample:
        """The sample of the current episode (of the last one once it ended): its prompt, references and meta.

        Raises :class:`~lm_gym.core.errors.ResetNeededError` before the first ``reset()``.
        """
        if self._sample is None:
            raise ResetNeededError(f"{type(self).__name__} has no current sample before reset(); call reset() first")
        return self._sample

    def _new_episode(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._sample = sample = self.samples[self.episode_index(options, len(self.samples))]
        return sample.prompt, self._sample_info(sample)

    def _reward_query(self, utterance: str) -> RewardQuery:
        sample = self.current_sample
        return RewardQuery(sample.prompt, utterance, sample.references, sample.meta)

    def _transition(self, utterance: str, score: float | None) -> StepResult:
        sample = self.current_sample
        info = self._sample_info(sample)
        info["utterance"] = utterance
        info["metrics"] = self._episode_metrics(sample, utterance, score)
        return join_text(sample.prompt, utterance), float(score), True, False, info

    def num_episodes(self) -> int:
        return len(self.samples)

    def replicate(self) -> SingleTurnTextEnv:
        clone = super().replicate()
        clone._sample = None  # the copy's episode has not started
        return clone

    def demonstrations(self) -> list[tuple[str, str]]:
        """Every ``(prompt, reference)`` pair of the split."""
        return [(sample.prompt, reference) for sample in self.samples for reference in sample.references]

    def episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, float]:
        """The ``info["metrics"]`` of an episode of ``sample`` answered with ``utterance``, scored ``score``: what
        a caller that plays the task's samples itself (the DailyDialog multi-agent env) reports per reply."""
        return self._episode_metrics(sample, utterance, score)

    def _episode_metrics(self, sample: Sample, utterance: str, score: float | None) -> dict[str, float]:
        return {"reward": float(score), "num_words": len(utterance.split())}

    @staticmethod
    def _sample_info(sample: Sample) -> dict[str, Any]:
        return {"prompt": sample.prompt, "references": list(sample.references), "meta": dict(sample.meta)}


def episode_texts(episodes: Sequence[dict[str, Any]]) -> tuple[list[str], list[str], list[list[str]]]:
    """The prompts, utterances and reference lists of single-turn episodes' final ``info`` dicts
    (their ``"prompt"``, ``"utterance"`` and ``"references"``), for corpus metrics."""
    prompts = [episode["prompt"] for episode in episodes]
    utterances = [episode["utterance"] for episode in episodes]
    references = [list(episode["references"]) for episode in episodes]
    return prompts, utterances, references


def checked_utterance(action: Any, max_length: int, name: str = "action") -> str:
    """``action`` mapped into the charset if it is a ``str`` of at most ``max_length`` characters;
    else ``InvalidActionError`` naming ``name`` (the rule of every utterance-level action space)."""
    if not isinstance(action, str):
        raise InvalidActionError(
            f"{name} must be a str (an utterance), got {type(action).__name__}: {safe_repr(action)}"
        )
    if len(action) > max_length:
        raise InvalidActionError(f"{name} has {len(action)} characters; the action space allows at most {max_length}")
    return to_charset(action)[:max_length]


def join_text(prompt: str, continuation: str) -> str:
    """``prompt`` followed by ``continuation``, with a space between unless one is already there."""
    if not continuation or not prompt or prompt[-1].isspace() or continuation[0].isspace():
        return prompt + continuation
    return prompt + " " + continuation


def play_actions(
    env: gymnasium.Env, actions: Sequence[str], options: dict[str, Any] | None = None
) -> tuple[list[str], list[float]]:
    """Reset ``env`` with ``options`` and play ``actions``: the observation before each action, and each reward."""
    observation, _ = env.reset(options=options)
    observations, rewards = [], []
    for action in actions:
        observations.append(observation)
        observation, reward, *_ = env.step(action)
        rewards.append(float(reward))
    return observations, rewards


def play_policy(
    env: gymnasium.Env, policy: Callable[[str], str], num_games: int, seed: int = 0
) -> list[tuple[str, str]]:
    """The ``(observation, action)`` pairs of ``num_games`` games of ``policy``, game ``j`` reset with ``seed + j``."""
    pairs = []
    for index in range(num_games):
        observation, _ = env.reset(seed=seed + index)
        terminated = truncated = False
        while not (terminated or truncated):
            action = policy(observation)
            pairs.append((observation, action))
            observation, _, terminated, truncated, _ = env.step(action)
    return pairs
