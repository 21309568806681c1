"""Wordle vocabularies: the answer list and the allowed-guess list.

The default vocabulary is built offline from the ``wordfreq`` package's English frequency
list (a dependency of lm-gym): the 12,972 most frequent five-letter a-z words are the
allowed guesses and the 2,315 most frequent of those that do not look like plurals (a word
ending in ``s`` whose four-letter stem is itself a word) are the answers, the sizes of the
official lists. Being frequency-derived it keeps some names and abbreviations the official
lists leave out. For the official game pass its files:
``WordleVocabulary.from_files("wordle_official.txt", "wordle_official_guess.txt")``.

Word files hold one word per line. As the ILQL code's loader does, lines that are not
five letters a-z (after stripping and lower-casing) are dropped, and so are repeated words,
with a warning that says how many, so mixed-length lists such as ILQL's ``10k_words.txt``
and ``large_words.txt`` load as their five-letter words.
"""

from __future__ import annotations

import functools
import hashlib
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lm_gym.core.errors import ConfigurationError, DataUnavailableError, safe_repr
from lm_gym.core.validation import check_int, check_path
from lm_gym.data.wordfreq_lists import wordfreq_list

WORD_LENGTH = 5
DEFAULT_NUM_ANSWERS = 2315
DEFAULT_NUM_GUESSES = 12972


def is_word(text: str) -> bool:
    """True for exactly five lower-case letters a-z."""
    return len(text) == WORD_LENGTH and text.isascii() and text.isalpha() and text.islower()


@dataclass(frozen=True, eq=False)
class WordleVocabulary:
    """An answer list and an allowed-guess list (which always contains the answers).

    ``answers[i]`` and ``guesses[j]`` keep their given order; ``codes`` arrays hold letters
    as 0-25 for the vectorised feedback computation.
    """

    answers: tuple[str, ...]
    guesses: tuple[str, ...]

    def __post_init__(self):
        for name, words in (("answers", self.answers), ("guesses", self.guesses)):
            bad = [w for w in words if not is_word(w)]
            if bad:
                raise ConfigurationError(f"{name} must be five-letter lower-case a-z words; found {safe_repr(bad[:5])}")
            if len(set(words)) != len(words):
                raise ConfigurationError(f"{name} contains duplicate words")
        if not self.answers:
            raise ConfigurationError("answers must not be empty")
        missing = set(self.answers) - set(self.guesses)
        if missing:  # the guess list always allows every answer
            object.__setattr__(self, "guesses", self.guesses + tuple(w for w in self.answers if w in missing))

    @classmethod
    def create(cls, answers: Iterable[str], guesses: Iterable[str] | None = None) -> WordleVocabulary:
        answers = tuple(answers)
        return cls(answers, tuple(guesses) if guesses is not None else answers)

    @classmethod
    def from_files(cls, answers_path: str | Path, guesses_path: str | Path | None = None) -> WordleVocabulary:
        """Lists with one word per line (case folded; other lines dropped, see the module docstring)."""
        answers = read_words(answers_path, "answers_file")
        return cls.create(answers, None if guesses_path is None else read_words(guesses_path, "guesses_file"))

    def subset(self, num_answers: int, seed: int = 0) -> WordleVocabulary:
        """``num_answers`` answers sampled without replacement with ``seed`` (the paper's 200/400/800 variants).

        The guess list stays whole.
        """
        num_answers = check_int("num_answers", num_answers, 1, len(self.answers))
        seed = check_int("subset_seed", seed, 0)
        chosen = np.sort(np.random.default_rng(seed).choice(len(self.answers), size=num_answers, replace=False))
        return WordleVocabulary(tuple(self.answers[i] for i in chosen), self.guesses)

    @functools.cached_property
    def fingerprint(self) -> str:
        """A short hash of both lists (cache keys)."""
        return hashlib.sha256(("\n".join(self.answers) + "|" + "\n".join(self.guesses)).encode()).hexdigest()[:16]

    @functools.cached_property
    def answer_codes(self) -> np.ndarray:
        return encode_words(self.answers)

    @functools.cached_property
    def guess_codes(self) -> np.ndarray:
        return encode_words(self.guesses)

    @functools.cached_property
    def guess_index(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.guesses)}


def encode_words(words: Sequence[str]) -> np.ndarray:
    """``(len(words), 5)`` uint8 array of letters as 0-25."""
    if not words:
        return np.zeros((0, WORD_LENGTH), dtype=np.uint8)
    return (np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8).reshape(-1, WORD_LENGTH) - ord("a")).astype(
        np.uint8
    )


def read_words(path: str | Path, name: str = "path") -> list[str]:
    """The distinct five-letter words of a word file, in order; warns how many lines were dropped."""
    path = check_path(name, path)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name no file system takes: too long, or with a NUL byte
        is_file = False
    if not is_file:
        raise DataUnavailableError(f"{name}={str(path)!r:.200} does not exist (expected one five-letter word per line)")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise DataUnavailableError(
            f"{name}={str(path)!r} is not UTF-8 text ({error}); expected one word per line"
        ) from None
    candidates = [line.strip().lower() for line in lines]
    candidates = [word for word in candidates if word]
    words = list(dict.fromkeys(word for word in candidates if is_word(word)))
    not_words = sum(not is_word(word) for word in candidates)
    repeated = len(candidates) - not_words - len(words)
    if not_words or repeated:
        warnings.warn(
            f"{name}={str(path)!r}: kept {len(words)} five-letter words; dropped {not_words} lines that are not "
            f"five letters a-z and {repeated} repeated words",
            stacklevel=3,
        )
    if not words:
        raise DataUnavailableError(f"{name}={str(path)!r} holds no five-letter a-z words")
    return words


@functools.lru_cache(maxsize=1)
def default_vocabulary() -> WordleVocabulary:
    """The offline default, derived from ``wordfreq`` (see the module docstring; where wordfreq is
    absent, from a copy of the lists: :mod:`lm_gym.data.wordfreq_lists`)."""
    return WordleVocabulary(_default_answers(), _default_guesses())


def _frequent_words() -> list[str]:
    from wordfreq import top_n_list

    return top_n_list("en", 400_000, wordlist="large")


@wordfreq_list("wordle-guesses")
def _default_guesses() -> list[str]:
    return [w for w in _frequent_words() if is_word(w)][:DEFAULT_NUM_GUESSES]


@wordfreq_list("wordle-answers")
def _default_answers() -> list[str]:
    four_letter_words = {w for w in _frequent_words() if len(w) == 4 and w.isascii() and w.isalpha()}
    answers = [w for w in _default_guesses() if not (w.endswith("s") and w[:4] in four_letter_words)]
    return answers[:DEFAULT_NUM_ANSWERS]
