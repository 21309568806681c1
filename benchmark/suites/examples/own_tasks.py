"""Two tasks of your own for the example suite ``own.toml`` beside this file: the harness puts this
folder on its jobs' ``PYTHONPATH``, and the suite's ``"own_tasks:my/SayTheWord-v0"`` imports this
module, which registers the tasks (``docs/your-own-task.md``, ``docs/leaderboard.md``)."""

import lm_gym
from lm_gym.core import TextEnv


class SayTheWord(TextEnv):
    """One turn: the prompt names a word; saying it scores 1 (the metric ``said``)."""

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
    """``turns`` turns: the observation shows a number; saying the next one scores 1 a turn. The
    metric ``said`` is the share of turns said right."""

    def __init__(self, turns: int = 3, render_mode=None):
        super().__init__(max_observation_length=256, max_action_length=16, render_mode=render_mode)
        self.turns = turns

    def _new_episode(self, options):
        self.number, self.turn, self.right = int(self.np_random.integers(10)), 0, 0
        return f"Count from {self.number}:", {}

    def _transition(self, utterance, score):
        said = float(utterance.strip() == str(self.number + 1))
        self.number, self.turn, self.right = self.number + 1, self.turn + 1, self.right + said
        done = self.turn >= self.turns
        info = {"metrics": {"said": self.right / self.turns}} if done else {}
        return f"Next after {self.number}:", said, done, False, info


lm_gym.register("my/SayTheWord-v0", SayTheWord)
lm_gym.register("my/CountUp-v0", CountUp)
