"""Scripted Wordle policies and the offline datasets they generate."""

import numpy as np
import pytest

from lm_gym.offline import load_trajectories, save_trajectories
from lm_gym.tasks.wordle import WordleEnv, WordleVocabulary, offline_data
from lm_gym.tasks.wordle.board import parse_board
from lm_gym.tasks.wordle.engine import pattern_of, text_to_pattern
from lm_gym.tasks.wordle.monte_carlo import MonteCarloPolicy
from lm_gym.tasks.wordle.policies import (
    HumanPolicy,
    InfoGainPolicy,
    RandomMixturePolicy,
    RandomPolicy,
    RepeatPolicy,
    StartWordPolicy,
    WrongWordPolicy,
)


def play_games(env, policy, num_games, seed=0):
    returns, guesses = [], []
    for game in range(num_games):
        board, _ = env.reset(seed=seed + game)
        terminated = False
        while not terminated:
            board, _, terminated, _, info = env.step(policy(board))
        returns.append(info["metrics"]["return"])
        guesses.append(info["metrics"]["num_guesses"])
    return np.array(returns), np.array(guesses)


@pytest.fixture(scope="module")
def official(shared_data):
    return WordleVocabulary.from_files(
        shared_data / "wordle" / "wordle_official.txt", shared_data / "wordle" / "wordle_official_guess.txt"
    )


def test_info_gain_solves_the_official_game(official):
    env = WordleEnv(vocabulary=official, mode="hidden_word")
    returns, guesses = play_games(env, InfoGainPolicy(official), 200)
    solved = returns > -6
    print(
        f"info-gain: solved {solved.mean():.3f}, mean guesses {guesses[solved].mean():.3f}, "
        f"mean return {returns.mean():.3f}"
    )
    assert solved.mean() >= 0.98
    mixture_returns, _ = play_games(env, RandomMixturePolicy(official, prob_smart=0.5, seed=0), 200)
    print(f"random-mixture(0.5): solved {(mixture_returns > -6).mean():.3f}, mean return {mixture_returns.mean():.3f}")
    assert mixture_returns.mean() < returns.mean() - 1.0


@pytest.fixture(scope="module")
def small():
    words = ("crane", "slate", "plumb", "nymph", "there", "hello", "abide", "babes", "about", "house", "world", "spicy")
    return WordleVocabulary.create(words, words + ("zzzzz", "qajaq", "xylyl"))


def test_policies_play_valid_words(small):
    env = WordleEnv(vocabulary=small, mode="hidden_word")
    policies = [
        InfoGainPolicy(small),
        InfoGainPolicy(small, hard_mode=True),
        StartWordPolicy(["slate", "crane"], InfoGainPolicy(small), seed=0),
        RandomPolicy(small, seed=0),
        RandomMixturePolicy(small, 0.8, seed=0),
        WrongWordPolicy(small, seed=0),
        RepeatPolicy(RandomPolicy(small, seed=0), first_n=2, seed=0),
        MonteCarloPolicy(
            small, RandomMixturePolicy(small, 0.5, seed=1), RandomMixturePolicy(small, 0.5, seed=2), 4, 4, seed=0
        ),
    ]
    for policy in policies:
        returns, _ = play_games(env, policy, 5)
        assert ((-6 <= returns) & (returns <= 0)).all(), policy.name
    assert InfoGainPolicy(small, hard_mode=True)(env.reset(seed=0)[0]) in small.answers


def test_policy_behaviours(small):
    env = WordleEnv(vocabulary=small, mode="hidden_word")
    board, _ = env.reset(options={"answer": "house"})
    board, *_ = env.step("about")
    wrong = WrongWordPolicy(small, seed=0)
    for _ in range(20):  # a ruled-out word: the board's feedback excludes it as the answer
        guess = wrong(board)
        assert guess not in small.answers or any(
            pattern_of(w, guess) != text_to_pattern(f) for w, f in parse_board(board)
        )
    assert RepeatPolicy(RandomPolicy(small))(board) == "about"
    assert StartWordPolicy("spicy", RandomPolicy(small))(env.reset()[0]) == "spicy"
    consistent = InfoGainPolicy(small).candidates(board)
    assert [small.answers[i] for i in consistent] == ["house"]
    assert InfoGainPolicy(small)(board) == "house"
    shown = []
    human = HumanPolicy(small, read=lambda prompt: " crane ", show=shown.append)
    assert human(board) == "crane" and shown == [board]


def test_monte_carlo_prefers_the_winning_move(small):
    env = WordleEnv(vocabulary=small, mode="hidden_word")
    board, _ = env.reset(options={"answer": "house"})
    board, *_ = env.step("about")  # only "house" is left
    policy = MonteCarloPolicy(
        small, RandomMixturePolicy(small, 0.3, seed=0), InfoGainPolicy(small), num_proposals=12, num_rollouts=2, seed=0
    )
    assert policy(board) == "house"


@pytest.mark.parametrize("dataset", offline_data.DATASETS)
def test_generated_datasets_replay_exactly(dataset, tmp_path):
    config = offline_data.GenerationConfig(dataset=dataset, num_games=12, seed=3, num_answers=100)
    data = offline_data.generate(config, workers=1, progress=False)
    assert set(data["kind"]) <= {"expert", "mixture", "branch", "adversarial", "suboptimal"}
    env = WordleEnv(vocabulary=config.vocabulary(), mode="hidden_word")
    for row in data:
        observations, rewards = offline_data.replay(row, env)
        assert observations == row["observations"] and np.allclose(rewards, row["rewards"])
        assert row["return"] == pytest.approx(sum(row["rewards"])) and row["dones"][-1] and not any(row["dones"][:-1])
        assert row["env_id"] == "lm_gym/Wordle-v0" and not row["truncated"]
        if row["parent_id"] >= 0:
            parent = data[row["parent_id"]]
            assert (
                parent["kind"] == "expert"
                and row["actions"][: row["branch_turn"]] == parent["actions"][: row["branch_turn"]]
            )
    for path in (tmp_path / "data.parquet", tmp_path / "data.jsonl", tmp_path / "data_dir"):
        loaded = load_trajectories(save_trajectories(data, path))
        assert loaded.to_list() == data.to_list()


def test_generation_does_not_depend_on_the_number_of_workers():
    config = offline_data.GenerationConfig(dataset="mixture", num_games=16, seed=0, num_answers=100)
    assert (
        offline_data.generate(config, workers=1, progress=False).to_list()
        == offline_data.generate(config, workers=2, progress=False).to_list()
    )


def test_expert_data_is_better_than_mixture_data():
    common = dict(num_games=40, seed=0, num_answers=200)
    expert = offline_data.generate(offline_data.GenerationConfig(dataset="expert", **common), progress=False)
    mixture = offline_data.generate(offline_data.GenerationConfig(dataset="mixture", **common), progress=False)
    assert np.mean(expert["return"]) > np.mean(mixture["return"]) + 1.0


def test_terminal_game(monkeypatch, capsys):
    import io

    from lm_gym.tasks.wordle import play

    monkeypatch.setattr("sys.stdin", io.StringIO("crane\n" * 6))
    play.main(["--seed", "0", "--hint"])
    output = capsys.readouterr().out
    assert "(hint: " in output and "the word was" in output
    assert output.count("\ncrane ") >= 1
