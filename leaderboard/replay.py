"""Re-scoring an entry's samples: each sample's generation played again on its episode of the board's env.

An entry's ``samples`` are the first episodes of each run's final evaluation, and the evaluation's
episodes are fixed: episode ``j`` is the board's env on the ``validation`` split, reset with seed
``EVAL_SEED + j`` (the baselines' ``--eval-seed``, 0, which every suite uses). So the episode of
``samples[j]`` is known, and :func:`rescore_samples` plays it again:

* a single-turn task's sample is one utterance, its ``generation``;
* a multi-turn game's sample is its final transcript (``prompt``; ``generation`` empty), which a
  transcript reader (:data:`TRANSCRIPT_READERS`: Wordle's board, VisDial's dialogue) turns back
  into the utterances, stepped in order.

The episodes are played together on the task's native vector env (as the baselines evaluate:
one batched reward call per turn), and the sample each gives (``lm_gym.results.episode_samples``)
must be the stated one: the same prompt, the same generation (a multi-turn game's transcript
replayed exactly) and a return within :data:`RETURN_TOLERANCE`. A mismatch is a problem that
names the sample; a task that cannot be replayed here (its reward model or data need the hub, a
multi-turn task without a transcript reader, a transcript cut to the sample's length limit) is
a note, ``not re-scored: <reason>``, never a silent pass.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from leaderboard.messages import shown
from leaderboard.texts import played_text, sample_text
from lm_gym.core.errors import LMGymError

EVAL_SEED = 0  #: episode j of every board's final evaluation is reset with seed EVAL_SEED + j
RETURN_TOLERANCE = 1e-6  #: a replayed return may differ from the stated one by this much (batched float sums)
MAX_TURNS = 64  #: a replayed game longer than this is refused (the baselines' limit is the same order)


class NotReplayable(Exception):
    """A task whose samples cannot be re-scored here; the message is the reason."""


def _wordle_utterances(prompt: str, generation: str) -> list[str]:
    # the board: a header line, then "<guess> <feedback>" (or "<text> invalid" / "<word> unknown") per guess;
    # a guess shown is the guess as the game read it, so playing it again gives the same line, but for an
    # invalid guess shown cut to its first 16 characters (whitespace runs as one space): played with one more
    # character it is cut at the same place (and, longer than a word, stays invalid)
    utterances = []
    for line in prompt.split("\n")[1:]:
        shown, _, kind = line.rpartition(" ")
        utterances.append(shown + "z" if kind == "invalid" and len(shown) >= 16 else shown)
    return utterances


def _visdial_utterances(prompt: str, generation: str) -> list[str]:
    # the caption line, then a question line and an answer line per round (questions are cleaned to one line)
    from lm_gym.tasks.visdial.dialogue import parse_dialogue_text

    return [question for question, _ in parse_dialogue_text(prompt)[1]]


#: how a multi-turn game's sample (its final transcript) gives the utterances played, by task class name
TRANSCRIPT_READERS: dict[str, Callable[[str, str], list[str]]] = {
    "WordleEnv": _wordle_utterances,
    "VisDialEnv": _visdial_utterances,
}


def replayable(env_id: str, env_kwargs: dict[str, Any], count: int) -> None:
    """Raise :class:`NotReplayable` (the reason) unless ``count`` samples of ``env_id`` can be re-scored here."""
    _player(env_id, json.dumps(env_kwargs, sort_keys=True), count)


def rescore_samples(entry: dict[str, Any], board: Any) -> tuple[list[str], list[str]]:
    """``(problems, notes)`` of replaying every run's samples on ``board``'s envs (see the module docstring).

    ``entry`` has passed the schema; ``board`` is its :class:`leaderboard.boards.Board`. Each problem and note
    is ``(field path, message)``, the path as a tuple of keys and indices."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    notes: list[tuple[tuple[Any, ...], str]] = []
    for env_id, task in entry["tasks"].items():
        if env_id not in board.env_kwargs:
            continue
        for run_index, run in enumerate(task["runs"]):
            samples = run["samples"]
            where = ("tasks", env_id, "runs", run_index, "samples")
            if not samples:
                notes.append((where, "not re-scored: the run has no samples"))
                continue
            try:
                replayed = _player(env_id, json.dumps(board.env_kwargs[env_id], sort_keys=True), len(samples))(samples)
            except NotReplayable as reason:
                note = (("tasks", env_id), f"samples not re-scored: {reason}")
                if note not in notes:
                    notes.append(note)
                continue
            for index, (stated, played) in enumerate(zip(samples, replayed, strict=True)):
                at = (*where, index)
                if isinstance(played, str):  # the episode could not be played with the sample's utterances
                    problems.append((at, f"replayed on episode {index} (seed {EVAL_SEED + index}): {played}"))
                elif stated["prompt"] != played["prompt"]:
                    problems.append(
                        (
                            (*at, "prompt"),
                            f"{shown(stated['prompt'])} is not the prompt of episode {index} "
                            f"(seed {EVAL_SEED + index}) of the board's evaluation, {shown(played['prompt'])}",
                        )
                    )
                elif stated["generation"] != played["generation"]:
                    problems.append(
                        (
                            (*at, "generation"),
                            f"replayed on episode {index} (seed {EVAL_SEED + index}) it reads "
                            f"{shown(played['generation'])}, not {shown(stated['generation'])}",
                        )
                    )
                elif not abs(stated["return"] - played["return"]) <= RETURN_TOLERANCE:
                    problems.append(
                        (
                            (*at, "return"),
                            f"{stated['return']!r}, but its generation played on episode {index} "
                            f"(seed {EVAL_SEED + index}) returns {played['return']!r}",
                        )
                    )
    return problems, notes


