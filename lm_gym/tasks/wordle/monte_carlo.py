"""A planning Wordle policy: it plays rollouts in a :class:`~lm_gym.tasks.wordle.env.WordleEnv`.

The scripted policies of :mod:`lm_gym.tasks.wordle.policies` read only the board; this one also
simulates games, so it sits above both the env and those policies (the env's demonstrations
use the policies, never this module).
"""

from __future__ import annotations

import numpy as np

from lm_gym.tasks.wordle.board import parse_board
from lm_gym.tasks.wordle.env import WordleEnv
from lm_gym.tasks.wordle.policies import WordlePolicy
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary


class MonteCarloPolicy(WordlePolicy):
    """Pick among ``num_proposals`` guesses of ``proposal_policy`` by rollouts of ``rollout_policy``.

    Each proposal is tried in ``num_rollouts`` simulated games whose hidden word is drawn
    uniformly from the remaining candidates; the proposal with the best mean return wins.
    """

    def __init__(
        self,
        vocabulary: WordleVocabulary,
        proposal_policy: WordlePolicy,
        rollout_policy: WordlePolicy,
        num_proposals: int = 8,
        num_rollouts: int = 8,
        max_guesses: int = 6,
        seed: int | None = None,
    ):
        super().__init__(vocabulary, seed)
        self.proposal_policy, self.rollout_policy = proposal_policy, rollout_policy
        self.num_proposals, self.num_rollouts = num_proposals, num_rollouts
        self.simulator = WordleEnv(vocabulary=vocabulary, mode="hidden_word", max_guesses=max_guesses)
        self.name = f"monte_carlo({proposal_policy.name},{rollout_policy.name})"

    def children(self) -> tuple[WordlePolicy, ...]:
        return (self.proposal_policy, self.rollout_policy)

    def __call__(self, observation: str) -> str:
        proposals = list(dict.fromkeys(self.proposal_policy(observation) for _ in range(self.num_proposals)))
        candidates = self.candidates(observation)
        if len(proposals) == 1 or len(candidates) == 0:
            return proposals[0]
        returns = [
            np.mean([self._rollout(observation, guess, candidates) for _ in range(self.num_rollouts)])
            for guess in proposals
        ]
        return proposals[int(np.argmax(returns))]

    def _rollout(self, observation: str, guess: str, candidates: np.ndarray) -> float:
        answer = self.vocabulary.answers[int(self.rng.choice(candidates))]
        env = self.simulator
        env.reset(options={"answer": answer})
        for line in observation.splitlines()[1:]:  # replay the board so far
            env.step(line.rsplit(" ", 1)[0] if parse_board(line) else "?")
        total, action = 0.0, guess
        while True:
            board, reward, terminated, _, _ = env.step(action)
            total += reward
            if terminated:
                return total
            action = self.rollout_policy(board)
