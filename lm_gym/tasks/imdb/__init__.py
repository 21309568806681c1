"""The IMDB positive-sentiment continuation task."""

from lm_gym.tasks.imdb.env import IMDBEnv

__all__ = ["IMDBEnv"]
