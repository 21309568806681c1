"""The fast Wordle core: feedback patterns as integers, candidate sets as boolean masks.

A feedback pattern is five colours packed into one integer ``sum(colour_i * 3**i)`` with
grey 0, yellow 1, green 2 (``ALL_GREEN = 242``). Feedback follows the game's rules for
repeated letters: greens are assigned first; then, left to right, a guess letter is yellow
only while the answer still has an unmatched copy of it, otherwise grey.

The feedback of one guess against every answer is one NumPy row (computed once, then
cached), so filtering the candidates after a guess is a single vectorised comparison, and
the information-gain policy scores every allowed guess from the full guess-by-answer
table (cached on disk, see :meth:`PatternTable.full_table`).
"""

from __future__ import annotations

import functools
from collections import OrderedDict

import numpy as np

from lm_gym.core.cache import cached_directory
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary, encode_words

GREY, YELLOW, GREEN = 0, 1, 2
NUM_PATTERNS = 3**5
ALL_GREEN = NUM_PATTERNS - 1
_PLACE = 3 ** np.arange(5, dtype=np.int32)
COLOUR_LETTERS = "byg"  # grey (black), yellow, green


def feedback_patterns(guesses: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """``(G, A)`` uint8 patterns of every guess against every answer (letter codes ``(G, 5)``, ``(A, 5)``)."""
    g = guesses[:, None, :]
    a = answers[None, :, :]
    green = g == a  # (G, A, 5)
    colours = np.where(green, GREEN, GREY).astype(np.int8)
    # unmatched[g, a, letter]: copies of the letter in the answer not used by a green
    unmatched = np.zeros((guesses.shape[0], answers.shape[0], 26), dtype=np.int8)
    for position in range(5):
        letter_in_answer = np.eye(26, dtype=np.int8)[answers[:, position]][None, :, :]
        unmatched += letter_in_answer * (~green[:, :, position])[:, :, None]
    rows = np.arange(guesses.shape[0])[:, None]
    cols = np.arange(answers.shape[0])[None, :]
    for position in range(5):
        letter = guesses[:, position][:, None]
        available = unmatched[rows, cols, letter] > 0
        yellow = available & ~green[:, :, position]
        colours[:, :, position] = np.where(yellow, YELLOW, colours[:, :, position])
        unmatched[rows, cols, letter] -= yellow
    return (colours.astype(np.int32) @ _PLACE).astype(np.uint8)


def pattern_of(guess: str, answer: str) -> int:
    """The pattern of one guess against one answer."""
    return int(feedback_patterns(encode_words([guess]), encode_words([answer]))[0, 0])


def pattern_to_text(pattern: int) -> str:
    """Five letters ``b``/``y``/``g`` (grey, yellow, green), first position first."""
    return "".join(COLOUR_LETTERS[(pattern // 3**i) % 3] for i in range(5))


def text_to_pattern(text: str) -> int:
    return sum(COLOUR_LETTERS.index(ch) * 3**i for i, ch in enumerate(text))


class PatternTable:
    """Feedback rows of guesses against all answers of a vocabulary, computed lazily.

    Rows of allowed guesses come from the full table once it is loaded; other rows (words
    outside the guess list, which the game also scores) are computed and kept in an LRU
    cache of ``max_cached_rows`` rows, so a stream of distinct unknown words uses bounded memory.
    """

    def __init__(self, vocabulary: WordleVocabulary, max_cached_rows: int = 4096):
        self.vocabulary = vocabulary
        self.max_cached_rows = max_cached_rows
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self._full: np.ndarray | None = None

    def row(self, guess: str) -> np.ndarray:
        """``(num_answers,)`` uint8 patterns of ``guess`` (any five-letter word) against every answer."""
        index = self.vocabulary.guess_index.get(guess)
        if self._full is not None and index is not None:
            return self._full[index]
        row = self._rows.get(guess)
        if row is None:
            row = feedback_patterns(encode_words([guess]), self.vocabulary.answer_codes)[0]
            self._rows[guess] = row
            if len(self._rows) > self.max_cached_rows:
                self._rows.popitem(last=False)
        else:
            self._rows.move_to_end(guess)
        return row

    def full_table(self) -> np.ndarray:
        """``(num_guesses, num_answers)`` uint8 patterns, cached under ``$LM_GYM_CACHE/wordle``."""
        if self._full is None:

            def build(directory):
                np.save(directory / "patterns.npy", self._compute_full())

            directory = cached_directory("wordle", f"patterns-{self.vocabulary.fingerprint}", build)
            self._full = np.load(directory / "patterns.npy", mmap_mode=None)
        return self._full

    def _compute_full(self, chunk: int = 128) -> np.ndarray:
        guesses, answers = self.vocabulary.guess_codes, self.vocabulary.answer_codes
        table = np.empty((len(guesses), len(answers)), dtype=np.uint8)
        for start in range(0, len(guesses), chunk):
            table[start : start + chunk] = feedback_patterns(guesses[start : start + chunk], answers)
        return table


@functools.lru_cache(maxsize=8)
def pattern_table(vocabulary: WordleVocabulary) -> PatternTable:
    """The shared :class:`PatternTable` of ``vocabulary`` (envs and policies of one process share it)."""
    return PatternTable(vocabulary)
