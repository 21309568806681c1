"""Tasks written the way a user writes them, registered with ``lm_gym.register``: the contract
suite runs over them beside the built-in tasks (``contract/contract_episodes`` imports this
module), and the baselines, the TRL integration and the harness are tried on them.

Only the public API: ``TextEnv`` / ``SingleTurnTextEnv`` and their hooks, ``lm_gym.register``.
"""

from __future__ import annotations

import lm_gym
from lm_gym.core import TextEnv
from lm_gym.core.text_env import Sample, SingleTurnTextEnv
from lm_gym.core.validation import check_int


class SayTheWord(TextEnv):
    """One step: the observation names a word; the reward is 1 when the reply contains it."""

    WORDS = ("apple", "river", "stone", "cloud")

    def __init__(self, render_mode=None):
        super().__init__(max_observation_length=64, max_action_length=32, render_mode=render_mode)

    def _new_episode(self, options):
        self.word = self.WORDS[self.np_random.integers(len(self.WORDS))]
        return f"Say {self.word}.", {}

    def _transition(self, utterance, score):
        said = float(self.word in utterance.lower())
        return f"Say {self.word}. {utterance}", said, True, False, {"metrics": {"said": said}}


class CountUp(TextEnv):
    """``turns`` turns: the observation shows a number; saying the next one scores 1 a turn."""

    def __init__(self, turns: int = 3, render_mode=None):
        super().__init__(max_observation_length=128, max_action_length=32, render_mode=render_mode)
        self.turns = check_int("turns", turns, 1, 100)  # the contract's fuzz sends junk constructor arguments

    def _new_episode(self, options):
        self.number, self.turn, self.hits = int(self.np_random.integers(10)), 0, 0
        return f"Count on from {self.number}:", {}

    def _transition(self, utterance, score):
        hit = utterance.strip() == str(self.number + 1)
        self.number, self.turn, self.hits = self.number + 1, self.turn + 1, self.hits + hit
        done = self.turn >= self.turns
        info = {"metrics": {"hits": float(self.hits)}} if done else {}
        return f"Count on from {self.number}:", float(hit), done, False, info


def _length_reward(prompts, utterances, references, metas):
    """A batched reward model of the text: closeness of the reply's length to the reference's."""
    return [1.0 / (1.0 + abs(len(u) - len(r[0]))) for u, r in zip(utterances, references)]


class Echo(SingleTurnTextEnv):
    """A single-turn task over a fixed sample list with a batched reward model."""

    def __init__(self, num_samples: int = 16, render_mode=None):
        super().__init__(max_observation_length=64, max_action_length=64, render_mode=render_mode)
        count = check_int("num_samples", num_samples, 1, 1000)
        self.samples = [Sample(f"Repeat: word{i}", (f"word{i}",), {"i": i}) for i in range(count)]
        self.reward_fn = _length_reward


lm_gym.register("user/SayTheWord-v0", SayTheWord)
lm_gym.register("user/CountUp-v0", CountUp, turns=3)
lm_gym.register("user/Echo-v0", "user_tasks:Echo")
