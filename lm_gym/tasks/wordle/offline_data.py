"""Offline Wordle datasets: games of scripted policies, saved with Hugging Face ``datasets``.

Generate from the command line (``python -m lm_gym.tasks.wordle.offline_data --help``) or
with :func:`generate`. Every game is played in ``hidden_word`` mode; the hidden word and
the policies' random numbers of game ``i`` derive from ``(seed, i)`` alone, so the output
does not depend on the number of worker processes.

Datasets (``--dataset``), after the ILQL code base's data scripts:

* ``expert``: games of the information-gain policy.
* ``mixture``: games of ``RandomMixturePolicy(prob_smart)``.
* ``branching``: each expert game, plus ``branches`` games per non-terminal state of it
  that copy the expert's guesses up to that state and continue with ``branch_policy``
  (default ``wrong_word``, as the ILQL "expert branch" data). Unlike the ILQL script,
  whose branch rollouts restart from an empty board, a branch really continues the game.
* ``adversarial`` (ILQL paper, section 5): each expert game; when it lasts at least three
  guesses, ``branches`` adversarial games that copy the expert's first two guesses and then
  repeat one of them (``RepeatPolicy(first_n=2)``), so the third-turn state is seen with
  both the expert's action and a useless one; plus ``branches`` suboptimal games from the
  empty board (``RandomMixturePolicy(prob_smart)``).

Rows are trajectories in the format of :mod:`lm_gym.offline` (``env_id`` is
``lm_gym/Wordle-v0``, ``truncated`` is False: a game ends by being solved or by its last
guess), one per game, with Wordle's metadata columns (:func:`metadata_features`):

===============  ==================  ==========================================================
field            type                meaning
===============  ==================  ==========================================================
``game_id``      int64               row id
``kind``         string              ``expert``, ``mixture``, ``branch``, ``adversarial`` or ``suboptimal``
``policy``       string              the policy that chose the actions (after the branch point)
``answer``       string              the hidden word
``solved``       bool                the last guess was all green
``num_guesses``  int32               number of guesses
``parent_id``    int64               branch/adversarial games: the expert game they leave, else -1
``branch_turn``  int32               branch/adversarial games: guesses copied from the parent, else -1
===============  ==================  ==========================================================

The core columns hold the boards before each guess (``observations``), the guesses
(``actions``), their rewards, ``dones`` (True on the last guess) and ``return``.
Save and load them with :func:`lm_gym.offline.save_trajectories` and
:func:`lm_gym.offline.load_trajectories`.

Replaying ``actions`` in ``WordleEnv(mode="hidden_word")`` reset with
``options={"answer": answer}`` reproduces ``observations`` and ``rewards`` (see :func:`replay`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
from dataclasses import dataclass
from typing import Any

import numpy as np

from lm_gym.core.errors import ConfigurationError, safe_repr
from lm_gym.core.text_env import play_actions
from lm_gym.offline import save_trajectories, trajectories_from_rows
from lm_gym.tasks.offline_episodes import record_episode
from lm_gym.tasks.wordle.env import WordleEnv
from lm_gym.tasks.wordle.policies import (
    InfoGainPolicy,
    RandomMixturePolicy,
    RepeatPolicy,
    WordlePolicy,
    WrongWordPolicy,
)
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary, default_vocabulary

ENV_ID = "lm_gym/Wordle-v0"
DATASETS = ("expert", "mixture", "branching", "adversarial")
BRANCH_POLICIES = ("wrong_word", "mixture")


def metadata_features() -> dict[str, Any]:
    """The ``datasets`` features of the Wordle columns beyond the core trajectory columns."""
    import datasets

    return {
        "game_id": datasets.Value("int64"),
        "kind": datasets.Value("string"),
        "policy": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "solved": datasets.Value("bool"),
        "num_guesses": datasets.Value("int32"),
        "parent_id": datasets.Value("int64"),
        "branch_turn": datasets.Value("int32"),
    }


@dataclass(frozen=True)
class GenerationConfig:
    """What to generate; see :func:`generate`."""

    dataset: str
    num_games: int
    seed: int = 0
    answers_file: str | None = None
    guesses_file: str | None = None
    num_answers: int | None = None
    prob_smart: float = 0.5
    branches: int = 1
    branch_policy: str = "wrong_word"

    def vocabulary(self) -> WordleVocabulary:
        vocabulary = (
            default_vocabulary()
            if self.answers_file is None
            else WordleVocabulary.from_files(self.answers_file, self.guesses_file)
        )
        return vocabulary if self.num_answers is None else vocabulary.subset(self.num_answers)


def play_game(env: WordleEnv, policy: WordlePolicy, answer: str, prefix: list[str] = ()) -> dict[str, Any]:
    """One game against ``answer``: the ``prefix`` guesses first, then ``policy``'s."""

    def choose(observation: str, turn: int) -> str:
        return prefix[turn] if turn < len(prefix) else policy(observation)

    row, info = record_episode(env, ENV_ID, choose, {"answer": answer})
    metrics = info["metrics"]
    row.update(answer=answer, policy=policy.name, solved=bool(metrics["solved"]), num_guesses=metrics["num_guesses"])
    return row


