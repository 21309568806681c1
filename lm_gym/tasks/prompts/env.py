"""``lm_gym/Prompts-v0``: your prompts, your reward function of the completion text."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.ranges import COUNT, UNIT, Range, argument
from lm_gym.core.text_env import Sample, SingleTurnTextEnv
from lm_gym.core.validation import check_choice, check_int
from lm_gym.data.wordfreq_lists import wordfreq_list
from lm_gym.rewards.completion import CompletionReward, import_callable
from lm_gym.tasks.synthetic_splits import split_request
from lm_gym.tasks.tokenizer_corpus import keyed_corpus

MAX_OBSERVATION_LENGTH = 16384
MAX_ACTION_LENGTH = 2048
#: Synthetic prompts per split.
SYNTHETIC_SIZES = {"train": 1024, "validation": 256, "test": 256}
#: Words of the synthetic prompts: with the three special tokens, a 4,000-token word-level vocabulary.
NUM_WORDS = 3997
BUILT_IN_REWARDS = ("vowel_words",)
#: Most synthetic prompts one split may have.
MAX_SYNTHETIC_PROMPTS = 2**20


@functools.cache
def word_list(size: int = NUM_WORDS) -> tuple[str, ...]:
    """The ``size`` most frequent English words made only of the letters a-z (``wordfreq``; the
    default size also from a copy of the list where wordfreq is absent: :mod:`lm_gym.data.wordfreq_lists`)."""
    if size == NUM_WORDS:
        return _prompt_words()
    return _most_frequent_words(size)


def _most_frequent_words(size: int) -> tuple[str, ...]:
    from wordfreq import top_n_list

    words = [word for word in top_n_list("en", 4 * size) if word.isascii() and word.isalpha() and word.islower()]
    if len(words) < size:
        raise ConfigurationError(
            f"wordfreq has only {len(words)} lowercase a-z words among its top {4 * size}, asked for {size}"
        )
    return tuple(words[:size])


@wordfreq_list("prompts-words")
def _prompt_words() -> tuple[str, ...]:
    return _most_frequent_words(NUM_WORDS)


def synthetic_prompts(split: str, num_prompts: int | None = None, prompt_words: int = 64) -> list[str]:
    """``num_prompts`` prompts of ``prompt_words`` words drawn uniformly from :func:`word_list`,
    fixed per split (default sizes: ``SYNTHETIC_SIZES``)."""
    count, rng = split_request("prompts", split, num_prompts, SYNTHETIC_SIZES, "num_prompts")
    words = word_list()
    return [" ".join(rng.choices(words, k=prompt_words)) for _ in range(count)]


def vowel_words(prompts: Sequence[str], completions: Sequence[str], **kwargs: Any) -> list[float]:
    """The fraction of a completion's words that start with a vowel (0 for an empty one): a
    cheap reward of the text alone, learnable from random text (the speed benchmark's)."""
    scores = []
    for completion in completions:
        words = completion.split()
        scores.append(sum(word[0] in "aeiouAEIOU" for word in words) / len(words) if words else 0.0)
    return scores


def read_prompts(source: str | Path) -> list[str]:
    """Prompts from a ``.txt`` file (one per non-empty line), a ``.json`` list (of strings or of
    objects with ``"prompt"``) or ``.jsonl`` lines (objects with ``"prompt"``)."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, ValueError) as error:  # a name too long or with a NUL byte, unreadable, not UTF-8
        raise ConfigurationError(f"prompts: could not read {str(path)!r:.200}: {error}") from error
    if text is None:
        raise ConfigurationError(f"prompts: {str(path)!r:.200} is not a file (expected .txt, .json or .jsonl)")
    if path.suffix == ".txt":
        return [line for line in text.splitlines() if line.strip()]
    try:
        if path.suffix == ".json":
            rows = json.loads(text)
        elif path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            raise ConfigurationError(f"prompts: {str(path)!r} must end in .txt, .json or .jsonl")
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"prompts: {str(path)!r} is not valid JSON: {error}") from error
    if not isinstance(rows, list):
        raise ConfigurationError(f"prompts: {str(path)!r} must hold a JSON list")
    return [row["prompt"] if isinstance(row, dict) and "prompt" in row else row for row in rows]


def resolve_prompts(prompts: Any, split: str) -> list[str]:
    """The split's prompts from a list, a file path, or a dict of either per split."""
    if isinstance(prompts, Mapping):
        if split not in prompts:
            raise ConfigurationError(
                f"prompts has no {safe_repr(split)} split; its keys are {safe_repr(list(prompts))}"
            )
        prompts = prompts[split]
    if isinstance(prompts, (str, Path)):
        prompts = read_prompts(prompts)
    if not isinstance(prompts, Sequence) or not prompts or not all(isinstance(p, str) for p in prompts):
        raise ConfigurationError(
            "prompts must be None, a non-empty list of str, a .txt/.json/.jsonl path or a dict of those per split, "
            f"got {safe_repr(prompts)}"
        )
    too_long = [i for i, p in enumerate(prompts) if len(p) > MAX_OBSERVATION_LENGTH]
    if too_long:
        raise ConfigurationError(
            f"prompts must have at most {MAX_OBSERVATION_LENGTH} characters; "
            f"prompt {too_long[0]} has {len(prompts[too_long[0]])}"
        )
    return list(prompts)


class PromptsEnv(SingleTurnTextEnv):
    """A prompt dataset and a reward function of the completion: the setting of TRL's
    ``GRPOTrainer``, as a Gymnasium env.

    ## Description
    The agent reads a prompt and writes a completion, scored by ``reward_fn``. With no
    arguments the prompts are synthetic: 64 words drawn from the 3,997 most frequent a-z
    English words (``wordfreq``), scored by ``vowel_words`` (the fraction of the completion's
    words that start with a vowel). That is the standard workload of lm-gym's speed benchmark
    (``benchmark/perf``), where every contender uses the word-level tokenizer of those words.

    ## Action Space
    ``Text(max_length=2048)`` of printable ASCII: the completion (see ``IMDB-v0`` for the
    charset and errors). At ``action_level="token"``: ``Discrete(vocab_size)``, the
    completion ending at EOS or after ``max_new_tokens`` (default 48) tokens.

    ## Observation Space
    ``Text(max_length=16384)``: the prompt, then the prompt and the completion. At token level
    the ``Dict`` of ``TokenLevel``, the prompt cut to its last ``max_prompt_length`` (default 64)
    tokens.

    ## Rewards
    ``reward_fn(prompts=[...], completions=[...])`` (TRL's reward-function call; extra keyword
    arguments are not passed), one number per completion, on the single step. A function that
    returns anything else raises ``ValueError`` naming it.

    ## Starting State
    A prompt of the split drawn uniformly with the env's RNG, or prompt ``i`` with
    ``reset(options={"index": i})``. ``info`` holds ``prompt``, ``references`` (empty) and
    ``meta`` (``index``).

    ## Episode End
    After one step. ``info["metrics"]`` holds ``reward`` and ``num_words``.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``prompts`` | ``None`` | a list of str, a file or a dict of those per split (below); ``None``: synthetic prompts |
    | ``reward_fn`` | ``"vowel_words"`` | a callable, a ``"module:function"`` or a built-in name (``"vowel_words"``) |
    | ``split`` | ``"train"`` | ``"train"``, ``"validation"`` or ``"test"`` |
    | ``num_prompts`` | ``None`` | synthetic prompts in the split (default 1,024 / 256 / 256; at most 2**20) |
    | ``prompt_words`` | ``64`` | words per synthetic prompt |
    | ``action_level``, ``tokenizer`` | | token level, as for every task |
    | ``max_prompt_length``, ``max_new_tokens`` | | token level, as for every task (defaults 64 and 48 tokens) |
    | ``min_new_tokens`` | | token level, as for every task (default: no minimum) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the current text |

    A prompts file is a ``.txt`` (one prompt per line), ``.json`` or ``.jsonl`` file (objects
    with ``"prompt"``); a list or file serves every split.

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/Prompts-v0", num_envs=N, vectorization_mode="vector_entry_point")``
    scores the N completions of a step with one call of ``reward_fn``.

    ## Version History
    * v0: initial version.
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 64, "max_new_tokens": 48}

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """With the built-in ``reward_fn="vowel_words"``, the return and ``reward`` are a fraction of words, in [0, 1]
        (a function of yours declares nothing); ``num_words``: a count."""
        if argument(cls, kwargs, "reward_fn") == "vowel_words":
            return {"return": UNIT, "reward": UNIT, "num_words": COUNT}
        return {"num_words": COUNT}

    def __init__(
        self,
        prompts: Any = None,
        reward_fn: str | Callable[..., Sequence[float]] = "vowel_words",
        split: str = "train",
        num_prompts: int | None = None,
        prompt_words: int = 64,
        render_mode: str | None = None,
    ):
        super().__init__(
            max_observation_length=MAX_OBSERVATION_LENGTH, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode
        )
        self.split = check_choice("split", split, tuple(SYNTHETIC_SIZES))
        if prompts is None:
            prompt_words = check_int("prompt_words", prompt_words, 1, MAX_OBSERVATION_LENGTH // 16)
            if num_prompts is not None:
                num_prompts = check_int("num_prompts", num_prompts, 1, MAX_SYNTHETIC_PROMPTS)
            texts = synthetic_prompts(split, num_prompts, prompt_words)
        else:
            if num_prompts is not None:
                raise ConfigurationError("num_prompts applies to the synthetic prompts only (prompts=None)")
            texts = resolve_prompts(prompts, split)
        self._prompts_argument = prompts
        self.samples = [Sample(text, (), {"index": index}) for index, text in enumerate(texts)]
        self.reward_fn = CompletionReward(self._reward_callable(reward_fn))

    @staticmethod
    def _reward_callable(reward_fn: Any) -> Callable[..., Sequence[float]]:
        if callable(reward_fn):
            return reward_fn
        if isinstance(reward_fn, str) and reward_fn in BUILT_IN_REWARDS:
            return vowel_words
        if isinstance(reward_fn, str):
            return import_callable("reward_fn", reward_fn)
        raise ConfigurationError(
            f"reward_fn must be a callable, a 'module:function' string or one of {BUILT_IN_REWARDS}, "
            f"got {safe_repr(reward_fn)}"
        )

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        if self._prompts_argument is None:  # every word once: the same tokenizer for every split
            return f"prompts-synthetic-{NUM_WORDS}", [" ".join(word_list())]
        texts = resolve_prompts(self._prompts_argument, "train")  # every split uses the train split's tokenizer
        return keyed_corpus("prompts", texts)
