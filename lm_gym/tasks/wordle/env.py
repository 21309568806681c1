"""``lm_gym/Wordle-v0``: the multi-turn Wordle game of the ILQL code base."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.ranges import UNIT, Range, argument
from lm_gym.core.text_env import StepResult, TextEnv, play_policy
from lm_gym.core.validation import check_choice, check_int, check_number
from lm_gym.tasks.wordle.board import INVALID, UNKNOWN, board_text, feedback_line
from lm_gym.tasks.wordle.engine import ALL_GREEN, pattern_table, pattern_to_text
from lm_gym.tasks.wordle.policies import InfoGainPolicy
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary, default_vocabulary, is_word

MODES = ("filtering", "hidden_word")
MAX_ACTION_LENGTH = 64


class WordleEnv(TextEnv):
    """Wordle as a text game (the ILQL code base's Wordle task; also LMRL-Gym's).

    ## Description
    Guess a hidden five-letter word in at most six guesses. After each guess every letter
    is coloured: green (right letter, right place), yellow (in the word, elsewhere) or grey
    (not in the word). Repeated letters follow the game: greens are assigned first, then,
    left to right, a letter is yellow only while the word has an unmatched copy of it.

    Two equivalent transition modes (``mode``):

    * ``"filtering"`` (default, as the ILQL code): the state is the set of letter
      constraints, i.e. the answers consistent with the board. Each guess is scored against
      a word drawn uniformly from those answers. This is the same distribution over games as
      a hidden word drawn uniformly at reset.
    * ``"hidden_word"``: a word is drawn uniformly from the answers at reset (or given with
      ``reset(options={"answer": word})``) and every guess is scored against it.

    ## Action Space
    ``Text(max_length=64)``: the guess. Surrounding whitespace is stripped and letters are
    lower-cased. Any five-letter a-z word gets feedback (as in the ILQL code), unless
    ``unknown_word_penalty`` is set (LMRL-Gym): then a word outside the guess list gets
    reward ``-unknown_word_penalty``, no feedback, and uses up a turn. Text that is not five
    letters a-z is an invalid guess: reward -1, no feedback, a turn used. A non-``str``
    action or one over 64 characters raises ``InvalidActionError``. At
    ``action_level="token"``: token ids (``TokenLevel``); a guess ends at EOS, after 8 tokens
    or at 64 characters, so any sequence of token ids plays. As a tool of a tool-calling
    trainer (``lm_gym.integrations.trl_environment``): ``guess(word)``.

    ## Observation Space
    ``Text(max_length=1024)``: the board (see ``lm_gym.tasks.wordle.board``): a header line,
    then one line per guess, ``<word> <feedback>`` with feedback letters ``g``/``y``/``b``,
    e.g. ``crane bygbb``; ``<text> invalid`` / ``<word> unknown`` for guesses without
    feedback. At token level: the board's last ``max_prompt_length`` (default 128) tokens.

    ## Rewards
    -1 for every guess that does not solve the game, 0 for the guess that does (returns
    from -6 to 0). Invalid guesses -1; unknown words ``-unknown_word_penalty`` when set.

    ## Starting State
    The empty board (the header line). ``info``: ``prompt`` (the board), ``references``
    (empty), ``meta`` (``mode``, ``num_candidates``: answers still consistent).

    ## Episode End
    Terminates when a guess is all green or after ``max_guesses`` (6) guesses. Then
    ``info["answer"]`` is the hidden word (``filtering`` mode: the solved word, else one
    drawn uniformly from the remaining candidates) and ``info["metrics"]`` holds ``solved``
    (0/1), ``num_guesses`` and ``return``.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``answers_file`` | ``None`` | answer list, one word per line (below); ``None``: the offline default vocabulary |
    | ``guesses_file`` | ``None`` | allowed guesses, one per line (answers are always allowed); needs ``answers_file`` |
    | ``vocabulary`` | ``None`` | a ``WordleVocabulary`` object, instead of the files |
    | ``num_answers`` | ``None`` | use a seeded random sample of this many answers (see below) |
    | ``subset_seed`` | ``0`` | seed of that sample |
    | ``mode`` | ``"filtering"`` | ``"filtering"`` or ``"hidden_word"`` (see Description) |
    | ``unknown_word_penalty`` | ``None`` | penalty for words outside the guess list; ``None`` plays them |
    | ``max_guesses`` | ``6`` | guesses per game |
    | ``action_level`` | ``"utterance"`` | ``"token"`` applies ``TokenLevel`` (via ``gymnasium.make``) |
    | ``tokenizer`` | ``None`` | token level: a tokenizer, name or path; ``None`` trains a BPE on Wordle boards |
    | ``max_prompt_length`` | ``128`` | token level: board tokens kept (the last ones) |
    | ``max_new_tokens`` | ``8`` | token level: tokens per guess |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the board |

    ``answers_file`` lines that are not five letters a-z are dropped with a warning, as ILQL's
    loader does; the offline default vocabulary is ``lm_gym.tasks.wordle.vocabulary``.
    ``guesses_file=None`` with ``answers_file`` allows the answers as guesses. ILQL's
    200/400/800-word variants were fixed lists: the ``num_answers`` samples have the same
    sizes, but are not those lists (pass the paper's files as ``answers_file``).

    ## Vectorized environment
    ``gymnasium.make_vec("lm_gym/Wordle-v0", num_envs=N, vectorization_mode="vector_entry_point")``:
    N games sharing one vocabulary and feedback table.

    Offline by default (``WordleEnv.offline_kwargs`` is empty). Bad arguments raise
    ``ConfigurationError`` naming the argument; ``reset(options={"answer": w})`` is the only
    reset option.

    ## Version History
    * v0: initial version. Token level: a guess also ends at the 64-character limit. Word
      files: lines that are not five letters are dropped with a warning.
    """

    token_level_defaults: ClassVar[dict[str, int]] = {"max_prompt_length": 128, "max_new_tokens": 8}
    reset_options: ClassVar[tuple[str, ...]] = ("answer",)
    success_metric: ClassVar[str | None] = "solved"
    tool_name: ClassVar[str | None] = "guess"
    tool_argument: ClassVar[str | None] = "word"
    tool_argument_description: ClassVar[str | None] = "your guess: a five-letter English word in lower case, e.g. crane"

    @classmethod
    def value_ranges(cls, **kwargs: Any) -> dict[str, Range]:
        """The return: -1 per guess that does not solve (``-unknown_word_penalty`` for an unknown word), 0 for the
        one that does: in [-6, 0] by default; ``solved`` in [0, 1]; ``num_guesses``: 1 to ``max_guesses``."""
        max_guesses = int(argument(cls, kwargs, "max_guesses"))
        penalty = argument(cls, kwargs, "unknown_word_penalty")
        worst = max(1.0, float(penalty)) if penalty is not None else 1.0
        returns = Range(-worst * max_guesses, 0.0)
        return {"return": returns, "solved": UNIT, "num_guesses": Range(1, max_guesses, integer=True)}

    def __init__(
        self,
        answers_file: str | Path | None = None,
        guesses_file: str | Path | None = None,
        vocabulary: WordleVocabulary | None = None,
        num_answers: int | None = None,
        subset_seed: int = 0,
        mode: str = "filtering",
        unknown_word_penalty: float | None = None,
        max_guesses: int = 6,
        render_mode: str | None = None,
    ):
        super().__init__(max_observation_length=1024, max_action_length=MAX_ACTION_LENGTH, render_mode=render_mode)
        subset_seed = check_int("subset_seed", subset_seed, 0)
        self.mode = check_choice("mode", mode, MODES)
        self.max_guesses = check_int("max_guesses", max_guesses, 1, 20)
        if unknown_word_penalty is not None:
            unknown_word_penalty = check_number("unknown_word_penalty", unknown_word_penalty, minimum=0)
        self.unknown_word_penalty = unknown_word_penalty
        if vocabulary is not None:
            if not isinstance(vocabulary, WordleVocabulary):
                raise ConfigurationError(
                    "vocabulary must be a WordleVocabulary or None, "
                    f"got {type(vocabulary).__name__}: {safe_repr(vocabulary)}"
                )
            if answers_file is not None or guesses_file is not None:
                raise ConfigurationError("pass either vocabulary or answers_file/guesses_file, not both")
        elif answers_file is not None:
            vocabulary = WordleVocabulary.from_files(answers_file, guesses_file)
        elif guesses_file is not None:
            raise ConfigurationError("guesses_file needs answers_file (the answers are always allowed guesses)")
        else:
            vocabulary = default_vocabulary()
        if num_answers is not None:
            vocabulary = vocabulary.subset(num_answers, subset_seed)
        self.vocabulary = vocabulary
        self.table = pattern_table(vocabulary)
        self.table.full_table()

    def _new_episode(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        answers = self.vocabulary.answers
        answer = options.get("answer")
        if answer is not None and (self.mode != "hidden_word" or not isinstance(answer, str) or answer not in answers):
            raise ConfigurationError(
                "options['answer'] must be a word of the answer list in mode='hidden_word'; "
                f"got {safe_repr(answer)} in mode={self.mode!r}"
            )
        if self.mode == "hidden_word":
            self._answer_index = answers.index(answer) if answer else int(self.np_random.integers(len(answers)))
        self._candidates = np.ones(len(answers), dtype=bool)
        self._lines: list[str] = []
        self._return = 0.0
        return self._board(), self._info()

    def _transition(self, utterance: str, score: float | None) -> StepResult:
        guess = utterance.strip().lower()
        solved = False
        if not is_word(guess):
            self._lines.append(f"{' '.join(guess.split())[:16]} {INVALID}")
            reward = -1.0
        elif self.unknown_word_penalty is not None and guess not in self.vocabulary.guess_index:
            self._lines.append(f"{guess} {UNKNOWN}")
            reward = -float(self.unknown_word_penalty)
        else:
            row = self.table.row(guess)
            if self.mode == "hidden_word":
                scored_against = self._answer_index
            else:
                candidates = np.flatnonzero(self._candidates)
                scored_against = int(candidates[self.np_random.integers(len(candidates))])
            pattern = int(row[scored_against])
            self._candidates = self._candidates & (row == pattern)
            self._lines.append(feedback_line(guess, pattern_to_text(pattern)))
            solved = pattern == ALL_GREEN
            reward = 0.0 if solved else -1.0
        self._return += reward
        terminated = solved or len(self._lines) >= self.max_guesses
        info = self._info()
        if terminated:
            info["answer"] = self._final_answer(solved)
            info["metrics"] = {"solved": float(solved), "num_guesses": len(self._lines), "return": self._return}
        return self._board(), reward, terminated, False, info

    def _final_answer(self, solved: bool) -> str:
        if self.mode == "hidden_word":
            return self.vocabulary.answers[self._answer_index]
        candidates = np.flatnonzero(self._candidates)
        index = candidates[0] if solved else candidates[self.np_random.integers(len(candidates))]
        return self.vocabulary.answers[int(index)]

    def _board(self) -> str:
        return board_text(self._lines, self.max_guesses)

    def _info(self) -> dict[str, Any]:
        meta = {"mode": self.mode, "num_candidates": int(self._candidates.sum())}
        return {"prompt": self._board(), "references": [], "meta": meta}

    def demonstrations(self, num_games: int = 500, seed: int = 0) -> list[tuple[str, str]]:
        """``(board, guess)`` pairs of ``num_games`` seeded games of the information-gain policy."""
        game = WordleEnv(vocabulary=self.vocabulary, mode="hidden_word", max_guesses=self.max_guesses)
        return play_policy(game, InfoGainPolicy(self.vocabulary), num_games, seed)

    def tokenizer_corpus(self) -> tuple[str, Iterable[str]]:
        """Boards of random games: every guess word once, with the feedback it gets."""
        rng = np.random.default_rng(0)
        table = self.table.full_table()
        lines = [
            feedback_line(word, pattern_to_text(int(table[i, rng.integers(table.shape[1])])))
            for i, word in enumerate(self.vocabulary.guesses)
        ]
        boards = [
            board_text(lines[start : start + self.max_guesses], self.max_guesses)
            for start in range(0, len(lines), self.max_guesses)
        ]
        return f"wordle-{self.vocabulary.fingerprint}-{self.max_guesses}", boards
