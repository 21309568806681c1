"""Wordle throughput: env steps/s and games/s for random and random-mixture play, and
information-gain policy moves/s, on a 2,315-answer list.

    python benchmark/wordle_throughput.py                      # the offline default vocabulary
    python benchmark/wordle_throughput.py --answers-file ../shared/data/wordle/wordle_official.txt \\
        --guesses-file ../shared/data/wordle/wordle_official_guess.txt

For reference, the ILQL and LMRL-Gym implementations re-filter the whole word list at every
state: about 60 env steps/s on this kind of machine, and seconds to minutes per
information-gain move on the full list.
"""

from __future__ import annotations

import argparse
import time

from lm_gym.tasks.wordle import WordleEnv, WordleVocabulary, default_vocabulary
from lm_gym.tasks.wordle.policies import InfoGainPolicy, RandomMixturePolicy, RandomPolicy

ILQL_STEPS_PER_S = 60.0


def play(env: WordleEnv, policy, num_games: int) -> tuple[float, float, float]:
    """Env steps/s (policy time excluded), games/s and policy moves/s (with env time)."""
    env_time = policy_time = 0.0
    steps = 0
    start = time.perf_counter()
    for game in range(num_games):
        board, _ = env.reset(seed=game)
        terminated = False
        while not terminated:
            t0 = time.perf_counter()
            guess = policy(board)
            t1 = time.perf_counter()
            board, _, terminated, _, _ = env.step(guess)
            env_time += time.perf_counter() - t1
            policy_time += t1 - t0
            steps += 1
    total = time.perf_counter() - start
    return steps / env_time, num_games / total, steps / policy_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers-file")
    parser.add_argument("--guesses-file")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--info-gain-games", type=int, default=200)
    args = parser.parse_args()
    vocabulary = (
        default_vocabulary()
        if args.answers_file is None
        else WordleVocabulary.from_files(args.answers_file, args.guesses_file)
    )
    env = WordleEnv(vocabulary=vocabulary)  # builds (or loads) the feedback table first
    print(f"{len(vocabulary.answers)} answers, {len(vocabulary.guesses)} allowed guesses, mode={env.mode!r}")
    print(f"{'policy':<24}{'env steps/s':>14}{'games/s':>12}{'policy moves/s':>16}{'vs ILQL env':>13}")
    rows = [
        ("random", RandomPolicy(vocabulary, seed=0), args.games),
        ("random_mixture(0.5)", RandomMixturePolicy(vocabulary, 0.5, seed=0), args.games),
        ("info_gain (cold cache)", InfoGainPolicy(vocabulary), args.info_gain_games),
    ]
    for name, policy, games in rows:
        steps_per_s, games_per_s, moves_per_s = play(env, policy, games)
        print(
            f"{name:<24}{steps_per_s:>14,.0f}{games_per_s:>12,.1f}{moves_per_s:>16,.1f}"
            f"{steps_per_s / ILQL_STEPS_PER_S:>12,.0f}x"
        )
    info_gain = InfoGainPolicy(vocabulary)
    start = time.perf_counter()
    info_gain(env.reset(seed=0)[0])
    print(f"info_gain first move on the full list, uncached: {1000 * (time.perf_counter() - start):.0f} ms")


if __name__ == "__main__":
    main()
