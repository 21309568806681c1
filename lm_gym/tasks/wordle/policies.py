"""Scripted Wordle policies: each maps a board (the env's observation text) to a guess.

They read only the observation, so they play any ``lm_gym`` Wordle env, scalar or vector,
in either mode, and generate the offline datasets. The candidate answers are recomputed
from the board's feedback lines with the vectorised feedback table (microseconds).

=======================  ======================================================================
policy                   guess
=======================  ======================================================================
``InfoGainPolicy``       the allowed guess (``hard_mode``: the remaining candidate, as the ILQL
                         code) whose feedback over the remaining candidates has the highest
                         entropy (greedy information gain; ties go to candidates, then list
                         order, not at random, so the cache is exact); with one or two
                         candidates left, the first. Cached per board.
``StartWordPolicy``      a first word drawn from a list, then another policy
``RandomPolicy``         uniform over the allowed guesses
``RandomMixturePolicy``  with probability ``prob_smart`` a uniform remaining candidate, else a
                         uniform allowed guess
``WrongWordPolicy``      a uniform allowed guess that the board already rules out
``RepeatPolicy``         one of the earlier guesses again (the first from another policy)
``MonteCarloPolicy``     the best of several proposed guesses by the mean return of rollouts
                         (in :mod:`lm_gym.tasks.wordle.monte_carlo`: it plays the env itself)
``HumanPolicy``          asks a person in the terminal
=======================  ======================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.tasks.wordle.board import parse_board
from lm_gym.tasks.wordle.engine import NUM_PATTERNS, pattern_table, text_to_pattern
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary, is_word


class WordlePolicy:
    """Base class: ``policy(board_text) -> guess``; randomness from ``seed``."""

    name = "policy"

    def __init__(self, vocabulary: WordleVocabulary, seed: int | None = None):
        self.vocabulary = vocabulary
        self.table = pattern_table(vocabulary)
        self.rng = np.random.default_rng(seed)

    def __call__(self, observation: str) -> str:
        raise NotImplementedError

    def children(self) -> tuple[WordlePolicy, ...]:
        """Policies this one delegates to."""
        return ()

    def seed(self, seed: int | None) -> None:
        """Re-seed this policy and the policies it delegates to."""
        sequence = np.random.SeedSequence(seed)
        self.rng = np.random.default_rng(sequence)
        for child, child_sequence in zip(self.children(), sequence.spawn(len(self.children()))):
            child.seed(int(child_sequence.generate_state(1)[0]))

    def candidates(self, observation: str) -> np.ndarray:
        """Indices of the answers consistent with every feedback line of the board."""
        mask = np.ones(len(self.vocabulary.answers), dtype=bool)
        for word, feedback in parse_board(observation):
            mask &= self.table.row(word) == text_to_pattern(feedback)
        return np.flatnonzero(mask)

    def random_guess(self) -> str:
        return self.vocabulary.guesses[int(self.rng.integers(len(self.vocabulary.guesses)))]


class InfoGainPolicy(WordlePolicy):
    """Greedy information gain over the allowed guesses (the ILQL "optimal" policy)."""

    name = "info_gain"

    def __init__(
        self, vocabulary: WordleVocabulary, hard_mode: bool = False, seed: int | None = None, chunk_size: int = 2048
    ):
        super().__init__(vocabulary, seed)
        self.hard_mode = hard_mode
        self.chunk_size = chunk_size
        self.name = "info_gain_hard" if hard_mode else "info_gain"
        self._cache: dict[tuple[tuple[str, str], ...], str] = {}
        self._is_answer = np.zeros(len(vocabulary.guesses), dtype=bool)
        self._is_answer[[vocabulary.guess_index[w] for w in vocabulary.answers]] = True

    def __call__(self, observation: str) -> str:
        key = tuple(parse_board(observation))
        guess = self._cache.get(key)
        if guess is None:
            guess = self._cache[key] = self._best_guess(self.candidates(observation))
        return guess

    def _best_guess(self, candidates: np.ndarray) -> str:
        answers = self.vocabulary.answers
        if len(candidates) == 0:  # a board from another vocabulary: nothing is consistent
            return self.random_guess()
        if len(candidates) <= 2:
            return answers[int(candidates[0])]
        is_candidate = np.zeros(len(self.vocabulary.guesses), dtype=bool)
        is_candidate[[self.vocabulary.guess_index[answers[i]] for i in candidates]] = True
        pool = np.flatnonzero(is_candidate) if self.hard_mode else np.arange(len(self.vocabulary.guesses))
        entropy = self.entropies(candidates, pool)
        # Lexicographic: highest entropy (to 1e-9), then a possible answer, then list order.
        score = np.round(entropy, 9) + 1e-10 * is_candidate[pool]
        return self.vocabulary.guesses[int(pool[np.argmax(score)])]

    def entropies(self, candidates: np.ndarray, guesses: np.ndarray) -> np.ndarray:
        """Entropy (bits) of the feedback of each guess (indices) over ``candidates``, uniform prior."""
        table = self.table.full_table()
        result = np.empty(len(guesses))
        for start in range(0, len(guesses), self.chunk_size):
            block = table[guesses[start : start + self.chunk_size]][:, candidates].astype(np.int32)
            block += (np.arange(block.shape[0], dtype=np.int32) * NUM_PATTERNS)[:, None]
            counts = np.bincount(block.ravel(), minlength=block.shape[0] * NUM_PATTERNS).reshape(-1, NUM_PATTERNS)
            p = counts / len(candidates)
            with np.errstate(divide="ignore", invalid="ignore"):
                result[start : start + block.shape[0]] = -np.nansum(np.where(p > 0, p * np.log2(p), 0.0), axis=1)
        return result


class DelegatingPolicy(WordlePolicy):
    """A policy that plays some boards itself and hands the others to ``delegate``.

    It plays ``delegate``'s vocabulary and is named ``<kind>+<delegate's name>``.
    """

    kind = "delegating"

    def __init__(self, delegate: WordlePolicy, seed: int | None = None):
        super().__init__(delegate.vocabulary, seed)
        self.delegate = delegate
        self.name = f"{self.kind}+{delegate.name}"

    def children(self) -> tuple[WordlePolicy, ...]:
        return (self.delegate,)


class StartWordPolicy(DelegatingPolicy):
    """On the empty board a word drawn uniformly from ``start_words``, then ``then``."""

    kind = "start_word"

    def __init__(self, start_words: str | Sequence[str], then: WordlePolicy, seed: int | None = None):
        start_words = [start_words] if isinstance(start_words, str) else list(start_words)
        if not start_words or not all(is_word(w) for w in start_words):
            raise ConfigurationError(
                f"start_words must be five-letter lower-case a-z words, got {safe_repr(start_words)}"
            )
        super().__init__(then, seed)
        self.start_words = start_words

    def __call__(self, observation: str) -> str:
        if observation.splitlines()[1:]:
            return self.delegate(observation)
        return self.start_words[int(self.rng.integers(len(self.start_words)))]


class RandomPolicy(WordlePolicy):
    name = "random"

    def __call__(self, observation: str) -> str:
        return self.random_guess()


class RandomMixturePolicy(WordlePolicy):
    """A remaining candidate with probability ``prob_smart``, else any allowed guess."""

    def __init__(self, vocabulary: WordleVocabulary, prob_smart: float, seed: int | None = None):
        if not 0.0 <= prob_smart <= 1.0:
            raise ConfigurationError(f"prob_smart must be in [0, 1], got {safe_repr(prob_smart)}")
        super().__init__(vocabulary, seed)
        self.prob_smart = prob_smart
        self.name = f"random_mixture_{prob_smart:g}"

    def __call__(self, observation: str) -> str:
        if self.rng.random() < self.prob_smart:
            candidates = self.candidates(observation)
            if len(candidates):
                return self.vocabulary.answers[int(self.rng.choice(candidates))]
        return self.random_guess()


class WrongWordPolicy(WordlePolicy):
    """An allowed guess the board already rules out (on the empty board: a non-answer)."""

    name = "wrong_word"

    def __call__(self, observation: str) -> str:
        possible = {self.vocabulary.answers[i] for i in self.candidates(observation)}
        for _ in range(100):  # rejection sampling: ruled-out words are the vast majority
            guess = self.random_guess()
            if guess not in possible:
                return guess
        return self.random_guess()


class RepeatPolicy(DelegatingPolicy):
    """``first`` on the empty board, then one of the first ``first_n`` guesses (all if ``None``) again."""

    kind = "repeat"

    def __init__(self, first: WordlePolicy, first_n: int | None = None, seed: int | None = None):
        super().__init__(first, seed)
        self.first_n = first_n

    def __call__(self, observation: str) -> str:
        earlier = [line.rsplit(" ", 1)[0] for line in observation.splitlines()[1:]][: self.first_n]
        if not earlier:
            return self.delegate(observation)
        return earlier[int(self.rng.integers(len(earlier)))]


class HumanPolicy(WordlePolicy):
    """A person at the terminal: shows the board, reads a guess."""

    name = "human"

    def __init__(
        self, vocabulary: WordleVocabulary, read: Callable[[str], str] = input, show: Callable[[str], None] = print
    ):
        super().__init__(vocabulary)
        self.read, self.show = read, show

    def __call__(self, observation: str) -> str:
        self.show(observation)
        return self.read("your guess: ").strip()