def play_samples(env_id: str, env_kwargs: dict[str, Any], utterances: list[list[str]]) -> list[dict[str, Any] | str]:
    """The samples (``{"prompt", "generation", "return"}``) that playing ``utterances[j]`` on episode ``j`` of the
    evaluation of ``env_id`` with ``env_kwargs`` gives, or why episode ``j`` could not be played."""
    _player(env_id, json.dumps(env_kwargs, sort_keys=True), len(utterances))  # NotReplayable if it cannot be made
    return _play(_VECTOR_ENVS[(env_id, json.dumps(env_kwargs, sort_keys=True), len(utterances))], utterances)


_VECTOR_ENVS: dict[tuple[str, str, int], Any] = {}


@functools.lru_cache(maxsize=64)
def _player(
    env_id: str, env_kwargs_json: str, count: int
) -> Callable[[Sequence[dict[str, Any]]], list[dict[str, Any] | str]]:
    """A function playing ``count`` samples on ``env_id``'s evaluation episodes; raises :class:`NotReplayable`."""
    import gymnasium

    import lm_gym  # noqa: F401  (registers the envs)
    from lm_gym.core import registration
    from lm_gym.core.text_env import SingleTurnTextEnv

    env_kwargs = json.loads(env_kwargs_json)
    try:
        cls = registration.task_class(env_id)
        kwargs = registration.split_kwargs(env_id, env_kwargs, "validation")
    except Exception as error:  # not registered here, a plugin that fails: the task cannot be played
        raise NotReplayable(f"the task cannot be made here ({type(error).__name__}: {error})") from None
    single_turn = issubclass(cls, SingleTurnTextEnv)
    reader = None if single_turn else TRANSCRIPT_READERS.get(cls.__name__)
    if not single_turn and reader is None:
        raise NotReplayable(f"no transcript reader for the multi-turn task {cls.__name__}")
    try:
        venv = gymnasium.make_vec(env_id, num_envs=count, vectorization_mode="vector_entry_point", **kwargs)
    except Exception as error:  # a hub dataset or reward model, a missing extra: never a silent pass
        raise NotReplayable(f"the task's env cannot be made here ({type(error).__name__}: {error})") from None
    _VECTOR_ENVS[(env_id, env_kwargs_json, count)] = venv
    limit = venv.single_action_space.max_length

    def play(samples: Sequence[dict[str, Any]]) -> list[dict[str, Any] | str]:
        from lm_gym.results import SAMPLE_TEXT_CHARS

        if single_turn:
            if limit >= SAMPLE_TEXT_CHARS and any(len(s["generation"]) >= SAMPLE_TEXT_CHARS for s in samples):
                raise NotReplayable(f"a generation is cut to {SAMPLE_TEXT_CHARS} characters, its end is lost")
            utterances = [[played_text(sample["generation"])] for sample in samples]
        else:
            if any(len(sample["prompt"]) >= SAMPLE_TEXT_CHARS for sample in samples):
                raise NotReplayable(f"a transcript is cut to {SAMPLE_TEXT_CHARS} characters, its start is lost")
            utterances = [
                reader(played_text(sample["prompt"]), played_text(sample["generation"])) for sample in samples
            ]
        played = _play(venv, utterances)
        return [
            sample if isinstance(sample, str) else {**sample, **{key: sample_text(sample[key], SAMPLE_TEXT_CHARS)
                                                             for key in ("prompt", "generation")}}
            for sample in played
        ]  # fmt: skip

    return play


