"""The DailyDialog next-utterance task."""

from lm_gym.tasks.dailydialog.env import DailyDialogEnv

__all__ = ["DailyDialogEnv"]
