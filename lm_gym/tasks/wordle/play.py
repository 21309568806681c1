"""Play Wordle in the terminal: ``python -m lm_gym.tasks.wordle.play [--hint]``."""

from __future__ import annotations

import argparse

from lm_gym.tasks.wordle import WordleEnv, WordleVocabulary, default_vocabulary
from lm_gym.tasks.wordle.policies import HumanPolicy, InfoGainPolicy


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Play lm_gym/Wordle-v0 in the terminal.")
    parser.add_argument("--answers-file")
    parser.add_argument("--guesses-file")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--hint", action="store_true", help="show the information-gain policy's guess")
    args = parser.parse_args(argv)
    vocabulary = (
        default_vocabulary()
        if args.answers_file is None
        else WordleVocabulary.from_files(args.answers_file, args.guesses_file)
    )
    env = WordleEnv(vocabulary=vocabulary, mode="hidden_word")
    hint = InfoGainPolicy(vocabulary) if args.hint else None

    def show(board: str) -> None:
        print("\n" + board + (f"\n(hint: {hint(board)})" if hint else ""))

    player = HumanPolicy(vocabulary, show=show)
    board, _ = env.reset(seed=args.seed)
    total, terminated = 0.0, False
    while not terminated:
        board, reward, terminated, _, info = env.step(player(board))
        total += reward
    print("\n" + board)
    print(
        f"{'solved' if info['metrics']['solved'] else 'not solved'}: the word was {info['answer']!r}; return {total:g}"
    )


if __name__ == "__main__":
    main()