def _play(venv: Any, utterances: list[list[str]]) -> list[dict[str, Any] | str]:
    """Each sub-env ``j`` reset with seed ``EVAL_SEED + j`` and stepped with ``utterances[j]`` in order: the
    sample it gives (``episode_samples``), or why it could not be played."""
    from lm_gym.core.vector import episode_info
    from lm_gym.results.evaluation import episode_samples

    count = len(utterances)
    observations, _ = venv.reset(seed=EVAL_SEED)
    active = [True] * count
    failed: dict[int, str] = {}
    totals = [0.0] * count
    finals: list[dict[str, Any]] = [{} for _ in range(count)]
    limit = venv.single_action_space.max_length
    for turn in range(MAX_TURNS):
        actions = [""] * count
        for i in range(count):
            if not active[i]:
                continue
            if turn >= len(utterances[i]):
                failed[i] = f"the episode goes on after the sample's {len(utterances[i])} utterances"
                active[i] = False
            elif len(utterances[i][turn]) > limit:
                failed[i] = f"utterance {turn} has {len(utterances[i][turn])} characters, the task allows {limit}"
                active[i] = False
            else:
                actions[i] = utterances[i][turn]
        if not any(active):
            break
        try:
            observations, rewards, terminations, truncations, infos = venv.step(tuple(actions))
        except LMGymError as error:
            return [f"cannot be played: {type(error).__name__}: {error}"] * count
        for i in range(count):
            if not active[i]:
                continue
            totals[i] += float(rewards[i])
            if terminations[i] or truncations[i]:
                active[i] = False
                finals[i] = {**episode_info(infos, i), "observation": observations[i]}
                if turn + 1 < len(utterances[i]):
                    failed[i] = f"the episode ends after {turn + 1} of the sample's {len(utterances[i])} utterances"
        if not any(active):
            break
    else:
        failed.update({i: f"the episode runs over {MAX_TURNS} turns" for i in range(count) if active[i]})
    samples = episode_samples(finals, totals, count=count)
    return [failed[i] if i in failed else samples[i] for i in range(count)]


def sample_mean_bound(count: int, std_return: float) -> float:
    """How far the mean of ``count`` sample returns may be from the evaluation's ``mean_return`` before the
    entry is flagged: 4 standard errors, ``4 * std_return / sqrt(count)`` (a sample mean of the first episodes
    of an honest evaluation is that far off less than once in 10,000 times, for returns of any distribution
    close to normal), plus the replay tolerance."""
    return 4 * std_return / math.sqrt(count) + RETURN_TOLERANCE
