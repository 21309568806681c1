"""Wordle rules: feedback (repeated letters, greens first), rewards, termination, invalid guesses."""

from collections import Counter

import numpy as np
import pytest

from lm_gym.core.errors import ConfigurationError, InvalidActionError
from lm_gym.tasks.wordle import WordleEnv, WordleVocabulary
from lm_gym.tasks.wordle.board import parse_board
from lm_gym.tasks.wordle.engine import ALL_GREEN, feedback_patterns, pattern_of, pattern_to_text, text_to_pattern
from lm_gym.tasks.wordle.vocabulary import encode_words

ANSWERS = ("there", "hello", "abide", "babes", "crane", "slate", "plumb", "nymph")
GUESSES = ANSWERS + ("speed", "eerie", "llama", "abbey", "zzzzz", "qajaq")


def reference_feedback(guess: str, answer: str) -> str:
    """The rules as a person states them: greens first, then yellows left to right while copies remain."""
    colours = ["b"] * 5
    unmatched = Counter(a for g, a in zip(guess, answer) if g != a)
    for i, (g, a) in enumerate(zip(guess, answer)):
        if g == a:
            colours[i] = "g"
        elif unmatched[g] > 0:
            colours[i] = "y"
            unmatched[g] -= 1
    return "".join(colours)


@pytest.mark.parametrize(
    "guess, answer, feedback",
    [
        ("speed", "abide", "bbyby"),  # one e in the answer: only the first e is yellow
        ("eerie", "there", "ybybg"),  # the green last e uses one copy first, so only one yellow e
        ("llama", "hello", "yybbb"),  # two l in both: both yellow
        ("abbey", "babes", "yyggb"),
        ("crane", "crane", "ggggg"),
        ("plumb", "nymph", "ybbyb"),
    ],
)
def test_feedback_rules(guess, answer, feedback):
    assert pattern_to_text(pattern_of(guess, answer)) == feedback
    assert reference_feedback(guess, answer) == feedback


def test_vectorised_feedback_matches_the_reference_on_random_words():
    rng = np.random.default_rng(0)
    letters = np.array(list("aabeelorst"))  # few letters: many repeats
    guesses = ["".join(rng.choice(letters, 5)) for _ in range(200)]
    answers = ["".join(rng.choice(letters, 5)) for _ in range(150)]
    table = feedback_patterns(encode_words(guesses), encode_words(answers))
    for i, guess in enumerate(guesses):
        for j, answer in enumerate(answers):
            assert pattern_to_text(table[i, j]) == reference_feedback(guess, answer)
    assert pattern_to_text(ALL_GREEN) == "ggggg" and text_to_pattern("ybybg") == pattern_of("eerie", "there")


@pytest.fixture
def vocabulary():
    return WordleVocabulary.create(ANSWERS, GUESSES)


def play(env, guesses):
    results = [env.step(g) for g in guesses]
    return [r[1] for r in results], results[-1]


def test_rewards_and_solving(vocabulary):
    env = WordleEnv(vocabulary=vocabulary, mode="hidden_word")
    env.reset(seed=0, options={"answer": "slate"})
    rewards, (board, _, terminated, truncated, info) = play(env, ["crane", "plumb", "slate"])
    assert rewards == [-1.0, -1.0, 0.0] and terminated and not truncated
    assert board.splitlines()[1:] == ["crane bbgbg", "plumb bgbbb", "slate ggggg"]
    assert info["answer"] == "slate" and info["metrics"] == {"solved": 1.0, "num_guesses": 3, "return": -2.0}


def test_six_guesses_end_the_game(vocabulary):
    env = WordleEnv(vocabulary=vocabulary, mode="hidden_word")
    env.reset(options={"answer": "nymph"})
    rewards, (_, _, terminated, _, info) = play(env, ["crane"] * 6)
    assert rewards == [-1.0] * 6 and terminated
    assert info["metrics"] == {"solved": 0.0, "num_guesses": 6, "return": -6.0}


def test_invalid_guesses_cost_a_turn_without_feedback(vocabulary):
    env = WordleEnv(vocabulary=vocabulary, mode="hidden_word")
    env.reset(options={"answer": "crane"})
    for text in ["abc", "abcdef", "ab1de", "", "two\nlines"]:
        board, reward, terminated, _, info = env.step(text)
        assert reward == -1.0 and board.splitlines()[-1].endswith(" invalid")
        assert info["meta"]["num_candidates"] == len(ANSWERS)
    _, reward, terminated, _, info = env.step("  CRANE ")  # whitespace stripped, case folded
    assert reward == 0.0 and terminated and info["metrics"]["num_guesses"] == 6


def test_unknown_words_are_played_unless_penalised(vocabulary):
    env = WordleEnv(vocabulary=vocabulary, mode="hidden_word")
    env.reset(options={"answer": "crane"})
    board, reward, *_ = env.step("xylyl")  # not in the guess list, but five letters: feedback (ILQL)
    assert reward == -1.0 and board.splitlines()[-1] == "xylyl bbbbb"
    penalised = WordleEnv(vocabulary=vocabulary, mode="hidden_word", unknown_word_penalty=2.5)
    penalised.reset(options={"answer": "crane"})
    board, reward, _, _, info = penalised.step("xylyl")
    assert (
        reward == -2.5 and board.splitlines()[-1] == "xylyl unknown" and info["meta"]["num_candidates"] == len(ANSWERS)
    )


def test_filtering_mode_is_consistent_with_a_hidden_word(vocabulary):
    env = WordleEnv(vocabulary=vocabulary, mode="filtering")
    rng = np.random.default_rng(0)
    for seed in range(30):
        env.reset(seed=seed)
        terminated = False
        while not terminated:
            board, _, terminated, _, info = env.step(str(rng.choice(GUESSES)))
        # every feedback on the board is what the final answer would have given
        assert all(pattern_of(word, info["answer"]) == text_to_pattern(fb) for word, fb in parse_board(board))


def test_filtering_and_hidden_word_modes_agree_in_distribution(vocabulary):
    counts = {}
    for mode in ("filtering", "hidden_word"):
        env = WordleEnv(vocabulary=vocabulary, mode=mode)
        feedback = Counter()
        for seed in range(4000):
            env.reset(seed=seed)
            board, *_ = env.step("slate")
            feedback[board.splitlines()[-1]] += 1
        counts[mode] = feedback
    for line in counts["hidden_word"].keys() | counts["filtering"].keys():
        expected = sum(pattern_to_text(pattern_of("slate", a)) == line.split()[1] for a in ANSWERS) / len(ANSWERS)
        for mode in counts:
            assert abs(counts[mode][line] / 4000 - expected) < 0.03


def test_bad_arguments_and_actions(vocabulary):
    with pytest.raises(ConfigurationError, match="mode must be one of"):
        WordleEnv(vocabulary=vocabulary, mode="easy")
    with pytest.raises(ConfigurationError, match="max_guesses"):
        WordleEnv(vocabulary=vocabulary, max_guesses=0)
    env = WordleEnv(vocabulary=vocabulary, mode="filtering")
    with pytest.raises(ConfigurationError, match=r"options\['answer'\]"):
        env.reset(options={"answer": "crane"})  # only in hidden_word mode
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="must be a str"):
        env.step(42)
    with pytest.raises(InvalidActionError, match="at most 64"):
        env.step("a" * 65)
    with pytest.raises(ConfigurationError, match="five-letter"):
        WordleVocabulary.create(["crane", "toolong"])
