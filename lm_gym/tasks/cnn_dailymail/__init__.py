"""The CNN/DailyMail news summarization task."""

from lm_gym.tasks.cnn_dailymail.env import CNNDailyMailEnv

__all__ = ["CNNDailyMailEnv"]