class _Generator:
    """Plays the games of one config; built once per worker process."""

    def __init__(self, config: GenerationConfig):
        self.config = config
        vocabulary = config.vocabulary()
        self.env = WordleEnv(vocabulary=vocabulary, mode="hidden_word")
        self.answers = vocabulary.answers
        self.expert = InfoGainPolicy(vocabulary)
        self.mixture = RandomMixturePolicy(vocabulary, config.prob_smart)
        self.branch = WrongWordPolicy(vocabulary) if config.branch_policy == "wrong_word" else self.mixture
        self.adversary = RepeatPolicy(self.expert, first_n=2)

    def games(self, game_id: int) -> list[dict[str, Any]]:
        """The rows of game ``game_id``: the first is the main game, the others leave it."""
        rng = np.random.default_rng([self.config.seed, game_id])
        for policy in (self.mixture, self.branch, self.adversary):
            policy.seed(int(rng.integers(2**63)))
        answer = self.answers[int(rng.integers(len(self.answers)))]
        dataset = self.config.dataset
        if dataset == "mixture":
            return [self._game("mixture", self.mixture, answer)]
        expert = self._game("expert", self.expert, answer)
        rows = [expert]
        if dataset == "branching":
            for turn in range(len(expert["actions"])):
                rows += [self._game("branch", self.branch, answer, expert, turn) for _ in range(self.config.branches)]
        elif dataset == "adversarial":
            if len(expert["actions"]) >= 3:
                rows += [
                    self._game("adversarial", self.adversary, answer, expert, 2) for _ in range(self.config.branches)
                ]
            rows += [self._game("suboptimal", self.mixture, answer) for _ in range(self.config.branches)]
        return rows

    def _game(
        self, kind: str, policy: WordlePolicy, answer: str, parent: dict | None = None, turn: int = -1
    ) -> dict[str, Any]:
        prefix = parent["actions"][:turn] if parent else []
        row = play_game(self.env, policy, answer, prefix)
        row.update(kind=kind, branch_turn=turn, parent_id=-2 if parent else -1)  # -2: the main game, set in generate()
        return row


_worker: _Generator | None = None


def _init_worker(config: GenerationConfig) -> None:
    global _worker
    _worker = _Generator(config)


def _play(game_id: int) -> list[dict[str, Any]]:
    return _worker.games(game_id)


def generate(config: GenerationConfig, workers: int = 1, progress: bool = True):
    """Play ``config.num_games`` games in ``workers`` processes; returns a ``datasets.Dataset`` of trajectories."""
    from tqdm.auto import tqdm

    if config.dataset not in DATASETS:
        raise ConfigurationError(f"dataset must be one of {DATASETS}, got {safe_repr(config.dataset)}")
    if config.branch_policy not in BRANCH_POLICIES:
        raise ConfigurationError(
            f"branch_policy must be one of {BRANCH_POLICIES}, got {safe_repr(config.branch_policy)}"
        )
    if config.num_games < 1 or workers < 1:
        raise ConfigurationError(f"num_games and workers must be positive, got {config.num_games} and {workers}")
    with tqdm(total=config.num_games, desc=f"wordle {config.dataset}", unit="game", disable=not progress) as bar:
        if workers == 1:
            _init_worker(config)
            per_game = []
            for game_id in range(config.num_games):
                per_game.append(_play(game_id))
                bar.update()
        else:
            with concurrent.futures.ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(config,)) as pool:
                per_game = []
                for rows in pool.map(
                    _play, range(config.num_games), chunksize=max(1, config.num_games // (workers * 16))
                ):
                    per_game.append(rows)
                    bar.update()
    rows = []
    for game_rows in per_game:
        first_id = len(rows)
        for row in game_rows:
            if row["parent_id"] == -2:
                row["parent_id"] = first_id
            rows.append({**row, "game_id": len(rows)})
    return trajectories_from_rows(rows, metadata_features())


def replay(row: dict[str, Any], env: WordleEnv) -> tuple[list[str], list[float]]:
    """The observations and rewards of replaying ``row["actions"]`` in ``env`` (``hidden_word`` mode)."""
    return play_actions(env, row["actions"], {"answer": row["answer"]})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Generate an offline Wordle dataset of scripted-policy games.")
    parser.add_argument("--dataset", choices=DATASETS, required=True, help="which games (the module's docstring)")
    parser.add_argument("--num-games", type=int, required=True, help="games to play")
    parser.add_argument("--out", required=True, help="output: .parquet, .jsonl, or a directory (save_to_disk)")
    parser.add_argument("--seed", type=int, default=0, help="the games' answers and the policies' draws")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--answers-file", help="answer list (default: the offline default vocabulary)")
    parser.add_argument("--guesses-file", help="allowed-guess list")
    parser.add_argument("--num-answers", type=int, help="seeded subset of the answers (e.g. 200, 400, 800)")
    parser.add_argument("--prob-smart", type=float, default=0.5, help="mixture policy: P(guess a remaining candidate)")
    parser.add_argument("--branches", type=int, default=1, help="branching/adversarial: games per branch point")
    parser.add_argument(
        "--branch-policy",
        choices=BRANCH_POLICIES,
        default="wrong_word",
        help="branching/adversarial: the branches' policy",
    )
    args = parser.parse_args(argv)
    config = GenerationConfig(
        dataset=args.dataset,
        num_games=args.num_games,
        seed=args.seed,
        answers_file=args.answers_file,
        guesses_file=args.guesses_file,
        num_answers=args.num_answers,
        prob_smart=args.prob_smart,
        branches=args.branches,
        branch_policy=args.branch_policy,
    )
    dataset = generate(config, workers=args.workers)
    path = save_trajectories(dataset, args.out)
    print(
        f"{len(dataset)} trajectories, mean return {np.mean(dataset['return']):.3f}, "
        f"solve rate {np.mean(dataset['solved']):.3f} -> {path}"
    )


if __name__ == "__main__":
    main()
