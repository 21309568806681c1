"""Wordle-v0: registration, token level, vector env, seeds, vocabularies (the checkers run in tests/contract)."""

import gymnasium
import pytest

from lm_gym.tasks.wordle import WordleVocabulary, default_vocabulary
from lm_gym.tasks.wordle.vocabulary import is_word


def test_default_vocabulary_is_offline_and_valid():
    vocabulary = default_vocabulary()
    assert (len(vocabulary.answers), len(vocabulary.guesses)) == (2315, 12972)
    assert set(vocabulary.answers) <= set(vocabulary.guesses)
    assert all(is_word(w) for w in vocabulary.guesses)
    assert {"about", "house", "world"} <= set(vocabulary.answers)


def test_official_lists_from_files(shared_data):
    vocabulary = WordleVocabulary.from_files(
        shared_data / "wordle" / "wordle_official.txt", shared_data / "wordle" / "wordle_official_guess.txt"
    )
    assert (len(vocabulary.answers), len(vocabulary.guesses)) == (2315, 12972)


def test_seeded_subsets():
    vocabulary = default_vocabulary()
    small = vocabulary.subset(200, seed=1)
    assert len(small.answers) == 200 and small.guesses == vocabulary.guesses
    assert small.answers == vocabulary.subset(200, seed=1).answers != vocabulary.subset(200, seed=2).answers
    env = gymnasium.make("lm_gym/Wordle-v0", num_answers=400)
    _, info = env.reset(seed=0)
    assert info["meta"]["num_candidates"] == 400


@pytest.fixture(scope="module")
def wordle():
    return gymnasium.make("lm_gym/Wordle-v0")


@pytest.fixture(scope="module")
def wordle_token():
    return gymnasium.make("lm_gym/Wordle-v0", action_level="token")


def test_token_level_multi_turn(wordle_token):
    tokenizer = wordle_token.unwrapped.tokenizer
    wordle_token.reset(seed=0)
    for turn in range(2):
        for token in tokenizer(" crane", add_special_tokens=False)["input_ids"]:
            obs, reward, terminated, _, info = wordle_token.step(token)
        obs, reward, terminated, _, info = wordle_token.step(tokenizer.eos_token_id)
        assert reward == -1.0 and not terminated and info["num_tokens"] >= 1
        board = tokenizer.decode(obs["prompt_ids"][obs["prompt_mask"] == 1])
        assert board.splitlines()[-1].startswith("crane ") and len(board.splitlines()) == turn + 2
        assert obs["context_mask"].sum() == 0  # a new utterance starts after each guess


def test_same_seed_same_games(wordle):
    other = gymnasium.make("lm_gym/Wordle-v0")
    boards = []
    for env in (wordle, other, wordle):
        env.reset(seed=42)
        for guess in ["slate", "crony", "about"]:
            board, *_ = env.step(guess)
        boards.append(board)
    assert boards[0] == boards[1] == boards[2]


def test_vector_env_matches_scalar_games():
    venv = gymnasium.make_vec(
        "lm_gym/Wordle-v0", num_envs=3, vectorization_mode="vector_entry_point", mode="hidden_word"
    )
    venv.reset(seed=10)
    for _ in range(2):
        boards, rewards, terminations, _, infos = venv.step(["slate", "crony", "xx"])
    assert rewards.shape == (3,) and rewards[2] == -1.0 and not terminations.any()
    scalar = gymnasium.make("lm_gym/Wordle-v0", mode="hidden_word")
    for i, guess in enumerate(["slate", "crony", "xx"]):
        scalar.reset(seed=10 + i)
        scalar.step(guess)
        board, *_ = scalar.step(guess)
        assert board == boards[i]
