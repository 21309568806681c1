"""A task for the server's tests, registered the way a user registers one (served as
``serve_tasks:serve_test/Counting-v0``): its batched reward counts its calls, raises for the
utterance ``"boom"`` and sleeps for ``"slow"``."""

from __future__ import annotations

import threading
import time

import lm_gym
from lm_gym.core.text_env import Sample, SingleTurnTextEnv

CALLS: list[int] = []  # the batch size of each reward call
_lock = threading.Lock()


def counting_reward(prompts, utterances, references, metas):
    with _lock:
        CALLS.append(len(utterances))
    if "boom" in utterances:
        raise RuntimeError("the reward model broke")
    if "slow" in utterances:
        time.sleep(0.5)
    return [float(len(u)) for u in utterances]


class Counting(SingleTurnTextEnv):
    """Eight prompts; the reward is the reply's length."""

    def __init__(self, render_mode=None):
        super().__init__(max_observation_length=64, max_action_length=16, render_mode=render_mode)
        self.samples = [Sample(f"prompt {i}", (f"ref {i}",), {}) for i in range(8)]
        self.reward_fn = counting_reward


def register() -> None:
    """Register the task (again, after a test module removed it)."""
    lm_gym.register("serve_test/Counting-v0", "serve_tasks:Counting")


register()
